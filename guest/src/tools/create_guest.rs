//! `pve_create_qemu_vm` (`POST /nodes/{node}/qemu`) and `pve_create_lxc`
//! (`POST /nodes/{node}/lxc`), with the reference server's parameters.
//!
//! Both refuse before writing when the vmid is taken or the node is not an
//! online cluster node. Property strings (`net0`, `scsi0`, `rootfs`, ...)
//! are passed as written; Proxmox validates them. A root password is not
//! taken: it would sit in the agent's context, the client's logs and the
//! audit log. Containers get SSH keys instead, which are public.

use serde_json::Value;

use crate::route::{Param, Route};
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::action::{self, ActionOutput, Prepared, action_input};
use crate::api::Pve;
use crate::arg::{self, DnsName, Int, NodeName, StorageId, VmType, Vmid, choice};
use crate::cloudinit::{self, IpConfig, SshKeys};
use crate::error::{ToolError, quoted};
use crate::resolve::Target;
use crate::write::{Method, WriteRequest};

/// A Proxmox property string such as `virtio,bridge=vmbr0` or
/// `local-lvm:32`: one line of printable text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyString(pub String);

impl PropertyString {
    /// The text as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_json(v: &Value) -> Result<Self, String> {
        let s = arg::string(v, 1024)?;
        if s.chars().any(char::is_control) {
            return Err(format!(
                "{} contains a control character; a property string is one line, e.g. \
                 \"virtio,bridge=vmbr0\"",
                quoted(s, 64)
            ));
        }
        Ok(PropertyString(s.to_owned()))
    }
}
arg::deserialize_from_json!(PropertyString);
arg::fixed_schema!(
    PropertyString,
    serde_json::json!({"type": "string", "minLength": 1, "maxLength": 1024})
);

choice! {
    /// QEMU's guest OS types.
    pub enum OsType {
        /// Unspecified.
        Other = "other",
        /// Windows XP.
        Wxp = "wxp",
        /// Windows 2000.
        W2k = "w2k",
        /// Windows 2003.
        W2k3 = "w2k3",
        /// Windows 2008.
        W2k8 = "w2k8",
        /// Windows Vista.
        Wvista = "wvista",
        /// Windows 7.
        Win7 = "win7",
        /// Windows 8, 2012.
        Win8 = "win8",
        /// Windows 10, 2016, 2019.
        Win10 = "win10",
        /// Windows 11, 2022, 2025.
        Win11 = "win11",
        /// Linux 2.4.
        L24 = "l24",
        /// Linux 2.6 to 6.x.
        L26 = "l26",
        /// Solaris.
        Solaris = "solaris",
    }
}

action_input! {
    new:
    /// The VM to create.
    pub struct QemuInput {
        /// Node to create it on
        pub node: NodeName,
        /// Id of the new VM; must be free (pve_get_next_vmid)
        pub vmid: Vmid,
        /// Name (a DNS name)
        pub name: Option<DnsName>,
        /// Memory in MiB (default 512)
        pub memory: Option<Int<16, 8388608>>,
        /// CPU cores per socket (default 1)
        pub cores: Option<Int<1, 1024>>,
        /// CPU sockets (default 1)
        pub sockets: Option<Int<1, 16>>,
        /// e.g. "virtio,bridge=vmbr0"
        pub net0: Option<PropertyString>,
        /// e.g. "local-lvm:32" (GiB)
        pub scsi0: Option<PropertyString>,
        /// e.g. "local:iso/x.iso,media=cdrom" or "local-lvm:cloudinit"
        pub ide2: Option<PropertyString>,
        /// Guest OS type (l26: Linux)
        pub ostype: Option<OsType>,
        /// Cloud-init user
        pub ciuser: Option<arg::Text<64>>,
        /// Cloud-init SSH public keys, one per line
        pub sshkeys: Option<SshKeys>,
        /// Cloud-init NIC 0: ip=dhcp or ip=CIDR,gw=IP
        pub ipconfig0: Option<IpConfig>,
    }
}

action_input! {
    new:
    /// The container to create.
    pub struct LxcInput {
        /// Node to create it on
        pub node: NodeName,
        /// Id of the new CT; must be free (pve_get_next_vmid)
        pub vmid: Vmid,
        /// Template volume, e.g. "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
        pub ostemplate: PropertyString,
        /// Storage for the root disk
        pub storage: Option<StorageId>,
        /// Hostname (a DNS name)
        pub hostname: Option<DnsName>,
        /// Memory in MiB (default 512)
        pub memory: Option<Int<16, 8388608>>,
        /// CPU cores (default: all)
        pub cores: Option<Int<1, 8192>>,
        /// e.g. "name=eth0,bridge=vmbr0,ip=dhcp"
        pub net0: Option<PropertyString>,
        /// Root disk, e.g. "local-lvm:8" (GiB)
        pub rootfs: Option<PropertyString>,
        /// SSH public keys for root, one per line
        pub ssh_public_keys: Option<arg::Text<65536>>,
    }
}

/// `pve_create_qemu_vm`.
pub static QEMU: Tool = write_tool! {
    name: "pve_create_qemu_vm",
    title: "Create a QEMU VM",
    description: "Create a stopped QEMU VM with a free vmid on a node. Returns the create task.",
    annotations: Annotations::write(false, false),
    routes: &[Route::new(
        "POST",
        "/nodes/{node}/qemu",
        &[
            Param::arg("vmid"),
            Param::arg("name"),
            Param::arg("memory"),
            Param::arg("cores"),
            Param::arg("sockets"),
            Param::arg("net0"),
            Param::arg("scsi0"),
            Param::arg("ide2"),
            Param::arg("ostype"),
            Param::arg("ciuser"),
            Param::arg("sshkeys"),
            Param::arg("ipconfig0"),
        ],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Allocate",
    ],
    run: create_qemu,
};

/// `pve_create_lxc`.
pub static LXC: Tool = write_tool! {
    name: "pve_create_lxc",
    title: "Create an LXC container",
    description: "Create a stopped, unprivileged LXC container from an OS template; no root \
        password, pass ssh_public_keys. Returns the create task.",
    annotations: Annotations::write(false, false),
    routes: &[Route::new(
        "POST",
        "/nodes/{node}/lxc",
        &[
            Param::arg("vmid"),
            Param::arg("ostemplate"),
            Param::arg("storage"),
            Param::arg("hostname"),
            Param::arg("memory"),
            Param::arg("cores"),
            Param::arg("net0"),
            Param::arg("rootfs"),
            Param::from("ssh-public-keys", "ssh_public_keys"),
        ],
    )],
    privileges: [
        "/vms/{vmid}": "VM.Allocate",
        "/storage/{storage}": "Datastore.AllocateSpace",
    ],
    run: create_lxc,
};

/// The checks both share; returns the new guest as a target.
fn prepare(
    pve: &mut dyn Pve,
    node: &NodeName,
    vmid: Vmid,
    vm_type: VmType,
) -> Result<(Target, String), ToolError> {
    action::check_node_online(pve, "node", node.as_str())?;
    action::refuse_if_taken(pve, "vmid", vmid.0)?;
    let target = Target {
        vmid: vmid.0,
        node: node.as_str().to_owned(),
        vm_type,
        node_resolved: false,
        vm_type_resolved: false,
    };
    let found = format!(
        "node {} is online and no guest has vmid {}",
        node.as_str(),
        vmid.0
    );
    Ok((target, found))
}

fn int<const A: u64, const B: u64>(v: Option<Int<A, B>>) -> Option<i64> {
    v.map(|n| n.0 as i64)
}

fn text(v: &Option<PropertyString>) -> Option<&str> {
    v.as_ref().map(PropertyString::as_str)
}

fn create_qemu(pve: &mut dyn Pve, input: QemuInput) -> Result<Answer<ActionOutput>, ToolError> {
    let cloud_init = input.ciuser.is_some() || input.sshkeys.is_some() || input.ipconfig0.is_some();
    let drive = text(&input.ide2).is_some_and(|d| d.split(',').next().is_some_and(|v| v.ends_with(":cloudinit")));
    if cloud_init && !drive {
        return Err(ToolError::field(
            "ide2",
            "ciuser, sshkeys and ipconfig0 reach the VM through a cloud-init drive: add \
             ide2 \"<storage>:cloudinit\", e.g. \"local-lvm:cloudinit\"",
        ));
    }
    let (target, found) = prepare(pve, &input.node, input.vmid, VmType::Qemu)?;
    let request = WriteRequest::new(
        Method::Post,
        crate::path::ApiPath::new("nodes")
            .seg(&target.node)
            .lit("qemu"),
    )
    .int("vmid", Some(i64::from(target.vmid)))
    .text("name", input.name.as_ref().map(DnsName::as_str))
    .int("memory", int(input.memory))
    .int("cores", int(input.cores))
    .int("sockets", int(input.sockets))
    .text("net0", text(&input.net0))
    .text("scsi0", text(&input.scsi0))
    .text("ide2", text(&input.ide2))
    .text("ostype", input.ostype.map(OsType::as_str))
    .text("ciuser", input.ciuser.as_ref().map(arg::Text::as_str))
    .text(
        "sshkeys",
        input.sshkeys.as_ref().map(|k| cloudinit::encode_keys(&k.0)).as_deref(),
    )
    .text("ipconfig0", input.ipconfig0.as_ref().map(|c| c.0.as_str()));
    let with = if cloud_init {
        ", with its cloud-init settings"
    } else {
        ""
    };
    let effect = format!("VM {} is created on {}, stopped{with}", target.vmid, target.node);
    action::run(
        pve,
        &target,
        found,
        Prepared::Act { request, effect },
        input.execution(),
    )
}

/// Whether `volume` names a container template (`<storage>:vztmpl/<file>`):
/// Proxmox also takes a backup archive as `ostemplate`, which this tool
/// must not send, as that restores a backup (pve_restore_vm's job, with its
/// own checks) instead of creating a container.
fn is_template_volume(volume: &str) -> bool {
    volume.split_once(':').is_some_and(|(storage, rest)| {
        arg::is_storage_id(storage)
            && rest
                .strip_prefix("vztmpl/")
                .is_some_and(|file| !file.is_empty() && !file.contains('/'))
    })
}

fn create_lxc(pve: &mut dyn Pve, input: LxcInput) -> Result<Answer<ActionOutput>, ToolError> {
    if !is_template_volume(input.ostemplate.as_str()) {
        return Err(ToolError::field(
            "ostemplate",
            format!(
                "{:?} is not a container template volume; pass one of the form \
                 \"<storage>:vztmpl/<file>\", e.g. \"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\" \
                 (pve_list_storage shows which storages hold vztmpl); to restore a backup use \
                 pve_restore_vm",
                input.ostemplate.as_str()
            ),
        ));
    }
    let (target, found) = prepare(pve, &input.node, input.vmid, VmType::Lxc)?;
    let request = WriteRequest::new(
        Method::Post,
        crate::path::ApiPath::new("nodes")
            .seg(&target.node)
            .lit("lxc"),
    )
    .int("vmid", Some(i64::from(target.vmid)))
    .text("ostemplate", Some(input.ostemplate.as_str()))
    .text("storage", input.storage.as_ref().map(StorageId::as_str))
    .text("hostname", input.hostname.as_ref().map(DnsName::as_str))
    .int("memory", int(input.memory))
    .int("cores", int(input.cores))
    .text("net0", text(&input.net0))
    .text("rootfs", text(&input.rootfs))
    .text(
        "ssh-public-keys",
        input.ssh_public_keys.as_ref().map(arg::Text::as_str),
    );
    let effect = format!(
        "CT {} is created on {} from {}, stopped",
        target.vmid,
        target.node,
        input.ostemplate.as_str()
    );
    action::run(
        pve,
        &target,
        found,
        Prepared::Act { request, effect },
        input.execution(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:qmcreate:150:mcp@pve!ops:";

    fn fake() -> FakePve {
        FakePve::default()
            .with("/nodes", json!([{"node": "pve1", "status": "online"}]))
            .with(
                "/cluster/resources?type=vm",
                json!([{"vmid": 100, "type": "qemu", "node": "pve1", "status": "running"}]),
            )
    }

    #[test]
    fn a_vm_is_created_with_the_references_parameters() {
        let mut pve = fake().answering("POST /nodes/pve1/qemu", json!(UPID));
        let out = QEMU
            .call(
                &mut pve,
                r#"{"node": "pve1", "vmid": 150, "name": "web-02", "memory": 2048, "cores": 2,
                    "net0": "virtio,bridge=vmbr0", "scsi0": "local-lvm:32", "ostype": "l26"}"#,
            )
            .unwrap();
        assert_valid_output(&QEMU, &out);
        assert_eq!(
            pve.writes,
            [
                "POST /nodes/pve1/qemu vmid=150&name=web-02&memory=2048&cores=2&net0=virtio%2Cbridge%3Dvmbr0&scsi0=local-lvm%3A32&ostype=l26"
            ]
        );
    }

    #[test]
    fn a_cloud_init_vm_gets_its_drive_keys_and_address_in_the_create() {
        let mut pve = fake().answering("POST /nodes/pve1/qemu", json!(UPID));
        let args = json!({"node": "pve1", "vmid": 150, "ide2": "local-lvm:cloudinit",
                          "ciuser": "ops", "sshkeys": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 me@x",
                          "ipconfig0": "ip=dhcp"});
        QEMU.call(&mut pve, &args.to_string()).unwrap();
        assert_eq!(
            pve.writes,
            [
                "POST /nodes/pve1/qemu vmid=150&ide2=local-lvm%3Acloudinit&ciuser=ops&sshkeys=ssh-ed25519%2520AAAAC3NzaC1lZDI1NTE5%2520me%2540x&ipconfig0=ip%3Ddhcp"
            ]
        );
        let mut pve = FakePve::default();
        let e = QEMU
            .call(&mut pve, r#"{"node": "pve1", "vmid": 150, "ciuser": "ops"}"#)
            .unwrap_err();
        assert!(e.message().starts_with("ide2: ciuser, sshkeys and ipconfig0"), "{e}");
        assert!(pve.requests.is_empty());
    }

    #[test]
    fn a_taken_vmid_or_a_password_is_refused_before_writing() {
        let mut pve = fake();
        let e = LXC
            .call(
                &mut pve,
                r#"{"node": "pve1", "vmid": 100, "ostemplate": "local:vztmpl/x.tar.zst"}"#,
            )
            .unwrap_err();
        assert!(e.message().contains("vmid 100 is taken"), "{e}");
        // A backup archive (or anything else) as the template is refused
        // before any request: sent, it would restore the backup.
        for volume in [
            "local:backup/vzdump-lxc-102-2026_01_01-00_00_00.tar.zst",
            "pbs:backup/ct/102/2026-01-01T00:00:00Z",
            "/var/lib/vz/template/cache/x.tar.zst",
            "local:vztmpl/",
            "local:vztmpl/../x",
        ] {
            let mut pve = fake();
            let args = json!({"node": "pve1", "vmid": 150, "ostemplate": volume}).to_string();
            let e = LXC.call(&mut pve, &args).unwrap_err();
            assert!(
                e.message().starts_with("ostemplate: ") && e.message().contains("vztmpl"),
                "{volume}: {e}"
            );
            assert!(pve.requests.is_empty() && pve.writes.is_empty(), "{volume}");
        }
        let e = LXC
            .call(
                &mut pve,
                r#"{"node": "pve1", "vmid": 150, "ostemplate": "x", "password": "hunter2"}"#,
            )
            .unwrap_err();
        assert!(
            e.message().starts_with("password: not taken: a password in a tool call"),
            "{e}"
        );
        assert!(!e.message().contains("hunter2"), "{e}");
        assert!(pve.writes.is_empty());
    }
}
