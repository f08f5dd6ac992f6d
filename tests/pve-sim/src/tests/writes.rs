//! The write endpoints over real HTTPS: state transitions, tasks and their
//! logs, locks, digests, PVE's error texts and the wire rules.

use super::calls::*;
use super::*;
use crate::testing::wait_until;

#[tokio::test]
async fn power_actions_change_state_through_tasks() {
    let sim = sim().await;
    sim.set_task_duration(Duration::from_millis(400));
    // qemu start: a running task, then a running guest.
    let r = post(&sim, "/nodes/pve1/qemu/104/status/start", "").await;
    let u = upid(&r);
    let parts: Vec<&str> = u.split(':').collect();
    assert_eq!(parts[1], "pve1");
    assert_eq!(&parts[5..8], ["qmstart", "104", "root@pam!mcp"]);
    let st = get(
        &sim,
        &format!("/api2/json/nodes/pve1/tasks/{u}/status"),
        ADMIN,
    )
    .await
    .data();
    assert_eq!(st["status"], "running");
    assert_eq!(st["type"], "qmstart");
    assert_eq!(st["tokenid"], "mcp");
    assert_eq!(status(&sim, 104), "stopped");
    // A second action meanwhile waits for the config file lock in vain.
    let second = run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/104/status/stop", "").await,
    )
    .await;
    assert_eq!(
        second.exitstatus.as_deref(),
        Some("can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout")
    );
    let t = finished(&sim, &u).await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert_eq!(status(&sim, 104), "running");
    let st = get(
        &sim,
        &format!("/api2/json/nodes/pve1/tasks/{u}/status"),
        ADMIN,
    )
    .await
    .data();
    assert_eq!(
        (st["status"].as_str(), st["exitstatus"].as_str()),
        (Some("stopped"), Some("OK"))
    );
    let log = get(&sim, &format!("/api2/json/nodes/pve1/tasks/{u}/log"), ADMIN).await;
    let lines = log.data();
    assert_eq!(lines.as_array().unwrap().last().unwrap()["t"], "TASK OK");
    let cur = get(&sim, "/api2/json/nodes/pve1/qemu/104/status/current", ADMIN)
        .await
        .data();
    assert_eq!(cur["status"], "running");
    assert_eq!(cur["qmpstatus"], "running");

    // qemu reports "already running" in the task.
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/104/status/start", "").await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("VM 104 already running"));
    assert_eq!(t.log.last().unwrap(), "TASK ERROR: VM 104 already running");

    // suspend / resume / reboot / shutdown.
    run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/104/status/suspend", "").await,
    )
    .await;
    assert_eq!(status(&sim, 104), "paused");
    let r = post(&sim, "/nodes/pve1/qemu/104/status/shutdown", "").await;
    assert_eq!(r.status, 500);
    assert_eq!(message(&r), "VM is paused - cannot shutdown\n");
    run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/104/status/resume", "").await,
    )
    .await;
    assert_eq!(status(&sim, 104), "running");
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/104/status/reboot", "timeout=30").await,
    )
    .await;
    assert_eq!(t.task_type, "qmreboot");
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu/104/status/shutdown",
            "timeout=60&forceStop=1",
        )
        .await,
    )
    .await;
    assert_eq!(
        (t.task_type.as_str(), t.exitstatus.as_deref()),
        ("qmshutdown", Some("OK"))
    );
    assert_eq!(status(&sim, 104), "stopped");
    let r = post(&sim, "/nodes/pve1/qemu/104/status/resume", "").await;
    assert_eq!(
        (r.status, message(&r)),
        (500, "VM 104 not running\n".to_string())
    );
    // Hibernation locks the VM `suspended`; start resumes it.
    run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/101/status/suspend", "todisk=1").await,
    )
    .await;
    let g = sim.guest(101).unwrap();
    assert_eq!(
        (g.status, g.lock.as_deref()),
        ("stopped", Some("suspended"))
    );
    run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/101/status/start", "").await,
    )
    .await;
    let g = sim.guest(101).unwrap();
    assert_eq!((g.status, g.lock), ("running", None));

    // lxc checks before forking.
    let r = post(&sim, "/nodes/pve1/lxc/108/status/shutdown", "").await;
    assert_eq!(
        (r.status, message(&r)),
        (500, "CT 108 not running\n".to_string())
    );
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/lxc/108/status/start", "").await,
    )
    .await;
    assert_eq!(t.task_type, "vzstart");
    assert_eq!(status(&sim, 108), "running");
    let r = post(&sim, "/nodes/pve1/lxc/108/status/start", "").await;
    assert_eq!(
        (r.status, message(&r)),
        (500, "CT 108 already running\n".to_string())
    );
    run(
        &sim,
        post(&sim, "/nodes/pve1/lxc/108/status/stop", "").await,
    )
    .await;
    assert_eq!(status(&sim, 108), "stopped");
    // The guest must be on the node named in the path.
    let r = post(&sim, "/nodes/pve2/qemu/104/status/start", "").await;
    assert_eq!(
        message(&r),
        "Configuration file 'nodes/pve2/qemu-server/104.conf' does not exist\n"
    );
    no_violations(&sim);
    sim.shutdown().await;
}

#[tokio::test]
async fn ha_guests_get_queued_ha_tasks() {
    let sim = sim().await;
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/100/status/shutdown", "").await,
    )
    .await;
    assert_eq!(t.task_type, "hastop");
    assert_eq!(t.log[0], "Requesting HA stop for VM 100");
    assert_eq!(sim.guest(100).unwrap().ha_state.as_deref(), Some("stopped"));
    // The HA manager then stops the guest in a task of its own.
    let lrm = wait_until(
        "the HA manager's task",
        Duration::from_secs(20),
        async || {
            let c = get(
                &sim,
                "/api2/json/nodes/pve1/tasks?typefilter=qmshutdown&vmid=100",
                ADMIN,
            )
            .await
            .data();
            c.as_array().and_then(|a| {
                a.iter()
                    .find(|t| t["user"] == "root@pam" && t["status"] == "OK")
                    .cloned()
            })
        },
    )
    .await;
    assert_eq!(lrm["type"], "qmshutdown");
    assert_eq!(status(&sim, 100), "stopped");
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/lxc/106/status/stop", "").await,
    )
    .await;
    assert_eq!(t.task_type, "hastop");
    assert_eq!(t.log[0], "Requesting HA stop for CT 106");
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/100/status/start", "").await,
    )
    .await;
    assert_eq!(t.task_type, "hastart");
    wait_until("VM 100 to run again", Duration::from_secs(20), async || {
        (status(&sim, 100) == "running").then_some(())
    })
    .await;
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/100/migrate", "target=pve2&online=1").await,
    )
    .await;
    assert_eq!(t.task_type, "hamigrate");
    assert_eq!(t.log[0], "Requesting HA migration for VM 100 to node pve2");
    sim.shutdown().await;
}

#[tokio::test]
async fn snapshots_appear_and_go_and_hold_their_lock() {
    let sim = sim().await;
    sim.set_task_duration_for("qmsnapshot", Duration::from_secs(2));
    let before = sim.guest(104).unwrap().digest;
    let r = post(
        &sim,
        "/nodes/pve1/qemu/104/snapshot",
        "snapname=pre-upgrade&description=before+the+upgrade",
    )
    .await;
    let u = upid(&r);
    assert_eq!(sim.guest(104).unwrap().lock.as_deref(), Some("snapshot"));
    let cfg = get(&sim, "/api2/json/nodes/pve1/qemu/104/config", ADMIN)
        .await
        .data();
    assert_eq!(cfg["lock"], "snapshot");
    // Another action on the locked guest fails with PVE's text.
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/104/status/start", "").await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("VM is locked (snapshot)"));
    let t = finished(&sim, &u).await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert!(
        t.log
            .iter()
            .any(|l| l.contains("snap_vm-104-disk-0_pre-upgrade")),
        "{:?}",
        t.log
    );
    let g = sim.guest(104).unwrap();
    assert_eq!(g.snapshots, ["pre-upgrade"]);
    assert_eq!(g.parent.as_deref(), Some("pre-upgrade"));
    assert_eq!(g.lock, None);
    assert_ne!(g.digest, before);
    let list = get(&sim, "/api2/json/nodes/pve1/qemu/104/snapshot", ADMIN)
        .await
        .data();
    let snap = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "pre-upgrade")
        .unwrap();
    assert_eq!(snap["description"], "before the upgrade");
    assert_eq!(snap["vmstate"], 0);
    // Reserved and used names.
    let r = post(&sim, "/nodes/pve1/qemu/104/snapshot", "snapname=current").await;
    assert_eq!(
        message(&r),
        "unable to use snapshot name 'current' (reserved name)\n"
    );
    let r = post(&sim, "/nodes/pve1/qemu/104/snapshot", "snapname=Pending").await;
    assert_eq!(r.status, 500);
    sim.set_task_duration_for("qmsnapshot", Duration::from_millis(50));
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu/104/snapshot",
            "snapname=pre-upgrade",
        )
        .await,
    )
    .await;
    assert_eq!(
        t.exitstatus.as_deref(),
        Some("snapshot name 'pre-upgrade' already used")
    );
    // lxc has no vmstate.
    let r = post(
        &sim,
        "/nodes/pve1/lxc/108/snapshot",
        "snapname=s1&vmstate=1",
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.json()["errors"]["vmstate"].is_string());

    // Rollback to a snapshot with RAM starts the VM.
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu/100/snapshot/kernel_617/rollback",
            "",
        )
        .await,
    )
    .await;
    assert_eq!(
        (t.task_type.as_str(), t.exitstatus.as_deref()),
        ("qmrollback", Some("OK"))
    );
    assert_eq!(status(&sim, 100), "running");
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu/100/snapshot/pre_upgrade/rollback",
            "",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    let g = sim.guest(100).unwrap();
    assert_eq!(
        (g.status, g.parent.as_deref()),
        ("stopped", Some("pre_upgrade"))
    );
    let r = post(&sim, "/nodes/pve1/qemu/100/snapshot/nope/rollback", "").await;
    assert_eq!(message(&r), "snapshot 'nope' does not exist\n");

    // Delete: children move up to the deleted snapshot's parent.
    let t = run(
        &sim,
        delete(&sim, "/nodes/pve1/qemu/100/snapshot/post_upgrade").await,
    )
    .await;
    assert_eq!(t.task_type, "qmdelsnapshot");
    let cfg = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/100/config?snapshot=kernel_617",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(cfg["parent"], "pre_upgrade");
    assert!(
        !sim.guest(100)
            .unwrap()
            .snapshots
            .contains(&"post_upgrade".to_string())
    );
    let t = run(
        &sim,
        delete(
            &sim,
            "/nodes/pve1/lxc/106/snapshot/before_bind_update?force=1",
        )
        .await,
    )
    .await;
    assert_eq!(t.task_type, "vzdelsnapshot");
    assert!(sim.guest(106).unwrap().snapshots.is_empty());
    only_violations(&sim, &["POST /nodes/pve1/lxc/108/snapshot: vmstate:"]);
    sim.shutdown().await;
}

#[tokio::test]
async fn clone_creates_guests_with_progress() {
    let sim = sim().await;
    let r = post(
        &sim,
        "/nodes/pve1/qemu/104/clone",
        "newid=150&name=dev-clone&full=1&storage=local-lvm",
    )
    .await;
    let u = upid(&r);
    assert!(u.contains(":qmclone:104:"), "{u}");
    // The new guest's config exists at once, locked.
    let g = sim.guest(150).expect("clone exists while it is made");
    assert_eq!(g.lock.as_deref(), Some("clone"));
    let t = finished(&sim, &u).await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert_eq!(
        t.log[0],
        "create full clone of drive scsi0 (local-lvm:vm-104-disk-0)"
    );
    assert!(
        t.log
            .iter()
            .any(|l| l == "transferred 64.00 GiB of 64.00 GiB (100.00%)"),
        "{:?}",
        t.log
    );
    let g = sim.guest(150).unwrap();
    assert_eq!(
        (g.status, g.lock.as_deref(), g.name.as_deref()),
        ("stopped", None, Some("dev-clone"))
    );
    assert_eq!(
        g.config["scsi0"],
        "local-lvm:vm-150-disk-0,iothread=1,size=64G"
    );
    let content = get(
        &sim,
        "/api2/json/nodes/pve1/storage/local-lvm/content?vmid=150",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(content[0]["volid"], "local-lvm:vm-150-disk-0");
    let list = get(&sim, "/api2/json/cluster/resources?type=vm", ADMIN)
        .await
        .data();
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|e| e["id"] == "qemu/150" && e["name"] == "dev-clone")
    );

    // Onto an existing vmid, and linked clones of non-templates.
    let r = post(&sim, "/nodes/pve1/qemu/104/clone", "newid=101").await;
    assert_eq!(
        message(&r),
        "unable to create VM 101: config file already exists\n"
    );
    let r = post(&sim, "/nodes/pve1/qemu/104/clone", "newid=152&full=0").await;
    assert_eq!(
        message(&r),
        "Linked clone feature is not supported for drive 'scsi0'\n"
    );
    let r = post(&sim, "/nodes/pve1/qemu/104/clone", "newid=152&target=pve2").await;
    assert_eq!(
        message(&r),
        "can't clone VM to node 'pve2' (VM uses local storage)\n"
    );
    let r = post(
        &sim,
        "/nodes/pve1/qemu/104/clone",
        "newid=152&name=bad_name",
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(
        r.json()["errors"]["name"]
            .as_str()
            .unwrap()
            .contains("DNS name")
    );

    // lxc: hostname, linked clone of a template, running CT needs a snapshot.
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/lxc/200/clone",
            "newid=151&hostname=ct-clone",
        )
        .await,
    )
    .await;
    assert_eq!(t.task_type, "vzclone");
    assert!(
        t.log[0].starts_with("create linked clone of mountpoint rootfs"),
        "{:?}",
        t.log
    );
    let g = sim.guest(151).unwrap();
    assert_eq!(
        (g.vm_type, g.name.as_deref(), g.template),
        ("lxc", Some("ct-clone"), false)
    );
    let r = post(&sim, "/nodes/pve1/lxc/106/clone", "newid=153&full=1").await;
    assert_eq!(
        message(&r),
        "Cannot do full clones on a running container without snapshots\n"
    );
    let r = post(&sim, "/nodes/pve1/lxc/106/clone", "newid=153&name=x").await;
    assert_eq!(r.status, 400, "lxc has hostname, not name");
    only_violations(
        &sim,
        &[
            "POST /nodes/pve1/qemu/104/clone: name:",
            "POST /nodes/pve1/lxc/106/clone: name:",
        ],
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn create_and_restore_guests() {
    let sim = sim().await;
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu",
            "vmid=160&name=new-vm&memory=4096&cores=2&sockets=1&ostype=l26\
             &scsi0=local-lvm%3A8&net0=virtio%2Cbridge%3Dvmbr0&ide2=none%2Cmedia%3Dcdrom",
        )
        .await,
    )
    .await;
    assert_eq!(
        (t.task_type.as_str(), t.exitstatus.as_deref()),
        ("qmcreate", Some("OK"))
    );
    assert!(
        t.log
            .iter()
            .any(|l| l == "  Logical volume \"vm-160-disk-0\" created.")
    );
    let g = sim.guest(160).unwrap();
    assert_eq!(g.config["scsi0"], "local-lvm:vm-160-disk-0,size=8G");
    let net = g.config["net0"].as_str().unwrap();
    assert!(
        net.starts_with("virtio=BC:24:11:") && net.ends_with(",bridge=vmbr0"),
        "{net}"
    );
    assert_eq!(g.config["memory"], "4096");
    assert_eq!(g.config["cores"], 2);
    assert_eq!((g.status, g.maxdisk), ("stopped", 8 << 30));
    let r = post(&sim, "/nodes/pve1/qemu", "vmid=101&name=taken").await;
    assert_eq!(
        message(&r),
        "unable to create VM 101 - VM 101 already exists on node 'pve1'\n"
    );
    let r = post(&sim, "/nodes/pve1/qemu", "vmid=161&args=-no-reboot").await;
    assert_eq!(message(&r), "only root can set 'args' config\n");

    // lxc: template volid, default 4 GiB rootfs, start=1.
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/lxc",
            "vmid=161&ostemplate=local%3Avztmpl%2Fdebian-12-standard_12.12-1_amd64.tar.zst\
             &hostname=new-ct&storage=local-lvm&memory=1024&password=s3cret-pw\
             &net0=name%3Deth0%2Cbridge%3Dvmbr0%2Cip%3Ddhcp&start=1",
        )
        .await,
    )
    .await;
    assert_eq!(
        (t.task_type.as_str(), t.exitstatus.as_deref()),
        ("vzcreate", Some("OK"))
    );
    let g = sim.guest(161).unwrap();
    assert_eq!(g.config["rootfs"], "local-lvm:vm-161-disk-0,size=4G");
    assert_eq!(g.config["ostype"], "debian");
    assert!(g.config.get("password").is_none(), "secrets are not config");
    assert_eq!((g.status, g.name.as_deref()), ("running", Some("new-ct")));
    let r = post(
        &sim,
        "/nodes/pve1/lxc",
        "vmid=162&ostemplate=local%3Avztmpl%2Fnope.tar.zst",
    )
    .await;
    assert_eq!(r.status, 500);

    // Restore a backup to a new vmid, and over an existing guest only with force.
    let archive = "nfs-backup%3Abackup%2Fvzdump-qemu-100-2026_11_28-01_00_03.vma.zst";
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu",
            &format!("vmid=170&archive={archive}"),
        )
        .await,
    )
    .await;
    assert_eq!(
        (t.task_type.as_str(), t.exitstatus.as_deref()),
        ("qmrestore", Some("OK"))
    );
    assert!(
        t.log.iter().any(|l| l.starts_with("progress 100%")),
        "{:?}",
        t.log
    );
    let g = sim.guest(170).unwrap();
    assert_eq!(g.name.as_deref(), Some("web-frontend-01"));
    assert_eq!(
        g.config["scsi0"],
        "local-lvm:vm-170-disk-0,iothread=1,size=32G"
    );
    let r = post(
        &sim,
        "/nodes/pve1/qemu",
        &format!("vmid=104&archive={archive}"),
    )
    .await;
    assert_eq!(
        message(&r),
        "unable to restore VM 104 - VM 104 already exists on node 'pve1'\n"
    );
    let r = post(
        &sim,
        "/nodes/pve1/qemu",
        &format!("vmid=170&archive={archive}&scsi0=local-lvm%3A4"),
    )
    .await;
    assert_eq!(
        r.json()["errors"]["scsi0"],
        "option conflicts with option 'archive'"
    );
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu",
            &format!("vmid=104&archive={archive}&force=1"),
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert_eq!(
        sim.guest(104).unwrap().name.as_deref(),
        Some("web-frontend-01")
    );
    let r = post(
        &sim,
        "/nodes/pve1/qemu",
        &format!("vmid=101&archive={archive}&force=1"),
    )
    .await;
    assert_eq!(message(&r), "unable to restore VM 101 - vm is running\n");
    let ct = "nfs-backup%3Abackup%2Fvzdump-lxc-106-2026_11_28-01_18_22.tar.zst";
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/lxc",
            &format!("vmid=171&ostemplate={ct}&restore=1"),
        )
        .await,
    )
    .await;
    assert_eq!(
        (t.task_type.as_str(), t.exitstatus.as_deref()),
        ("vzrestore", Some("OK"))
    );
    assert_eq!(
        sim.guest(171).unwrap().name.as_deref(),
        Some("dns-resolver-01")
    );
    no_violations(&sim);
    sim.shutdown().await;
}

#[tokio::test]
async fn migrations_move_guests() {
    let sim = sim().await;
    let r = post(&sim, "/nodes/pve1/qemu/104/migrate", "target=pve1").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["errors"]["target"], "target is local node.");
    let r = post(&sim, "/nodes/pve1/qemu/101/migrate", "target=pve2").await;
    assert_eq!(message(&r), "can't migrate running VM without --online\n");
    let r = post(&sim, "/nodes/pve1/qemu/104/migrate", "target=nowhere").await;
    assert_eq!(message(&r), "no such cluster node 'nowhere'\n");

    // Offline: disks copied, the guest moves.
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/104/migrate", "target=pve2").await,
    )
    .await;
    assert_eq!(
        (t.task_type.as_str(), t.exitstatus.as_deref()),
        ("qmigrate", Some("OK"))
    );
    assert!(
        t.log[0].ends_with("starting migration of VM 104 to node 'pve2' (192.0.2.12)"),
        "{:?}",
        t.log
    );
    assert!(
        t.log
            .iter()
            .any(|l| l.ends_with("migration finished successfully (duration 00:00:16)"))
    );
    assert_eq!(sim.guest(104).unwrap().node, "pve2");
    let r = get(&sim, "/api2/json/nodes/pve1/qemu/104/config", ADMIN).await;
    assert_eq!(r.status, 500);
    assert_eq!(
        get(&sim, "/api2/json/nodes/pve2/qemu/104/config", ADMIN)
            .await
            .status,
        200
    );
    let disks = get(
        &sim,
        "/api2/json/nodes/pve2/storage/local-lvm/content?vmid=104",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(disks.as_array().unwrap().len(), 1);

    // Live with local disks needs with-local-disks.
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/101/migrate", "target=pve2&online=1").await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("migration aborted"));
    assert!(t.log.iter().any(|l| {
        l.contains("can't live migrate attached local disks without with-local-disks option")
    }));
    assert_eq!(sim.guest(101).unwrap().node, "pve1");
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/qemu/101/migrate",
            "target=pve2&online=1&with-local-disks=1",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert!(
        t.log
            .iter()
            .any(|l| l.contains("drive-virtio0: transferred") && l.contains("(100.00%)")),
        "{:?}",
        t.log
    );
    assert!(
        t.log
            .iter()
            .any(|l| l.contains("migration active, transferred"))
    );
    let g = sim.guest(101).unwrap();
    assert_eq!((g.node.as_str(), g.status), ("pve2", "running"));
    // To an offline node the task fails.
    let t = run(
        &sim,
        post(&sim, "/nodes/pve2/qemu/104/migrate", "target=pve3").await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("migration aborted"));

    // lxc: restart mode; online is not implemented.
    let r = post(&sim, "/nodes/pve2/lxc/107/migrate", "target=pve1").await;
    assert_eq!(
        message(&r),
        "can't migrate running container without --online or --restart\n"
    );
    let t = run(
        &sim,
        post(&sim, "/nodes/pve2/lxc/107/migrate", "target=pve1&online=1").await,
    )
    .await;
    assert_eq!(
        t.exitstatus.as_deref(),
        Some("lxc live migration is currently not implemented")
    );
    let r = post(
        &sim,
        "/nodes/pve2/lxc/107/migrate",
        "target=pve1&with-local-disks=1",
    )
    .await;
    assert_eq!(r.status, 400, "lxc has no with-local-disks");
    let t = run(
        &sim,
        post(&sim, "/nodes/pve2/lxc/107/migrate", "target=pve1&restart=1").await,
    )
    .await;
    assert_eq!(
        (t.task_type.as_str(), t.exitstatus.as_deref()),
        ("vzmigrate", Some("OK"))
    );
    let g = sim.guest(107).unwrap();
    assert_eq!((g.node.as_str(), g.status), ("pve1", "running"));
    only_violations(
        &sim,
        &["POST /nodes/pve2/lxc/107/migrate: with-local-disks:"],
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn templates_are_made_of_stopped_guests_only() {
    let sim = sim().await;
    let r = post(&sim, "/nodes/pve1/qemu/101/template", "").await;
    assert_eq!(
        message(&r),
        "you can't convert a VM to template if VM is running\n"
    );
    let r = post(&sim, "/nodes/pve1/qemu/900/template", "").await;
    assert_eq!(message(&r), "you can't convert a template to a template\n");
    // A VM through its task.
    let t = run(&sim, post(&sim, "/nodes/pve1/qemu/104/template", "").await).await;
    assert_eq!(t.task_type, "qmtemplate");
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert!(sim.guest(104).unwrap().template);
    // A container with a snapshot stays what it is; without, it changes
    // at once (no task).
    run(
        &sim,
        post(&sim, "/nodes/pve1/lxc/108/snapshot", "snapname=s1").await,
    )
    .await;
    let r = post(&sim, "/nodes/pve1/lxc/108/template", "").await;
    assert_eq!(
        message(&r),
        "you can't convert a CT to template if it has snapshots\n"
    );
    assert!(!sim.guest(108).unwrap().template);
    run(&sim, delete(&sim, "/nodes/pve1/lxc/108/snapshot/s1").await).await;
    let r = post(&sim, "/nodes/pve1/lxc/108/template", "").await;
    assert_eq!(r.data(), serde_json::Value::Null);
    assert!(sim.guest(108).unwrap().template);
    no_violations(&sim);
    sim.shutdown().await;
}

#[tokio::test]
async fn deletes_remove_guests() {
    let sim = sim().await;
    let r = delete(&sim, "/nodes/pve1/qemu/101").await;
    assert_eq!(message(&r), "VM 101 is running - destroy failed\n");
    let r = delete(&sim, "/nodes/pve1/qemu/100").await;
    assert_eq!(
        message(&r),
        "unable to remove VM 100 - used in HA resources and purge parameter not set.\n"
    );
    let r = delete(&sim, "/nodes/pve1/lxc/106?purge=1").await;
    assert_eq!(
        message(&r),
        "unable to destroy CT 106 - container is running\n"
    );
    // Protection.
    assert_eq!(
        put(&sim, "/nodes/pve1/qemu/104/config", "protection=1")
            .await
            .status,
        200
    );
    let r = delete(&sim, "/nodes/pve1/qemu/104").await;
    assert_eq!(
        message(&r),
        "can't remove VM 104 - protection mode enabled\n"
    );
    assert_eq!(
        put(&sim, "/nodes/pve1/qemu/104/config", "delete=protection")
            .await
            .status,
        200
    );

    sim.clear_requests();
    let t = run(
        &sim,
        delete(
            &sim,
            "/nodes/pve1/qemu/104?purge=1&destroy-unreferenced-disks=1",
        )
        .await,
    )
    .await;
    assert_eq!(
        (t.task_type.as_str(), t.exitstatus.as_deref()),
        ("qmdestroy", Some("OK"))
    );
    assert!(
        t.log
            .iter()
            .any(|l| l == "  Logical volume \"vm-104-disk-0\" successfully removed.")
    );
    assert!(sim.guest(104).is_none());
    let w = sim.writes();
    assert_eq!(w.len(), 1);
    assert_eq!(
        (w[0].method.as_str(), w[0].api_path()),
        ("DELETE", "/nodes/pve1/qemu/104".to_string())
    );
    assert_eq!(w[0].params["purge"], "1");
    assert_eq!(w[0].params["destroy-unreferenced-disks"], "1");
    let content = get(
        &sim,
        "/api2/json/nodes/pve1/storage/local-lvm/content?vmid=104",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(content, serde_json::json!([]));
    let backups = get(
        &sim,
        "/api2/json/nodes/pve1/storage/local/content?vmid=104",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(backups.as_array().unwrap().len(), 1, "backups stay");
    // lxc force stops a running CT first.
    let t = run(&sim, delete(&sim, "/nodes/pve1/lxc/108").await).await;
    assert_eq!(t.task_type, "vzdestroy");
    assert!(sim.guest(108).is_none());
    no_violations(&sim);
    sim.shutdown().await;
}

#[tokio::test]
async fn resize_grows_disks() {
    let sim = sim().await;
    let t = run(
        &sim,
        put(
            &sim,
            "/nodes/pve1/qemu/104/resize",
            "disk=scsi0&size=%2B10G",
        )
        .await,
    )
    .await;
    assert_eq!(
        (t.task_type.as_str(), t.exitstatus.as_deref()),
        ("resize", Some("OK"))
    );
    assert!(
        t.log
            .iter()
            .any(|l| l.contains("changed from 64.00 GiB") && l.contains("to 74.00 GiB"))
    );
    let g = sim.guest(104).unwrap();
    assert_eq!(g.maxdisk, 74 << 30);
    assert_eq!(
        g.config["scsi0"],
        "local-lvm:vm-104-disk-0,iothread=1,size=74G"
    );
    let cur = get(&sim, "/api2/json/nodes/pve1/qemu/104/status/current", ADMIN)
        .await
        .data();
    assert_eq!(cur["maxdisk"], 74u64 << 30);
    // qemu reports in the task; lxc before forking.
    let t = run(
        &sim,
        put(&sim, "/nodes/pve1/qemu/104/resize", "disk=scsi0&size=10G").await,
    )
    .await;
    assert_eq!(
        t.exitstatus.as_deref(),
        Some("shrinking disks is not supported")
    );
    let t = run(
        &sim,
        put(&sim, "/nodes/pve1/qemu/104/resize", "disk=ide2&size=%2B1G").await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("you can't resize a cdrom"));
    let t = run(
        &sim,
        put(&sim, "/nodes/pve1/qemu/104/resize", "disk=scsi5&size=%2B1G").await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("disk 'scsi5' does not exist"));
    let r = put(&sim, "/nodes/pve1/qemu/104/resize", "disk=scsi0&size=lots").await;
    assert_eq!(r.status, 400);
    let r = put(&sim, "/nodes/pve1/lxc/108/resize", "disk=rootfs&size=10G").await;
    assert_eq!(message(&r), "unable to shrink disk size\n");
    let r = put(&sim, "/nodes/pve1/lxc/108/resize", "disk=rootfs&size=64G").await;
    assert_eq!(message(&r), "disk is already at specified size\n");
    let stale = "0000000000000000000000000000000000000000";
    let r = put(
        &sim,
        "/nodes/pve1/lxc/108/resize",
        &format!("disk=rootfs&size=%2B1G&digest={stale}"),
    )
    .await;
    assert_eq!(
        message(&r),
        "detected modified configuration - file changed by other user? Try again.\n"
    );
    let t = run(
        &sim,
        put(&sim, "/nodes/pve1/lxc/108/resize", "disk=rootfs&size=%2B2G").await,
    )
    .await;
    assert!(t.log.iter().any(|l| l.starts_with("resize2fs")));
    assert_eq!(sim.guest(108).unwrap().maxdisk, 66 << 30);
    only_violations(&sim, &["PUT /nodes/pve1/qemu/104/resize: size:"]);
    sim.shutdown().await;
}

#[tokio::test]
async fn config_changes_check_the_digest() {
    let sim = sim().await;
    let cfg = get(&sim, "/api2/json/nodes/pve1/qemu/104/config", ADMIN)
        .await
        .data();
    let digest = cfg["digest"].as_str().unwrap().to_string();
    let r = put(
        &sim,
        "/nodes/pve1/qemu/104/config",
        &format!("name=sandbox-2&memory=8192&onboot=1&digest={digest}"),
    )
    .await;
    assert_eq!(r.data(), serde_json::Value::Null);
    let g = sim.guest(104).unwrap();
    assert_eq!(g.name.as_deref(), Some("sandbox-2"));
    assert_eq!(
        (g.config["memory"].as_str(), g.config["onboot"].as_i64()),
        (Some("8192"), Some(1))
    );
    assert_ne!(g.digest, digest);
    let cur = get(&sim, "/api2/json/nodes/pve1/qemu/104/status/current", ADMIN)
        .await
        .data();
    assert_eq!(
        (cur["name"].as_str(), cur["maxmem"].as_u64()),
        (Some("sandbox-2"), Some(8192 << 20))
    );
    // The old digest is stale now.
    let r = put(
        &sim,
        "/nodes/pve1/qemu/104/config",
        &format!("cores=4&digest={digest}"),
    )
    .await;
    assert_eq!(
        (r.status, message(&r)),
        (
            500,
            "checksum mismatch (file change by other user?)\n".to_string()
        )
    );
    let r = put(&sim, "/nodes/pve1/lxc/108/config", "cores=2&digest=abc").await;
    assert_eq!(
        message(&r),
        "detected modified configuration - file changed by other user? Try again.\n"
    );
    // delete, and the conflicts PVE refuses.
    assert_eq!(
        put(&sim, "/nodes/pve1/qemu/104/config", "delete=tags%2Conboot")
            .await
            .status,
        200
    );
    let g = sim.guest(104).unwrap();
    assert!(g.config.get("tags").is_none() && g.config.get("onboot").is_none());
    let r = put(&sim, "/nodes/pve1/qemu/104/config", "cores=4&delete=cores").await;
    assert_eq!(
        r.json()["errors"]["delete"],
        "you can't use '-cores' and -delete cores' at the same time"
    );
    let r = put(&sim, "/nodes/pve1/qemu/104/config", "").await;
    assert_eq!(message(&r), "no options specified\n");
    let r = put(&sim, "/nodes/pve1/qemu/104/config", "args=-no-reboot").await;
    assert_eq!(message(&r), "only root can set 'args' config\n");
    // A detached disk becomes unusedN; deleting that destroys it.
    assert_eq!(
        put(&sim, "/nodes/pve1/qemu/104/config", "delete=scsi0")
            .await
            .status,
        200
    );
    let g = sim.guest(104).unwrap();
    assert_eq!(g.config["unused0"], "local-lvm:vm-104-disk-0");
    assert_eq!(
        put(&sim, "/nodes/pve1/qemu/104/config", "delete=unused0")
            .await
            .status,
        200
    );
    let content = get(
        &sim,
        "/api2/json/nodes/pve1/storage/local-lvm/content?vmid=104",
        ADMIN,
    )
    .await
    .data();
    assert_eq!(content, serde_json::json!([]));
    // A locked guest refuses changes.
    sim.set_guest_lock(108, Some("backup"));
    let r = put(&sim, "/nodes/pve1/lxc/108/config", "cores=2").await;
    assert_eq!(message(&r), "CT is locked (backup)\n");
    sim.set_guest_lock(108, None);
    let t = put(
        &sim,
        "/nodes/pve1/lxc/108/config",
        "hostname=runner-2&memory=2048",
    )
    .await;
    assert_eq!(t.status, 200);
    assert_eq!(sim.guest(108).unwrap().config["memory"], 2048);

    // qemu POST: asynchronous, applied when its task ends.
    sim.set_task_duration_for("qmconfig", Duration::from_secs(2));
    let r = post(&sim, "/nodes/pve1/qemu/104/config", "cores=3").await;
    let u = upid(&r);
    assert!(u.contains(":qmconfig:104:"));
    assert_eq!(sim.guest(104).unwrap().config["cores"], 2);
    finished(&sim, &u).await;
    assert_eq!(sim.guest(104).unwrap().config["cores"], 3);
    sim.set_task_duration_for("qmconfig", Duration::from_millis(100));
    let r = post(
        &sim,
        "/nodes/pve1/qemu/104/config",
        "cores=5&background_delay=5",
    )
    .await;
    assert_eq!(
        r.data(),
        serde_json::Value::Null,
        "done within background_delay"
    );
    assert_eq!(sim.guest(104).unwrap().config["cores"], 5);
    no_violations(&sim);
    sim.shutdown().await;
}

#[tokio::test]
async fn vzdump_writes_backups_with_progress() {
    let sim = sim().await;
    sim.set_task_duration_for("vzdump", Duration::from_secs(2));
    let r = post(
        &sim,
        "/nodes/pve1/vzdump",
        "vmid=101&storage=nfs-backup&mode=snapshot&compress=zstd&remove=0\
         &notes-template=%7B%7Bguestname%7D%7D+ad-hoc",
    )
    .await;
    let u = upid(&r);
    assert!(u.contains(":vzdump:101:"), "{u}");
    assert_eq!(sim.guest(101).unwrap().lock.as_deref(), Some("backup"));
    // Progress appears while it runs.
    wait_until("a progress line", Duration::from_secs(20), async || {
        sim.task(&u)
            .filter(|t| t.running() && t.log.iter().any(|l| l.starts_with("INFO:  10% (")))
    })
    .await;
    let t = finished(&sim, &u).await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert!(t.log[0].starts_with("INFO: starting new backup job: vzdump 101 --storage nfs-backup"));
    assert!(t.log.iter().any(|l| l.starts_with("INFO: 100% (")));
    assert!(
        !t.log.iter().any(|l| l.contains("prune")),
        "remove=0 prunes nothing"
    );
    assert_eq!(
        t.log[t.log.len() - 2],
        "INFO: Backup job finished successfully"
    );
    assert_eq!(sim.guest(101).unwrap().lock, None);
    let list = get(
        &sim,
        "/api2/json/nodes/pve1/storage/nfs-backup/content?vmid=101",
        ADMIN,
    )
    .await
    .data();
    let newest = list
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["notes"] == "db-primary ad-hoc")
        .expect("the new backup is listed");
    assert_eq!(newest["format"], "vma.zst");
    assert_eq!(newest["subtype"], "qemu");
    // The default remove=1 prunes per the storage's retention.
    sim.set_task_duration_for("vzdump", Duration::from_millis(100));
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/vzdump", "vmid=108&storage=local").await,
    )
    .await;
    assert!(
        t.log
            .iter()
            .any(|l| l == "INFO: prune older backups with retention: keep-all=1")
    );
    // A locked guest fails the job.
    let t = run(
        &sim,
        post(&sim, "/nodes/pve2/vzdump", "vmid=103&storage=nfs-backup").await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("job errors"));
    assert!(
        t.log
            .iter()
            .any(|l| l == "ERROR: Backup of VM 103 failed - VM is locked (backup)")
    );
    // Guests on other nodes: the literal "OK", no task.
    let r = post(&sim, "/nodes/pve1/vzdump", "vmid=107&storage=nfs-backup").await;
    assert_eq!(r.data(), "OK");
    let r = post(&sim, "/nodes/pve1/vzdump", "vmid=101&storage=local-lvm").await;
    assert_eq!(
        message(&r),
        "can't use storage 'local-lvm' for backups - wrong content type\n"
    );
    no_violations(&sim);
    sim.shutdown().await;
}

#[tokio::test]
async fn nextid_and_stopping_tasks() {
    let sim = sim().await;
    assert_eq!(
        get(&sim, "/api2/json/cluster/nextid", ADMIN).await.data(),
        "111"
    );
    let r = get(&sim, "/api2/json/cluster/nextid?vmid=100", ADMIN).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["errors"]["vmid"], "VM 100 already exists");
    assert_eq!(
        get(&sim, "/api2/json/cluster/nextid?vmid=555", ADMIN)
            .await
            .data(),
        "555"
    );

    // A long clone, stopped: the half-made guest goes away.
    sim.set_task_duration(Duration::from_secs(3600));
    let u = upid(&post(&sim, "/nodes/pve1/qemu/104/clone", "newid=111").await);
    assert_eq!(
        get(&sim, "/api2/json/cluster/nextid", ADMIN).await.data(),
        "112"
    );
    assert_eq!(sim.running_tasks(), std::slice::from_ref(&u));
    let r = delete(&sim, &format!("/nodes/pve1/tasks/{}", u)).await;
    assert_eq!(r.data(), serde_json::Value::Null);
    let t = sim.task(&u).unwrap();
    assert_eq!(t.exitstatus.as_deref(), Some("interrupted by signal"));
    assert!(sim.guest(111).is_none());
    assert!(sim.running_tasks().is_empty());

    // A seeded task that has run since yesterday (no worker behind it)
    // ends the same way when stopped.
    let seeded = "UPID:pve2:002262DA:07641738:6B0B7910:vzdump:103:root@pam:";
    assert!(sim.task(seeded).expect("the seeded backup").running());
    let r = delete(&sim, &format!("/nodes/pve2/tasks/{seeded}")).await;
    assert_eq!(r.data(), serde_json::Value::Null);
    let t = sim.task(seeded).unwrap();
    assert_eq!(t.exitstatus.as_deref(), Some("interrupted by signal"));
    assert_eq!(
        t.log.last().map(String::as_str),
        Some("TASK ERROR: interrupted by signal")
    );
    no_violations(&sim);
    sim.shutdown().await;
}

#[tokio::test]
async fn wire_rules_and_permissions_for_writes() {
    let sim = sim().await;
    // Booleans must be 1/0 in a form; JSON true/false are fine.
    let r = post(
        &sim,
        "/nodes/pve1/qemu/104/status/shutdown",
        "forceStop=true",
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["forceStop"],
        "type check ('boolean') failed - got 'true'"
    );
    let r = send(
        &sim,
        "POST",
        "/api2/json/nodes/pve1/qemu/104/snapshot",
        &[("authorization", ADMIN)],
        Some(("application/json", br#"{"snapname":"j1","vmstate":false}"#)),
    )
    .await;
    upid(&r);
    // Unknown parameter, wrong type, out of range.
    let r = post(&sim, "/nodes/pve1/qemu/104/status/start", "bogus=1").await;
    assert!(
        r.json()["errors"]["bogus"]
            .as_str()
            .unwrap()
            .starts_with("property is not defined in schema")
    );
    let r = post(&sim, "/nodes/pve1/qemu/104/status/start", "timeout=soon").await;
    assert_eq!(
        r.json()["errors"]["timeout"],
        "type check ('integer') failed - got 'soon'"
    );
    let r = post(&sim, "/nodes/pve1/qemu/104/clone", "newid=99").await;
    assert_eq!(r.status, 400);
    assert!(r.json()["errors"]["newid"].is_string());
    // DELETE parameters go in the query: a body gets 501.
    let r = send(
        &sim,
        "DELETE",
        "/api2/json/nodes/pve1/qemu/104",
        &[("authorization", ADMIN)],
        Some((FORM, b"purge=1")),
    )
    .await;
    assert_eq!(
        (r.status, r.reason.as_deref()),
        (501, Some("Unexpected content for method 'DELETE'"))
    );
    assert!(sim.guest(104).is_some());
    // A chunked request body gets 501 too.
    let mut tls = tls_stream(&sim, "localhost").await;
    let raw = format!(
        "POST /api2/json/nodes/pve1/qemu/104/status/start HTTP/1.1\r\nHost: x\r\nAuthorization: {ADMIN}\r\n\
         Content-Type: {FORM}\r\nTransfer-Encoding: chunked\r\n\r\n3\r\na=1\r\n0\r\n\r\n"
    );
    tls.write_all(raw.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf);
    assert!(
        text.starts_with("HTTP/1.1 501 chunked transfer encoding not supported"),
        "{text}"
    );
    // Root-only options and privileges.
    let r = post(&sim, "/nodes/pve1/qemu/104/status/start", "skiplock=1").await;
    assert_eq!(
        r.json()["errors"]["skiplock"],
        "Only root may use this option."
    );
    let r = put(&sim, "/nodes/pve1/qemu/104/config", "cores=2&skiplock=1").await;
    assert_eq!(
        r.json()["errors"]["skiplock"],
        "Only root may use this option."
    );
    let r = send(
        &sim,
        "POST",
        "/api2/json/nodes/pve1/qemu/100/status/start",
        &[("authorization", AUDITOR)],
        None,
    )
    .await;
    assert_eq!(
        (r.status, message(&r)),
        (
            403,
            "Permission check failed (/vms/100, VM.PowerMgmt)\n".to_string()
        )
    );
    let r = send(
        &sim,
        "POST",
        "/api2/json/nodes/pve1/qemu",
        &[("authorization", AUDITOR)],
        Some((FORM, b"vmid=180")),
    )
    .await;
    assert_eq!(
        message(&r),
        "Permission check failed (/vms/180, VM.Allocate)\n"
    );
    let r = send(
        &sim,
        "PUT",
        "/api2/json/nodes/pve1/qemu/100/config",
        &[("authorization", AUDITOR)],
        Some((FORM, b"cores=2")),
    )
    .await;
    assert_eq!(r.status, 403);

    // The request log: method, decoded path, decoded parameters.
    sim.clear_requests();
    upid(
        &post(
            &sim,
            "/nodes/pve1/qemu/104/snapshot",
            "snapname=logged&description=a+b%26c",
        )
        .await,
    );
    get(&sim, "/api2/json/version", ADMIN).await;
    let w = sim.writes();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].method, "POST");
    assert_eq!(w[0].api_path(), "/nodes/pve1/qemu/104/snapshot");
    assert_eq!(
        w[0].params,
        [("description", "a b&c"), ("snapname", "logged")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    );
    assert_eq!(sim.requests().len(), 2);
    sim.shutdown().await;
}

#[tokio::test]
async fn schema_records_invalid_writes() {
    let Some(path) = schema_path() else {
        return;
    };
    let sim = Simulator::start(SimConfig {
        schema_path: Some(path),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let r = post(
        &sim,
        "/nodes/pve1/lxc/108/migrate",
        "target=pve2&with-local-disks=1",
    )
    .await;
    assert_eq!(r.status, 400);
    let v = sim.schema_violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].starts_with("POST /nodes/pve1/lxc/108/migrate: with-local-disks:"),
        "{v:?}"
    );
    sim.shutdown().await;
}
