//! Disk moves over real HTTPS: `move_disk` (qemu) and `move_volume`
//! (lxc) to another storage and to another guest, their tasks, and PVE's
//! refusals.

use serde_json::json;

use super::calls::*;
use super::*;
use crate::testing::wait_until;

/// The volids a storage lists for a guest (on pve1).
async fn volids(sim: &Simulator, storage: &str, vmid: u32) -> Vec<String> {
    data(
        sim,
        &format!("/nodes/pve1/storage/{storage}/content?vmid={vmid}"),
    )
    .await
    .as_array()
    .unwrap()
    .iter()
    .map(|v| v["volid"].as_str().unwrap().to_string())
    .collect()
}

#[tokio::test]
async fn qemu_disks_move_between_storages() {
    let sim = sim().await;
    sim.set_task_duration_for("qmmove", Duration::from_secs(2));
    let r = post(
        &sim,
        "/nodes/pve1/qemu/104/move_disk",
        "disk=scsi0&storage=nfs-images",
    )
    .await;
    let u = upid(&r);
    assert!(u.contains(":qmmove:104:root@pam!mcp:"), "{u}");
    // Progress while it copies; the config file is locked meanwhile.
    wait_until("a progress line", Duration::from_secs(20), async || {
        sim.task(&u)
            .filter(|t| t.running() && t.log.iter().any(|l| l.starts_with("transferred ")))
    })
    .await;
    let r = put(&sim, "/nodes/pve1/qemu/104/config", "cores=3").await;
    assert_eq!(
        message(&r),
        "can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout\n"
    );
    let t = finished(&sim, &u).await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert_eq!(
        t.log,
        [
            "copying volume 'local-lvm:vm-104-disk-0' from current storage 'local-lvm' to target storage 'nfs-images'",
            "create full clone of drive scsi0 (local-lvm:vm-104-disk-0)",
            "Formatting '/mnt/pve/nfs-images/images/104/vm-104-disk-0.raw', fmt=raw size=68719476736",
            "allocated target volume 'nfs-images:104/vm-104-disk-0.raw'",
            "transferred 0 B of 64.00 GiB (0.00%)",
            "transferred 16.00 GiB of 64.00 GiB (25.00%)",
            "transferred 32.00 GiB of 64.00 GiB (50.00%)",
            "transferred 48.00 GiB of 64.00 GiB (75.00%)",
            "transferred 64.00 GiB of 64.00 GiB (100.00%)",
            "adding source volume 'local-lvm:vm-104-disk-0' as 'unused0' to config",
            "TASK OK",
        ]
    );
    let g = sim.guest(104).unwrap();
    assert_eq!(
        g.config["scsi0"],
        "nfs-images:104/vm-104-disk-0.raw,iothread=1,size=64G"
    );
    assert_eq!(g.config["unused0"], "local-lvm:vm-104-disk-0");
    assert_eq!(
        volids(&sim, "local-lvm", 104).await,
        ["local-lvm:vm-104-disk-0"]
    );
    let nfs = data(&sim, "/nodes/pve2/storage/nfs-images/content").await;
    assert_eq!(
        nfs,
        json!([{"volid": "nfs-images:104/vm-104-disk-0.raw", "content": "images",
                "format": "raw", "size": 68_719_476_736u64, "ctime": nfs[0]["ctime"],
                "vmid": 104}]),
        "shared: every node lists it"
    );

    // Back, deleting the source; lvmthin takes raw only, so qcow2 is a
    // warning.
    sim.set_task_duration_for("qmmove", Duration::from_millis(50));
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu/104/move_disk",
            "disk=scsi0&storage=local-lvm&delete=1&format=qcow2",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("WARNINGS: 1"));
    assert!(t.log.contains(
        &"WARN: format 'qcow2' is not supported by the target storage 'local-lvm' - using 'raw' instead"
            .to_string()
    ));
    assert!(
        t.log
            .contains(&"  Logical volume \"vm-104-disk-1\" created.".to_string())
    );
    assert!(
        t.log.contains(
            &"removing source volume 'nfs-images:104/vm-104-disk-0.raw' after successful copy"
                .to_string()
        )
    );
    let g = sim.guest(104).unwrap();
    assert_eq!(
        g.config["scsi0"],
        "local-lvm:vm-104-disk-1,iothread=1,size=64G"
    );
    assert!(g.config.get("unused1").is_none());
    assert_eq!(
        volids(&sim, "local-lvm", 104).await,
        ["local-lvm:vm-104-disk-0", "local-lvm:vm-104-disk-1"]
    );
    assert!(volids(&sim, "nfs-images", 104).await.is_empty());
    // A file storage may change the format on the spot.
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu/104/move_disk",
            "disk=scsi0&storage=nfs-images&format=qcow2",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert!(t.log[2].starts_with(
        "Formatting '/mnt/pve/nfs-images/images/104/vm-104-disk-0.qcow2', fmt=qcow2 cluster_size=65536"
    ));
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu/104/move_disk",
            "disk=scsi0&storage=nfs-images&format=raw&delete=1",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert_eq!(
        sim.guest(104).unwrap().config["scsi0"],
        "nfs-images:104/vm-104-disk-1.raw,iothread=1,size=64G"
    );
    assert_eq!(
        data(&sim, "/nodes/pve1/storage/nfs-images/content?vmid=104").await[0]["format"],
        "raw"
    );

    // A template's moved disk is a base volume again.
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu/900/move_disk",
            "disk=scsi0&storage=nfs-images",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    let g = sim.guest(900).unwrap();
    assert!(
        g.config["scsi0"]
            .as_str()
            .unwrap()
            .starts_with("nfs-images:900/base-900-disk-0.raw,"),
        "{}",
        g.config["scsi0"]
    );
    // A running VM's disk is mirrored; its snapshots stay behind, which
    // is a warning.
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu/100/move_disk",
            "disk=scsi0&storage=nfs-images",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("WARNINGS: 1"));
    assert_eq!(
        t.log[1],
        "WARN: moving disk with snapshots, snapshots will not be moved!"
    );
    assert!(
        t.log
            .contains(&"drive mirror is starting for drive-scsi0".to_string())
    );
    assert!(t.log.contains(
        &"drive-scsi0: transferred 32.00 GiB of 32.00 GiB (100.00%) in 4s, ready".to_string()
    ));
    assert!(t.log.contains(&"all 'mirror' jobs are ready".to_string()));
    assert!(
        sim.guest(100).unwrap().config["scsi0"]
            .as_str()
            .unwrap()
            .starts_with("nfs-images:100/vm-100-disk-0.raw")
    );
    no_violations(&sim);
    sim.shutdown().await;
}

#[tokio::test]
async fn qemu_moves_are_refused_like_pve() {
    let sim = sim().await;
    let mv = |form: &'static str| {
        let sim = &sim;
        async move { post(sim, "/nodes/pve1/qemu/104/move_disk", form).await }
    };
    for (form, text) in [
        (
            "disk=scsi5&storage=nfs-images",
            "disk 'scsi5' does not exist\n",
        ),
        ("disk=ide2&storage=nfs-images", "you can't move a cdrom\n"),
        (
            "disk=scsi0&storage=local-lvm",
            "you can't move to the same storage with same format\n",
        ),
        (
            "disk=scsi0&storage=local-lvm&format=raw",
            "you can't move to the same storage with same format\n",
        ),
        ("disk=scsi0&storage=nope", "storage 'nope' does not exist\n"),
        (
            "disk=scsi0&storage=nfs-images&digest=0123",
            "detected modified configuration - file changed by other user? Try again.\n",
        ),
    ] {
        let r = mv(form).await;
        assert_eq!((r.status, message(&r)), (500, text.to_string()), "{form}");
    }
    let r = mv("disk=scsi0&storage=local").await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["storage"],
        "storage 'local' does not support vm images"
    );
    let r = mv("disk=scsi0").await;
    assert_eq!(
        r.json()["errors"],
        json!({
            "storage": "both 'storage' and 'target-vmid' missing, either needs to be set",
            "target-vmid": "both 'storage' and 'target-vmid' missing, either needs to be set",
        })
    );
    let r = mv("disk=scsi0&storage=nfs-images&target-vmid=101").await;
    assert_eq!(
        r.json()["errors"]["storage"],
        "either set 'storage' or 'target-vmid', but not both"
    );
    let r = post(
        &sim,
        "/nodes/pve1/qemu/100/move_disk",
        "disk=scsi0&storage=nfs-images&delete=1",
    )
    .await;
    assert_eq!(
        message(&r),
        "you can't move a disk with snapshots and delete the source\n"
    );
    let r = post(
        &sim,
        "/nodes/pve2/qemu/103/move_disk",
        "disk=scsi0&storage=nfs-images",
    )
    .await;
    assert_eq!(message(&r), "VM is locked (backup)\n");
    let r = as_auditor(
        &sim,
        "POST",
        "/nodes/pve1/qemu/100/move_disk",
        "disk=scsi0&storage=nfs-images",
    )
    .await;
    assert_eq!(
        message(&r),
        "Permission check failed (/vms/100, VM.Config.Disk)\n"
    );
    // Another task holding the config file lock fails the move's task.
    sim.set_task_duration_for("qmstart", Duration::from_secs(3600));
    let start = upid(&post(&sim, "/nodes/pve1/qemu/104/status/start", "").await);
    let t = run(&sim, mv("disk=scsi0&storage=nfs-images").await).await;
    assert_eq!(
        t.exitstatus.as_deref(),
        Some("can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout")
    );
    delete(&sim, &format!("/nodes/pve1/tasks/{start}"))
        .await
        .data();
    // A stopped move leaves the disk where it was.
    sim.set_task_duration_for("qmmove", Duration::from_secs(3600));
    let u = upid(&mv("disk=scsi0&storage=nfs-images").await);
    assert_eq!(
        delete(&sim, &format!("/nodes/pve1/tasks/{u}")).await.status,
        200
    );
    let t = sim.task(&u).unwrap();
    assert_eq!(t.exitstatus.as_deref(), Some("interrupted by signal"));
    assert_eq!(
        sim.guest(104).unwrap().config["scsi0"],
        "local-lvm:vm-104-disk-0,iothread=1,size=64G"
    );
    // Schema: the disk and format enums.
    let r = mv("disk=scsi99&storage=nfs-images").await;
    assert_eq!(r.status, 400);
    let r = mv("disk=scsi0&storage=nfs-images&format=qed").await;
    assert_eq!(r.status, 400);
    assert!(
        r.json()["errors"]["format"]
            .as_str()
            .unwrap()
            .starts_with("value 'qed' does not have a value in the enumeration")
    );
    only_violations(
        &sim,
        &[
            "POST /nodes/pve1/qemu/104/move_disk: disk:",
            "POST /nodes/pve1/qemu/104/move_disk: format:",
        ],
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn disks_move_to_other_guests() {
    let sim = sim().await;
    sim.set_task_duration(Duration::from_millis(50));
    let r = post(
        &sim,
        "/nodes/pve1/qemu/104/move_disk",
        "disk=scsi0&target-vmid=101",
    )
    .await;
    let u = upid(&r);
    assert!(u.contains(":qmmove:104-scsi0>101-scsi0:"), "{u}");
    let t = finished(&sim, &u).await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert_eq!(
        t.log[..4],
        [
            "reassign disk 'scsi0' from VM '104' as 'scsi0' to VM '101'",
            "  Renamed \"vm-104-disk-0\" to \"vm-101-disk-2\" in volume group \"pve\"",
            "removing disk 'scsi0' from boot order config",
            "removing disk 'scsi0' from VM '104' config",
        ]
    );
    let (src, dst) = (sim.guest(104).unwrap(), sim.guest(101).unwrap());
    assert!(src.config.get("scsi0").is_none());
    assert_eq!(src.config["boot"], "order=ide2;net0");
    assert_eq!(
        dst.config["scsi0"],
        "local-lvm:vm-101-disk-2,iothread=1,size=64G"
    );
    assert!(volids(&sim, "local-lvm", 104).await.is_empty());
    assert!(
        volids(&sim, "local-lvm", 101)
            .await
            .contains(&"local-lvm:vm-101-disk-2".to_string())
    );
    for (path, form, text) in [
        (
            "/nodes/pve1/qemu/101/move_disk",
            "disk=virtio1&target-vmid=104",
            "Cannot move disk to another VM while the source VM is running - detach first\n",
        ),
        (
            "/nodes/pve1/qemu/101/move_disk",
            "disk=scsi0&target-vmid=104&target-disk=scsi0",
            "Cannot move disk to another VM while the source VM is running - detach first\n",
        ),
        (
            "/nodes/pve1/qemu/104/move_disk",
            "disk=ide2&target-vmid=101&target-disk=virtio0",
            "Target disk key 'virtio0' is already in use for VM '101'\n",
        ),
        (
            "/nodes/pve1/qemu/104/move_disk",
            "disk=ide2&target-vmid=101&target-disk=ide3",
            "CD drive contents can't be moved to another VM\n",
        ),
        (
            "/nodes/pve1/qemu/104/move_disk",
            "disk=ide2&target-vmid=110",
            "Both VMs need to be on the same node (pve1 != pve2)\n",
        ),
        (
            "/nodes/pve1/qemu/104/move_disk",
            "disk=ide2&target-vmid=900",
            "Can't move disks from or to template VMs\n",
        ),
        (
            "/nodes/pve1/qemu/104/move_disk",
            "disk=ide2&target-vmid=555",
            "could not find target VM 555\n",
        ),
        (
            "/nodes/pve1/qemu/100/move_disk",
            "disk=scsi0&target-vmid=104",
            "Can't move disk used by a snapshot to another VM\n",
        ),
        (
            "/nodes/pve1/qemu/104/move_disk",
            "disk=scsi3&target-vmid=101",
            "Disk 'scsi3' for VM '104' does not exist\n",
        ),
    ] {
        let r = post(&sim, path, form).await;
        assert_eq!((r.status, message(&r)), (500, text.to_string()), "{form}");
    }
    let r = post(
        &sim,
        "/nodes/pve1/qemu/104/move_disk",
        "disk=ide2&target-vmid=104",
    )
    .await;
    assert_eq!(
        r.json()["errors"]["target-vmid"],
        "must be different than source VMID to reassign disk"
    );
    no_violations(&sim);
    sim.shutdown().await;
}

#[tokio::test]
async fn container_volumes_move() {
    let sim = sim().await;
    sim.set_task_duration_for("move_volume", Duration::from_secs(2));
    let u = upid(
        &post(
            &sim,
            "/nodes/pve1/lxc/108/move_volume",
            "volume=rootfs&storage=nfs-images",
        )
        .await,
    );
    assert!(u.contains(":move_volume:108:"), "{u}");
    // The `disk` lock holds the container while it copies.
    assert_eq!(sim.guest(108).unwrap().lock.as_deref(), Some("disk"));
    let r = put(&sim, "/nodes/pve1/lxc/108/config", "cores=2").await;
    assert_eq!(message(&r), "CT is locked (disk)\n");
    let t = finished(&sim, &u).await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert_eq!(
        t.log[..2],
        [
            "Formatting '/mnt/pve/nfs-images/images/108/vm-108-disk-0.raw', fmt=raw size=68719476736",
            "Creating filesystem with 16777216 4k blocks and 4194304 inodes",
        ]
    );
    assert!(t.log.iter().any(|l| l.starts_with("total size is ")));
    let g = sim.guest(108).unwrap();
    assert_eq!(g.lock, None);
    assert_eq!(
        g.config["rootfs"],
        "nfs-images:108/vm-108-disk-0.raw,size=64G"
    );
    assert_eq!(g.config["unused0"], "local-lvm:vm-108-disk-0");
    let nfs = data(&sim, "/nodes/pve1/storage/nfs-images/content?vmid=108").await;
    assert_eq!(
        (&nfs[0]["content"], &nfs[0]["format"]),
        (&json!("rootdir"), &json!("raw"))
    );

    // Back, deleting the copy.
    sim.set_task_duration_for("move_volume", Duration::from_millis(50));
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/lxc/108/move_volume",
            "volume=rootfs&storage=local-lvm&delete=1",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert_eq!(
        sim.guest(108).unwrap().config["rootfs"],
        "local-lvm:vm-108-disk-1,size=64G"
    );
    assert!(volids(&sim, "nfs-images", 108).await.is_empty());

    // Refusals before the task.
    for (path, form, text) in [
        (
            "/nodes/pve1/lxc/106/move_volume",
            "volume=rootfs&storage=nfs-images",
            "cannot move volumes of a running container\n",
        ),
        (
            "/nodes/pve1/lxc/108/move_volume",
            "volume=unused0&storage=nfs-images",
            "cannot move volume 'unused0', only configured volumes can be moved to another storage\n",
        ),
        (
            "/nodes/pve1/lxc/108/move_volume",
            "volume=rootfs&storage=nfs-images&target-vmid=200",
            "either set storage or target-vmid, but not both\n",
        ),
        (
            "/nodes/pve1/lxc/108/move_volume",
            "volume=rootfs&target-vmid=200",
            "Cannot move to/from 'rootfs'\n",
        ),
    ] {
        let r = post(&sim, path, form).await;
        assert_eq!((r.status, message(&r)), (500, text.to_string()), "{form}");
    }
    let r = post(
        &sim,
        "/nodes/pve1/lxc/108/move_volume",
        "volume=mp3&storage=nfs-images",
    )
    .await;
    assert_eq!((r.status, message(&r)), (500, "format error\n".to_string()));
    assert_eq!(
        r.json()["errors"]["volume"],
        "property is missing and it is not optional"
    );
    // The target storage is checked in the task.
    for (storage, text) in [
        (
            "local",
            "content type 'rootdir' is not available or configured on storage 'local'",
        ),
        ("nope", "storage 'nope' does not exist"),
    ] {
        let t = run(
            &sim,
            post(
                &sim,
                "/nodes/pve1/lxc/108/move_volume",
                &format!("volume=rootfs&storage={storage}"),
            )
            .await,
        )
        .await;
        assert_eq!(t.exitstatus.as_deref(), Some(text));
        assert_eq!(sim.guest(108).unwrap().lock, None, "the lock goes");
    }
    no_violations(&sim);
    sim.shutdown().await;
}
