//! The routing table of the write endpoints (shared/reference
//! pve-write-endpoints.md §2), with their permissions and parameter specs.
//! The specs check what the reference lists; when the official schema is
//! loaded it is the one that validates.

use super::{
    aplinfo, backup, cloudinit, config_write, download, lifecycle, move_disk, power,
    snapshot_write, tasks, template, volumes,
};
use crate::perms::Perm;
use crate::router::Route;
use crate::schema::Prop;

const POWER: Perm = Perm::check("/vms/{vmid}", &["VM.PowerMgmt"]);
const SNAPSHOT: Perm = Perm::check("/vms/{vmid}", &["VM.Snapshot"]);
const ROLLBACK: Perm = Perm::check_any("/vms/{vmid}", &["VM.Snapshot", "VM.Snapshot.Rollback"]);
const MIGRATE: Perm = Perm::check("/vms/{vmid}", &["VM.Migrate"]);
const CLONE: Perm = Perm::check("/vms/{vmid}", &["VM.Clone"]);
const ALLOCATE: Perm = Perm::check("/vms/{vmid}", &["VM.Allocate"]);
const DISK: Perm = Perm::check("/vms/{vmid}", &["VM.Config.Disk"]);
const TEMPLATE: Perm = Perm::check("/storage/{storage}", &["Datastore.AllocateTemplate"]);
const DISK_ANY: Perm = Perm::check_any("/vms/{vmid}", &["VM.Config.Disk"]);
const QEMU_CONFIG: Perm = Perm::check_any(
    "/vms/{vmid}",
    &[
        "VM.Config.Disk",
        "VM.Config.CDROM",
        "VM.Config.CPU",
        "VM.Config.Memory",
        "VM.Config.Network",
        "VM.Config.HWType",
        "VM.Config.Options",
        "VM.Config.Cloudinit",
    ],
);
const LXC_CONFIG: Perm = Perm::check_any(
    "/vms/{vmid}",
    &[
        "VM.Config.Disk",
        "VM.Config.CPU",
        "VM.Config.Memory",
        "VM.Config.Network",
        "VM.Config.Options",
    ],
);

fn base() -> Vec<(&'static str, Prop)> {
    vec![("node", Prop::node()), ("vmid", Prop::vmid())]
}

fn with(extra: Vec<(&'static str, Prop)>) -> Vec<(&'static str, Prop)> {
    let mut v = base();
    v.extend(extra);
    v
}

fn b() -> Prop {
    Prop::boolean().optional()
}

fn timeout() -> Prop {
    Prop::integer().min(0).optional()
}

fn snapname() -> Prop {
    Prop::string().format("pve-configid").max_len(40)
}

fn digest() -> Prop {
    Prop::string().max_len(64).optional()
}

/// Boolean config keys, so `true` is refused without the schema too.
fn config_bools() -> Vec<(&'static str, Prop)> {
    [
        "onboot",
        "protection",
        "template",
        "tablet",
        "acpi",
        "kvm",
        "localtime",
        "reboot",
        "freeze",
        "numa",
        "unprivileged",
        "console",
        "debug",
        "start",
        "force",
        "unique",
    ]
    .into_iter()
    .map(|k| (k, b()))
    .collect()
}

fn qemu_disk_enum() -> Vec<String> {
    let mut v = Vec::new();
    v.extend((0..4).map(|i| format!("ide{i}")));
    v.extend((0..31).map(|i| format!("scsi{i}")));
    v.extend((0..16).map(|i| format!("virtio{i}")));
    v.extend((0..6).map(|i| format!("sata{i}")));
    v.push("efidisk0".into());
    v.push("tpmstate0".into());
    v
}

fn lxc_disk_enum() -> Vec<String> {
    let mut v = vec!["rootfs".to_string()];
    v.extend((0..256).map(|i| format!("mp{i}")));
    v
}

/// A disk enum with the `unusedN` entries moves also take.
fn with_unused(mut v: Vec<String>) -> Vec<String> {
    v.extend((0..256).map(|i| format!("unused{i}")));
    v
}

fn one_of(values: &[String]) -> Prop {
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    Prop::string().one_of(&refs)
}

fn storage_id() -> Prop {
    Prop::string().format("pve-storage-id")
}

/// `move_disk` (qemu) or `move_volume` (lxc).
fn move_params(qemu: bool) -> Vec<(&'static str, Prop)> {
    let disks = with_unused(if qemu {
        qemu_disk_enum()
    } else {
        lxc_disk_enum()
    });
    let (key, target_key) = if qemu {
        ("disk", "target-disk")
    } else {
        ("volume", "target-volume")
    };
    let mut v = with(vec![
        (key, one_of(&disks)),
        (target_key, one_of(&disks).optional()),
        ("storage", storage_id().optional()),
        ("target-vmid", Prop::vmid().optional()),
        ("digest", Prop::string().max_len(40).optional()),
        ("target-digest", Prop::string().max_len(40).optional()),
        ("delete", b()),
    ]);
    if qemu {
        v.push((
            "format",
            Prop::string().one_of(&["raw", "qcow2", "vmdk"]).optional(),
        ));
        v.push(("bwlimit", Prop::integer().min(0).optional()));
    } else {
        v.push(("bwlimit", Prop::number().min(0).optional()));
    }
    v
}

/// The cloud-init keys of a qemu config.
fn cloudinit_props() -> Vec<(&'static str, Prop)> {
    vec![
        ("ciuser", Prop::string().optional()),
        ("cipassword", Prop::string().optional()),
        (
            "citype",
            Prop::string()
                .one_of(&["configdrive2", "nocloud", "opennebula"])
                .optional(),
        ),
        ("ciupgrade", b()),
        ("cicustom", Prop::string().optional()),
        ("sshkeys", Prop::string().format("urlencoded").optional()),
        (
            "nameserver",
            Prop::string().format("address-list").optional(),
        ),
        ("searchdomain", Prop::string().optional()),
        (
            "ipconfig[n]",
            Prop::string().format("pve-qm-ipconfig").optional(),
        ),
    ]
}

fn resize_params(disks: Vec<String>, qemu: bool) -> Vec<(&'static str, Prop)> {
    let refs: Vec<&str> = disks.iter().map(String::as_str).collect();
    let mut v = with(vec![
        ("disk", Prop::string().one_of(&refs)),
        ("size", Prop::string().pattern("\\+?\\d+(\\.\\d+)?[KMGT]?")),
        ("digest", digest()),
    ]);
    if qemu {
        v.push(("skiplock", b()));
    }
    v
}

pub(crate) fn routes() -> Vec<Route> {
    vec![
        // Power.
        Route::post("/nodes/{node}/qemu/{vmid}/status/start", power::qemu_start)
            .perm(POWER)
            .proxy("node")
            .params(with(vec![
                ("skiplock", b()),
                ("timeout", timeout()),
                ("migratedfrom", Prop::node().optional()),
                ("machine", Prop::string().optional()),
            ])),
        Route::post(
            "/nodes/{node}/qemu/{vmid}/status/shutdown",
            power::qemu_shutdown,
        )
        .perm(POWER)
        .proxy("node")
        .params(with(vec![
            ("timeout", timeout()),
            ("forceStop", b()),
            ("keepActive", b()),
            ("skiplock", b()),
        ])),
        Route::post("/nodes/{node}/qemu/{vmid}/status/stop", power::qemu_stop)
            .perm(POWER)
            .proxy("node")
            .params(with(vec![
                ("timeout", timeout()),
                ("overrule-shutdown", b()),
                ("keepActive", b()),
                ("skiplock", b()),
                ("migratedfrom", Prop::node().optional()),
            ])),
        Route::post(
            "/nodes/{node}/qemu/{vmid}/status/reboot",
            power::qemu_reboot,
        )
        .perm(POWER)
        .proxy("node")
        .params(with(vec![("timeout", timeout())])),
        Route::post(
            "/nodes/{node}/qemu/{vmid}/status/suspend",
            power::qemu_suspend,
        )
        .perm(POWER)
        .proxy("node")
        .params(with(vec![
            ("todisk", b()),
            (
                "statestorage",
                Prop::string()
                    .format("pve-storage-id")
                    .requires("todisk")
                    .optional(),
            ),
            ("skiplock", b()),
        ])),
        Route::post(
            "/nodes/{node}/qemu/{vmid}/status/resume",
            power::qemu_resume,
        )
        .perm(POWER)
        .proxy("node")
        .params(with(vec![("skiplock", b()), ("nocheck", b())])),
        Route::post("/nodes/{node}/lxc/{vmid}/status/start", power::lxc_start)
            .perm(POWER)
            .proxy("node")
            .params(with(vec![("skiplock", b()), ("debug", b())])),
        Route::post(
            "/nodes/{node}/lxc/{vmid}/status/shutdown",
            power::lxc_shutdown,
        )
        .perm(POWER)
        .proxy("node")
        .params(with(vec![("timeout", timeout()), ("forceStop", b())])),
        Route::post("/nodes/{node}/lxc/{vmid}/status/stop", power::lxc_stop)
            .perm(POWER)
            .proxy("node")
            .params(with(vec![("skiplock", b()), ("overrule-shutdown", b())])),
        Route::post("/nodes/{node}/lxc/{vmid}/status/reboot", power::lxc_reboot)
            .perm(POWER)
            .proxy("node")
            .params(with(vec![("timeout", timeout())])),
        Route::post(
            "/nodes/{node}/lxc/{vmid}/status/suspend",
            power::lxc_suspend,
        )
        .perm(POWER)
        .proxy("node")
        .params(base()),
        Route::post("/nodes/{node}/lxc/{vmid}/status/resume", power::lxc_resume)
            .perm(POWER)
            .proxy("node")
            .params(base()),
        // Snapshots.
        Route::post(
            "/nodes/{node}/qemu/{vmid}/snapshot",
            snapshot_write::qemu_create,
        )
        .perm(SNAPSHOT)
        .proxy("node")
        .params(with(vec![
            ("snapname", snapname()),
            ("description", Prop::string().optional()),
            ("vmstate", b()),
        ])),
        Route::post(
            "/nodes/{node}/lxc/{vmid}/snapshot",
            snapshot_write::lxc_create,
        )
        .perm(SNAPSHOT)
        .proxy("node")
        .params(with(vec![
            ("snapname", snapname()),
            ("description", Prop::string().optional()),
        ])),
        Route::delete(
            "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}",
            snapshot_write::qemu_delete,
        )
        .perm(SNAPSHOT)
        .proxy("node")
        .params(with(vec![("snapname", snapname()), ("force", b())])),
        Route::delete(
            "/nodes/{node}/lxc/{vmid}/snapshot/{snapname}",
            snapshot_write::lxc_delete,
        )
        .perm(SNAPSHOT)
        .proxy("node")
        .params(with(vec![("snapname", snapname()), ("force", b())])),
        Route::post(
            "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback",
            snapshot_write::qemu_rollback,
        )
        .perm(ROLLBACK)
        .proxy("node")
        .params(with(vec![("snapname", snapname()), ("start", b())])),
        Route::post(
            "/nodes/{node}/lxc/{vmid}/snapshot/{snapname}/rollback",
            snapshot_write::lxc_rollback,
        )
        .perm(ROLLBACK)
        .proxy("node")
        .params(with(vec![("snapname", snapname()), ("start", b())])),
        // Migration.
        Route::post("/nodes/{node}/qemu/{vmid}/migrate", lifecycle::qemu_migrate)
            .perm(MIGRATE)
            .proxy("node")
            .params(with(vec![
                ("target", Prop::node()),
                ("online", b()),
                ("with-local-disks", b()),
                ("targetstorage", Prop::string().optional()),
                ("bwlimit", Prop::integer().min(0).optional()),
                ("force", b()),
                (
                    "migration_type",
                    Prop::string().one_of(&["secure", "insecure"]).optional(),
                ),
                ("migration_network", Prop::string().optional()),
                ("with-conntrack-state", b()),
            ])),
        Route::post("/nodes/{node}/lxc/{vmid}/migrate", lifecycle::lxc_migrate)
            .perm(MIGRATE)
            .proxy("node")
            .params(with(vec![
                ("target", Prop::node()),
                ("online", b()),
                ("restart", b()),
                ("timeout", timeout()),
                ("target-storage", Prop::string().optional()),
                ("bwlimit", Prop::number().min(0).optional()),
            ])),
        // Clone.
        Route::post("/nodes/{node}/qemu/{vmid}/clone", lifecycle::qemu_clone)
            .perm(CLONE)
            .proxy("node")
            .params(with(vec![
                ("newid", Prop::vmid()),
                ("name", Prop::string().format("dns-name").optional()),
                ("full", b()),
                ("target", Prop::node().optional()),
                (
                    "storage",
                    Prop::string().format("pve-storage-id").optional(),
                ),
                (
                    "format",
                    Prop::string().one_of(&["raw", "qcow2", "vmdk"]).optional(),
                ),
                ("snapname", snapname().optional()),
                ("pool", Prop::string().optional()),
                ("description", Prop::string().optional()),
                ("bwlimit", Prop::integer().min(0).optional()),
            ])),
        Route::post("/nodes/{node}/lxc/{vmid}/clone", lifecycle::lxc_clone)
            .perm(CLONE)
            .proxy("node")
            .params(with(vec![
                ("newid", Prop::vmid()),
                ("hostname", Prop::string().format("dns-name").optional()),
                ("full", b()),
                ("target", Prop::node().optional()),
                (
                    "storage",
                    Prop::string().format("pve-storage-id").optional(),
                ),
                ("snapname", snapname().optional()),
                ("pool", Prop::string().optional()),
                ("description", Prop::string().optional()),
                ("bwlimit", Prop::number().min(0).optional()),
            ])),
        // Create and restore.
        Route::post("/nodes/{node}/qemu", lifecycle::qemu_create)
            .proxy("node")
            .lenient_params({
                let mut v = base();
                v.extend(config_bools());
                v.extend([
                    ("name", Prop::string().format("dns-name").optional()),
                    ("cores", Prop::integer().min(1).optional()),
                    ("sockets", Prop::integer().min(1).optional()),
                    ("archive", Prop::string().max_len(255).optional()),
                    (
                        "storage",
                        Prop::string().format("pve-storage-id").optional(),
                    ),
                    ("live-restore", b()),
                    ("description", Prop::string().max_len(8192).optional()),
                ]);
                v.extend(cloudinit_props());
                v
            }),
        Route::post("/nodes/{node}/lxc", lifecycle::lxc_create)
            .proxy("node")
            .lenient_params({
                let mut v = base();
                v.extend(config_bools());
                v.extend([
                    ("ostemplate", Prop::string().max_len(255)),
                    ("hostname", Prop::string().format("dns-name").optional()),
                    ("memory", Prop::integer().min(16).optional()),
                    ("swap", Prop::integer().min(0).optional()),
                    ("cores", Prop::integer().range(1, 8192).optional()),
                    (
                        "storage",
                        Prop::string().format("pve-storage-id").optional(),
                    ),
                    ("restore", b()),
                    ("ignore-unpack-errors", b()),
                    ("description", Prop::string().max_len(8192).optional()),
                ]);
                v
            }),
        // Destroy.
        Route::delete("/nodes/{node}/qemu/{vmid}", lifecycle::qemu_destroy)
            .perm(ALLOCATE)
            .proxy("node")
            .params(with(vec![
                ("purge", b()),
                ("destroy-unreferenced-disks", b()),
                ("skiplock", b()),
            ])),
        Route::delete("/nodes/{node}/lxc/{vmid}", lifecycle::lxc_destroy)
            .perm(ALLOCATE)
            .proxy("node")
            .params(with(vec![
                ("purge", b()),
                ("destroy-unreferenced-disks", b()),
                ("force", b()),
            ])),
        // Templates.
        Route::post(
            "/nodes/{node}/qemu/{vmid}/template",
            template::qemu_template,
        )
        .perm(ALLOCATE)
        .proxy("node")
        .params(with(vec![("disk", Prop::string().optional())])),
        Route::post("/nodes/{node}/lxc/{vmid}/template", template::lxc_template)
            .perm(ALLOCATE)
            .proxy("node")
            .params(base()),
        // Resize.
        Route::put(
            "/nodes/{node}/qemu/{vmid}/resize",
            config_write::qemu_resize,
        )
        .perm(DISK)
        .proxy("node")
        .params(resize_params(qemu_disk_enum(), true)),
        Route::put("/nodes/{node}/lxc/{vmid}/resize", config_write::lxc_resize)
            .perm(DISK_ANY)
            .proxy("node")
            .params(resize_params(lxc_disk_enum(), false)),
        // Config.
        Route::put("/nodes/{node}/qemu/{vmid}/config", config_write::qemu_put)
            .perm(QEMU_CONFIG)
            .proxy("node")
            .lenient_params(qemu_config_params(false)),
        Route::post("/nodes/{node}/qemu/{vmid}/config", config_write::qemu_post)
            .perm(QEMU_CONFIG)
            .proxy("node")
            .lenient_params(qemu_config_params(true)),
        Route::put("/nodes/{node}/lxc/{vmid}/config", config_write::lxc_put)
            .perm(LXC_CONFIG)
            .proxy("node")
            .lenient_params({
                let mut v = base();
                v.extend(config_bools().into_iter().filter(|(k, _)| *k != "force"));
                v.extend([
                    ("delete", Prop::string().optional()),
                    ("revert", Prop::string().optional()),
                    ("digest", digest()),
                    ("hostname", Prop::string().format("dns-name").optional()),
                    ("memory", Prop::integer().min(16).optional()),
                    ("swap", Prop::integer().min(0).optional()),
                    ("cores", Prop::integer().range(1, 8192).optional()),
                    ("description", Prop::string().max_len(8192).optional()),
                ]);
                v
            }),
        // Backup and ids.
        Route::post("/nodes/{node}/vzdump", backup::vzdump)
            .proxy("node")
            .lenient_params(vec![
                ("node", Prop::node()),
                ("vmid", Prop::string().format("pve-vmid-list").optional()),
                ("all", b()),
                (
                    "storage",
                    Prop::string().format("pve-storage-id").optional(),
                ),
                (
                    "mode",
                    Prop::string()
                        .one_of(&["snapshot", "suspend", "stop"])
                        .optional(),
                ),
                (
                    "compress",
                    Prop::string()
                        .one_of(&["0", "1", "gzip", "lzo", "zstd"])
                        .optional(),
                ),
                ("remove", b()),
                (
                    "notes-template",
                    Prop::string().max_len(1024).requires("storage").optional(),
                ),
                ("protected", Prop::boolean().requires("storage").optional()),
                ("stdout", b()),
            ]),
        // Cloud-init, disk moves and storage content.
        Route::put("/nodes/{node}/qemu/{vmid}/cloudinit", cloudinit::update)
            .perm(Perm::check("/vms/{vmid}", &["VM.Config.Cloudinit"]))
            .proxy("node")
            .params(base()),
        Route::post(
            "/nodes/{node}/qemu/{vmid}/move_disk",
            move_disk::qemu_move_disk,
        )
        .perm(DISK)
        .proxy("node")
        .params(move_params(true)),
        Route::post(
            "/nodes/{node}/lxc/{vmid}/move_volume",
            move_disk::lxc_move_volume,
        )
        .perm(DISK)
        .proxy("node")
        .params(move_params(false)),
        Route::delete(
            "/nodes/{node}/storage/{storage}/content/{volume}",
            volumes::delete,
        )
        .proxy("node")
        .params(vec![
            ("node", Prop::node()),
            ("storage", storage_id().optional()),
            ("volume", Prop::string()),
            ("delay", Prop::integer().range(1, 30).optional()),
        ]),
        Route::post(
            "/nodes/{node}/storage/{storage}/download-url",
            download::download_url,
        )
        .perm(TEMPLATE)
        .proxy("node")
        .params(vec![
            ("node", Prop::node()),
            ("storage", storage_id()),
            ("url", Prop::string().pattern("https?://.*")),
            (
                "content",
                Prop::string().one_of(&["iso", "vztmpl", "import"]),
            ),
            ("filename", Prop::string().max_len(255)),
            (
                "checksum",
                Prop::string().requires("checksum-algorithm").optional(),
            ),
            (
                "checksum-algorithm",
                Prop::string()
                    .one_of(&["md5", "sha1", "sha224", "sha256", "sha384", "sha512"])
                    .requires("checksum")
                    .optional(),
            ),
            (
                "compression",
                Prop::string()
                    .one_of(&["gz", "lzo", "zst", "bz2"])
                    .optional(),
            ),
            ("verify-certificates", b()),
        ]),
        Route::post("/nodes/{node}/aplinfo", aplinfo::download)
            .perm(TEMPLATE)
            .proxy("node")
            .params(vec![
                ("node", Prop::node()),
                ("storage", storage_id()),
                ("template", Prop::string().max_len(255)),
            ]),
        Route::get("/cluster/nextid", backup::nextid)
            .params(vec![("vmid", Prop::vmid().optional())]),
        Route::delete("/nodes/{node}/tasks/{upid}", tasks::task_stop)
            .proxy("node")
            .params(vec![("node", Prop::node()), ("upid", Prop::string())]),
    ]
}

fn qemu_config_params(post: bool) -> Vec<(&'static str, Prop)> {
    let mut v = base();
    v.extend(config_bools());
    v.extend([
        ("delete", Prop::string().optional()),
        ("revert", Prop::string().optional()),
        ("digest", digest()),
        ("skiplock", b()),
        ("name", Prop::string().format("dns-name").optional()),
        ("cores", Prop::integer().min(1).optional()),
        ("sockets", Prop::integer().min(1).optional()),
        ("balloon", Prop::integer().min(0).optional()),
        ("description", Prop::string().max_len(8192).optional()),
    ]);
    v.extend(cloudinit_props());
    if post {
        v.push(("background_delay", Prop::integer().range(1, 30).optional()));
    }
    v
}
