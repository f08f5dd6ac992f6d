//! The inside of a simulated VM as its QEMU guest agent sees it: a Debian
//! 12 guest with a small, nearly full root filesystem, a few files and the
//! processes `guest-exec` started. A VM's [`GuestOs`] is seeded the first
//! time an agent call needs it ([`crate::state::Cluster::guest_os_mut`]),
//! so only VMs an agent call touched carry any state; it stays with the
//! vmid when the VM migrates, as a disk would.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::seed::{GIB, T0};
use crate::state::Guest;

const MIB: u64 = 1024 * 1024;

/// A mounted block-device filesystem, as `guest-get-fsinfo` lists it.
pub(crate) struct Mount {
    /// Kernel device name (`sda2`), `name` in get-fsinfo.
    pub name: &'static str,
    pub mountpoint: &'static str,
    pub fstype: &'static str,
    pub total: u64,
    pub used: u64,
    /// SCSI unit of the partition's disk (the VM's `scsi0`).
    pub unit: u32,
}

/// The guest's block-device mounts in `/proc/self/mountinfo` order: `/` is
/// 4 GiB and 95 % full, so "the disk is filling up" is there to find.
pub(crate) const MOUNTS: &[Mount] = &[
    Mount {
        name: "sda2",
        mountpoint: "/",
        fstype: "ext4",
        total: 4 * GIB - 64 * MIB,
        used: 4_001_366_016,
        unit: 0,
    },
    Mount {
        name: "sda1",
        mountpoint: "/boot",
        fstype: "ext4",
        total: 470 * MIB,
        used: 60_817_408,
        unit: 0,
    },
];

/// Virtual filesystems `df` also shows (qemu-ga's get-fsinfo skips them):
/// `(source, mountpoint, total, used)`.
pub(crate) const VIRTUAL_MOUNTS: &[(&str, &str, u64, u64)] = &[
    ("udev", "/dev", 979 * MIB, 0),
    ("tmpfs", "/run", 198 * MIB, 593_920),
    ("tmpfs", "/dev/shm", 988 * MIB, 0),
    ("tmpfs", "/run/lock", 5 * MIB, 0),
];

/// A systemd unit `systemctl status` knows: `(name, description, running,
/// main pid, binary)`. A unit that is not running exits 3, like systemctl.
pub(crate) const UNITS: &[(&str, &str, bool, u32, &str)] = &[
    (
        "nginx",
        "A high performance web server and a reverse proxy server",
        true,
        812,
        "nginx: master process /usr/sbin/nginx -g daemon on; master_process on;",
    ),
    (
        "ssh",
        "OpenBSD Secure Shell server",
        true,
        655,
        "sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups",
    ),
    (
        "qemu-guest-agent",
        "QEMU Guest Agent",
        true,
        421,
        "/usr/sbin/qemu-ga",
    ),
    (
        "cron",
        "Regular background program processing daemon",
        true,
        598,
        "/usr/sbin/cron -f",
    ),
    ("postfix", "Postfix Mail Transport Agent", false, 0, ""),
];

/// `/etc/os-release` of the seeded guests (Debian 12).
pub(crate) const OS_RELEASE: &str = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n\
NAME=\"Debian GNU/Linux\"\n\
VERSION_ID=\"12\"\n\
VERSION=\"12 (bookworm)\"\n\
VERSION_CODENAME=bookworm\n\
ID=debian\n\
HOME_URL=\"https://www.debian.org/\"\n\
SUPPORT_URL=\"https://www.debian.org/support\"\n\
BUG_REPORT_URL=\"https://bugs.debian.org/\"\n";

/// The guest kernel, as `uname` and get-osinfo report it.
pub(crate) const KERNEL_RELEASE: &str = "6.1.0-27-amd64";
/// The guest kernel's build string.
pub(crate) const KERNEL_VERSION: &str = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.115-1 (2024-11-01)";

/// Lines in the seeded `/var/log/syslog`.
pub(crate) const SYSLOG_LINES: usize = 2_000;

/// A process `guest-exec` started. Its whole run is decided at exec time;
/// it "exits" once `runs_for` has passed since `started`.
#[derive(Debug, Clone)]
pub(crate) struct Proc {
    pub started: Instant,
    pub runs_for: Duration,
    pub exitcode: i32,
    pub out: Vec<u8>,
    pub err: Vec<u8>,
    pub out_truncated: bool,
    pub err_truncated: bool,
}

impl Proc {
    /// Whether the process has ended by now.
    pub fn exited(&self) -> bool {
        self.started.elapsed() >= self.runs_for
    }
}

/// One VM's inside.
#[derive(Debug, Clone)]
pub(crate) struct GuestOs {
    pub hostname: String,
    /// Regular files by absolute path.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Processes started by `guest-exec` whose status was not yet collected.
    pub procs: BTreeMap<i64, Proc>,
    next_pid: i64,
}

impl GuestOs {
    /// The seeded inside of `g`.
    pub fn seed(g: &Guest) -> GuestOs {
        let hostname = hostname(g);
        let mut files = BTreeMap::new();
        let mut add = |path: &str, content: Vec<u8>| {
            files.insert(path.to_string(), content);
        };
        add("/etc/hostname", format!("{hostname}\n").into_bytes());
        add("/etc/os-release", OS_RELEASE.as_bytes().to_vec());
        add(
            "/etc/shadow",
            b"root:$y$j9T$Jx1d0SIMULATEDxx$Q3VmZmFrZWhhc2hub3RyZWFsbHlhaGFzaA:20400:0:99999:7:::\n\
daemon:*:20400:0:99999:7:::\n\
sshd:!:20400::::::\n\
debian:$y$j9T$k2PfSIMULATEDyy$bm90YXJlYWxoYXNoZWl0aGVyanVzdGZha2U:20400:0:99999:7:::\n"
                .to_vec(),
        );
        add(
            "/etc/passwd",
            b"root:x:0:0:root:/root:/bin/bash\n\
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n\
sshd:x:100:65534::/run/sshd:/usr/sbin/nologin\n\
debian:x:1000:1000:Debian:/home/debian:/bin/bash\n"
                .to_vec(),
        );
        add("/var/log/syslog", syslog(&hostname).into_bytes());
        add("/usr/bin/tool", tool_binary());
        GuestOs {
            hostname,
            files,
            procs: BTreeMap::new(),
            next_pid: 2_000 + i64::from(g.vmid % 100) * 10,
        }
    }

    /// Registers a started process and returns its fresh pid.
    pub fn spawn(&mut self, p: Proc) -> i64 {
        self.next_pid += 1;
        self.procs.insert(self.next_pid, p);
        self.next_pid
    }

    /// Whether `dir` exists: `/`, a few standard directories and every
    /// parent of a file.
    pub fn dir_exists(&self, dir: &str) -> bool {
        const STANDARD: &[&str] = &["/", "/tmp", "/root", "/home", "/home/debian", "/var/tmp"];
        STANDARD.contains(&dir)
            || self.files.keys().any(|f| {
                f.strip_prefix(dir)
                    .is_some_and(|rest| rest.starts_with('/'))
            })
    }
}

/// The guest's host name: its VM name, or `vm<id>` without one.
pub(crate) fn hostname(g: &Guest) -> String {
    match &g.name {
        Some(n) => n.clone(),
        None => format!("vm{}", g.vmid),
    }
}

/// A syslog of [`SYSLOG_LINES`] lines, one every 30 s up to the seed's
/// "last night".
fn syslog(host: &str) -> String {
    const MSGS: &[&str] = &[
        "systemd[1]: Starting logrotate.service - Rotate log files...",
        "systemd[1]: logrotate.service: Deactivated successfully.",
        "CRON[4242]: (root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)",
        "nginx[812]: 2026/11/27 10:00:00 [warn] 813#813: *1 upstream response is buffered to a temporary file",
        "kernel: EXT4-fs warning (device sda2): ext4_dx_add_entry: Directory index full!",
        "qemu-ga[421]: info: guest-ping called",
    ];
    let start = T0 - SYSLOG_LINES as u64 * 30;
    let mut out = String::with_capacity(SYSLOG_LINES * 100);
    for i in 0..SYSLOG_LINES {
        let (_, m, d, h, mi, s) = crate::util::civil(start + i as u64 * 30);
        let month = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ][m as usize - 1];
        out.push_str(&format!(
            "{month} {d:>2} {h:02}:{mi:02}:{s:02} {host} {}\n",
            MSGS[i % MSGS.len()]
        ));
    }
    out
}

/// The start of an ELF executable: not UTF-8, with NULs and high bytes.
fn tool_binary() -> Vec<u8> {
    let mut v = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00\x3e\x00".to_vec();
    v.extend((0..=255u8).rev());
    v.extend_from_slice(b"\xff\xfe\xc3\x28tool 1.0\x00");
    v
}
