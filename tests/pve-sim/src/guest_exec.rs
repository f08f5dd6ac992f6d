//! The programs `guest-exec` can run inside a simulated VM: a tiny,
//! deterministic interpreter over argv. Nothing runs for real; a
//! program's whole output and exit code are decided when it starts, and
//! only `sleep` (and `yes`, which never ends) take wall time.
//!
//! | argv | stdout | exit |
//! |---|---|---|
//! | `true` / `false` | | 0 / 1 |
//! | `echo [-n] ARGS` | the arguments | 0 |
//! | `cat` | `input-data` | 0 |
//! | `cat FILE...` | the files (missing: stderr `cat: F: No such file or directory`) | 0 / 1 |
//! | `sleep N` | | 0 after N seconds |
//! | `seq [FIRST] LAST` | one number a line (cut at [`OUTPUT_CAP`]) | 0 |
//! | `yes [WORD]` | `y` lines up to [`OUTPUT_CAP`], truncated | never exits |
//! | `df [-h]` | the seeded mounts | 0 |
//! | `systemctl status UNIT` | the unit's status block | 0 running, 3 stopped, 4 unknown (stderr `Unit x.service could not be found.`) |
//! | `journalctl ...` | five lines | 0 |
//! | `id`, `hostname`, `uname [-a|-r|-n]` | as on Debian 12, as root | 0 |
//! | `sh`/`bash`/`dash -c SCRIPT` | SCRIPT's words run as argv; shell syntax (`|;&<>$` and backquotes) is not simulated: exit 2 | |
//!
//! Programs may be named by path under `/bin`, `/usr/bin`, `/sbin`,
//! `/usr/sbin`. Anything else cannot be spawned ([`run`] gives `None`).

use std::time::Duration;

use crate::guest_os::{
    GuestOs, KERNEL_RELEASE, KERNEL_VERSION, MOUNTS, Proc, UNITS, VIRTUAL_MOUNTS,
};
use crate::seed::T0;

/// How much of stdout and of stderr the simulated agent keeps. Real
/// qemu-ga keeps 16 MiB (`GUEST_EXEC_MAX_OUTPUT`); the simulator keeps 1
/// MiB so a test can reach the cut cheaply. Beyond it `out-truncated`
/// (`err-truncated`) is set.
pub const OUTPUT_CAP: usize = 1024 * 1024;

/// What a started program will have done.
struct Run {
    out: Vec<u8>,
    err: Vec<u8>,
    code: i32,
    runs_for: Duration,
}

impl Run {
    fn ok(out: impl Into<Vec<u8>>) -> Run {
        Run {
            out: out.into(),
            err: Vec::new(),
            code: 0,
            runs_for: Duration::ZERO,
        }
    }

    fn fail(code: i32, err: impl Into<Vec<u8>>) -> Run {
        Run {
            out: Vec::new(),
            err: err.into(),
            code,
            runs_for: Duration::ZERO,
        }
    }
}

/// Starts `argv` in `os`: the process as the agent tracks it, or `None`
/// when there is no such program (qemu-ga's spawn fails).
pub(crate) fn run(os: &GuestOs, argv: &[String], input: Option<&[u8]>) -> Option<Proc> {
    let r = interpret(os, argv, input, 0)?;
    let (out, out_truncated) = cap(r.out);
    let (err, err_truncated) = cap(r.err);
    Some(Proc {
        started: std::time::Instant::now(),
        runs_for: r.runs_for,
        exitcode: r.code,
        out,
        err,
        out_truncated,
        err_truncated,
    })
}

fn cap(mut v: Vec<u8>) -> (Vec<u8>, bool) {
    let cut = v.len() > OUTPUT_CAP;
    v.truncate(OUTPUT_CAP);
    (v, cut)
}

fn program(path: &str) -> &str {
    for dir in ["/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/"] {
        if let Some(name) = path.strip_prefix(dir) {
            return name;
        }
    }
    path
}

fn interpret(os: &GuestOs, argv: &[String], input: Option<&[u8]>, depth: u8) -> Option<Run> {
    let (prog, args) = argv.split_first()?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = match program(prog) {
        "true" => Run::ok(""),
        "false" => Run::fail(1, ""),
        "echo" => echo(&args),
        "cat" => cat(os, &args, input),
        "sleep" => sleep(&args),
        "seq" => seq(&args),
        "yes" => yes(&args),
        "df" => Run::ok(df(args.contains(&"-h"))),
        "systemctl" => systemctl(&args),
        "journalctl" => Run::ok(journal(&os.hostname)),
        "id" => Run::ok("uid=0(root) gid=0(root) groups=0(root)\n"),
        "hostname" => Run::ok(format!("{}\n", os.hostname)),
        "uname" => uname(&os.hostname, &args),
        "sh" | "bash" | "dash" if depth == 0 => shell(os, prog, &args, input)?,
        _ => return None,
    };
    Some(run)
}

fn echo(args: &[&str]) -> Run {
    match args.split_first() {
        Some((&"-n", rest)) => Run::ok(rest.join(" ")),
        _ => Run::ok(format!("{}\n", args.join(" "))),
    }
}

fn cat(os: &GuestOs, args: &[&str], input: Option<&[u8]>) -> Run {
    if args.is_empty() {
        return Run::ok(input.unwrap_or_default());
    }
    let mut r = Run::ok("");
    for f in args {
        match os.files.get(*f) {
            Some(data) => r.out.extend_from_slice(data),
            None => {
                r.err
                    .extend_from_slice(format!("cat: {f}: No such file or directory\n").as_bytes());
                r.code = 1;
            }
        }
    }
    r
}

fn sleep(args: &[&str]) -> Run {
    let Some(arg) = args.first() else {
        return Run::fail(
            1,
            "sleep: missing operand\nTry 'sleep --help' for more information.\n",
        );
    };
    match arg.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Run {
            runs_for: Duration::from_secs_f64(secs.min(1e9)),
            ..Run::ok("")
        },
        _ => Run::fail(
            1,
            format!(
                "sleep: invalid time interval '{arg}'\nTry 'sleep --help' for more information.\n"
            ),
        ),
    }
}

fn seq(args: &[&str]) -> Run {
    let nums: Option<Vec<i64>> = args.iter().map(|a| a.parse().ok()).collect();
    let (first, last) = match nums.as_deref() {
        Some([last]) => (1, *last),
        Some([first, last]) => (*first, *last),
        _ => {
            return Run::fail(
                1,
                "seq: missing operand\nTry 'seq --help' for more information.\n",
            );
        }
    };
    let mut out = String::new();
    let mut i = first;
    // Past the cap the rest would be cut anyway.
    while i <= last && out.len() <= OUTPUT_CAP {
        out.push_str(&i.to_string());
        out.push('\n');
        i += 1;
    }
    Run::ok(out)
}

fn yes(args: &[&str]) -> Run {
    let line = format!(
        "{}\n",
        if args.is_empty() {
            "y".to_string()
        } else {
            args.join(" ")
        }
    );
    let out = line.repeat(OUTPUT_CAP / line.len() + 1);
    Run {
        runs_for: Duration::MAX,
        ..Run::ok(out)
    }
}

/// coreutils' `-h` sizes: powers of 1024, rounded up, one decimal below 10.
fn human(bytes: u64) -> String {
    if bytes == 0 {
        return "0".into();
    }
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < 4 {
        v /= 1024.0;
        unit += 1;
    }
    let suffix = ["", "K", "M", "G", "T"][unit];
    if v < 10.0 && unit > 0 {
        let t = (v * 10.0).ceil() / 10.0;
        if t < 10.0 {
            return format!("{t:.1}{suffix}");
        }
    }
    format!("{}{suffix}", v.ceil() as u64)
}

/// Columns as `df` aligns them: the first and last left, the rest right,
/// each at least as wide as coreutils' minimum for it.
fn table(rows: &[Vec<String>]) -> String {
    const MIN: [usize; 6] = [14, 5, 5, 5, 4, 0];
    let cols = rows[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r[c].len())
                .max()
                .unwrap_or(0)
                .max(MIN[c])
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c > 0 {
                line.push(' ');
            }
            if c == 0 || c == cols - 1 {
                line.push_str(&format!("{cell:<w$}", w = widths[c]));
            } else {
                line.push_str(&format!("{cell:>w$}", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn df(human_sizes: bool) -> String {
    let size = |b: u64| {
        if human_sizes {
            human(b)
        } else {
            (b / 1024).to_string()
        }
    };
    let head = if human_sizes { "Size" } else { "1K-blocks" };
    let mut rows = vec![
        ["Filesystem", head, "Used", "Avail", "Use%", "Mounted on"]
            .map(String::from)
            .to_vec(),
    ];
    let mut add = |src: String, mp: &str, total: u64, used: u64| {
        let avail = total - used;
        let pct = if total == 0 {
            "-".to_string()
        } else {
            format!("{}%", (used * 100).div_ceil(total))
        };
        rows.push(vec![
            src,
            size(total),
            size(used),
            size(avail),
            pct,
            mp.to_string(),
        ]);
    };
    let (dev, run, shm, lock) = (
        &VIRTUAL_MOUNTS[0],
        &VIRTUAL_MOUNTS[1],
        &VIRTUAL_MOUNTS[2],
        &VIRTUAL_MOUNTS[3],
    );
    add(dev.0.into(), dev.1, dev.2, dev.3);
    add(run.0.into(), run.1, run.2, run.3);
    add(
        format!("/dev/{}", MOUNTS[0].name),
        MOUNTS[0].mountpoint,
        MOUNTS[0].total,
        MOUNTS[0].used,
    );
    add(shm.0.into(), shm.1, shm.2, shm.3);
    add(lock.0.into(), lock.1, lock.2, lock.3);
    add(
        format!("/dev/{}", MOUNTS[1].name),
        MOUNTS[1].mountpoint,
        MOUNTS[1].total,
        MOUNTS[1].used,
    );
    table(&rows)
}

fn systemctl(args: &[&str]) -> Run {
    let (Some(&"status"), Some(unit)) = (args.first(), args.get(1)) else {
        return Run::fail(1, "pve-sim: only 'systemctl status UNIT' is simulated\n");
    };
    let name = unit.strip_suffix(".service").unwrap_or(unit);
    let Some(&(_, desc, running, pid, cmd)) = UNITS.iter().find(|u| u.0 == name) else {
        return Run::fail(4, format!("Unit {name}.service could not be found.\n"));
    };
    let since = crate::util::ctime(T0 - 21 * 86_400 + 3_723);
    let loaded = format!(
        "     Loaded: loaded (/lib/systemd/system/{name}.service; enabled; preset: enabled)\n"
    );
    if !running {
        return Run {
            code: 3,
            ..Run::ok(format!(
                "○ {name}.service - {desc}\n{loaded}     Active: inactive (dead)\n"
            ))
        };
    }
    Run::ok(format!(
        "● {name}.service - {desc}\n{loaded}     Active: active (running) since {since} UTC; 3 weeks 0 days ago\n   \
Main PID: {pid} ({prog})\n      Tasks: 2 (limit: 4652)\n     Memory: 6.1M\n        CPU: 1.204s\n     \
CGroup: /system.slice/{name}.service\n             └─{pid} \"{cmd}\"\n",
        prog = name.split('-').next().unwrap_or(name),
    ))
}

fn journal(host: &str) -> String {
    let lines = [
        "systemd[1]: Started nginx.service - A high performance web server and a reverse proxy server.",
        "kernel: EXT4-fs warning (device sda2): ext4_dx_add_entry: Directory index full!",
        "nginx[813]: 2026/11/27 23:58:01 [crit] 813#813: *4711 pwrite() \"/var/lib/nginx/body/0000000042\" failed (28: No space left on device)",
        "CRON[90211]: (root) CMD (test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; })",
        "qemu-ga[421]: info: guest-exec called: \"journalctl\"",
    ];
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        let (_, _, d, h, mi, s) = crate::util::civil(T0 - 300 + i as u64 * 60);
        out.push_str(&format!("Nov {d:>2} {h:02}:{mi:02}:{s:02} {host} {l}\n"));
    }
    out
}

fn uname(host: &str, args: &[&str]) -> Run {
    match args.first().copied() {
        None | Some("-s") => Run::ok("Linux\n"),
        Some("-r") => Run::ok(format!("{KERNEL_RELEASE}\n")),
        Some("-n") => Run::ok(format!("{host}\n")),
        Some("-m") => Run::ok("x86_64\n"),
        Some("-a") => Run::ok(format!(
            "Linux {host} {KERNEL_RELEASE} {KERNEL_VERSION} x86_64 GNU/Linux\n"
        )),
        Some(other) => Run::fail(
            1,
            format!(
                "uname: invalid option -- '{}'\nTry 'uname --help' for more information.\n",
                other.trim_start_matches('-')
            ),
        ),
    }
}

/// `sh -c SCRIPT`: a script of plain words runs as that argv; anything
/// that needs a real shell is refused rather than guessed at.
fn shell(os: &GuestOs, prog: &str, args: &[&str], input: Option<&[u8]>) -> Option<Run> {
    let Some((&"-c", rest)) = args.split_first() else {
        // A shell reading its script from stdin: not simulated.
        return Some(Run::fail(
            2,
            format!("pve-sim: {prog} without -c is not simulated\n"),
        ));
    };
    let script = rest.first().copied().unwrap_or("");
    if script.contains(['|', ';', '&', '<', '>', '$', '`', '(', ')']) {
        return Some(Run::fail(
            2,
            format!("pve-sim: shell syntax is not simulated: {script}\n"),
        ));
    }
    let words: Vec<String> = script
        .split_whitespace()
        .map(|w| w.trim_matches(['\'', '"']).to_string())
        .collect();
    if words.is_empty() {
        return Some(Run::ok(""));
    }
    Some(
        interpret(os, &words, input, 1)
            .unwrap_or_else(|| Run::fail(127, format!("{prog}: 1: {}: not found\n", words[0]))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_round_up_like_coreutils() {
        assert_eq!(human(0), "0");
        assert_eq!(human(4 * 1024 * 1024 * 1024 - 64 * 1024 * 1024), "4.0G");
        assert_eq!(human(3_887_071_232), "3.7G");
        assert_eq!(human(470 * 1024 * 1024), "470M");
        assert_eq!(human(593_920), "580K");
    }

    #[test]
    fn df_shows_the_nearly_full_root() {
        let t = df(true);
        let root = t.lines().find(|l| l.ends_with(" /")).unwrap();
        assert!(root.starts_with("/dev/sda2"), "{t}");
        assert!(root.contains("95%"), "{t}");
        assert!(
            t.starts_with("Filesystem      Size  Used Avail Use% Mounted on\n"),
            "{t}"
        );
    }
}
