//! Tools that make or change guests wholesale, against the stateful
//! simulator: clone (VM and container), create, set config, backup and
//! restore. Each new guest appears in the simulated cluster; refusals send
//! no write.

use serde_json::json;

use crate::actions::allow;
use crate::common::*;
use crate::policy_harness::*;

#[tokio::test]
async fn templates_are_cloned_into_vms_and_containers_and_a_taken_id_is_refused() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(&sim, &allow(&["pve_clone_vm"])).await;
        let out = p
            .server
            .ok(
                "pve_clone_vm",
                json!({"source_vmid": 900, "newid": 151, "name": "web-02", "full": true, "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["type"], "qmclone", "{out}");
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        let clone = sim.guest(151).expect("the clone exists");
        assert_eq!(clone.name.as_deref(), Some("web-02"));
        p.server
            .ok(
                "pve_clone_vm",
                json!({"source_vmid": 200, "newid": 152, "name": "ct-copy", "wait": true}),
            )
            .await;
        let ct = sim.guest(152).expect("the container clone exists");
        assert_eq!((ct.vm_type, ct.name.as_deref()), ("lxc", Some("ct-copy")));
        let sent = sim.writes();
        assert_eq!(sent[1].api_path(), "/nodes/pve1/lxc/200/clone");
        assert_eq!(sent[1].params["hostname"], "ct-copy");
        assert!(!sent[1].params.contains_key("name"));

        let message = p
            .server
            .err("pve_clone_vm", json!({"source_vmid": 900, "newid": 101}))
            .await;
        assert!(message.contains("newid 101 is taken"), "{message}");
        assert_eq!(sim.writes().len(), 2);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn vms_and_containers_are_created_and_config_changes_carry_the_digest() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(
            &sim,
            &allow(&["pve_create_qemu_vm", "pve_create_lxc", "pve_set_vm_config"]),
        )
        .await;
        let out = p
            .server
            .ok(
                "pve_create_qemu_vm",
                json!({"node": "pve1", "vmid": 153, "name": "new-vm", "memory": 2048, "cores": 2,
                       "scsi0": "local-lvm:8", "net0": "virtio,bridge=vmbr0", "ostype": "l26",
                       "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        assert_eq!(sim.guest(153).expect("created").name.as_deref(), Some("new-vm"));
        p.server
            .ok(
                "pve_create_lxc",
                json!({"node": "pve1", "vmid": 154, "hostname": "new-ct",
                       "ostemplate": "local:vztmpl/debian-12-standard_12.12-1_amd64.tar.zst",
                       "storage": "local-lvm", "memory": 512, "wait": true}),
            )
            .await;
        assert_eq!(sim.guest(154).expect("created").vm_type, "lxc");

        let digest = sim.guest(104).unwrap().digest;
        let out = p
            .server
            .ok(
                "pve_set_vm_config",
                json!({"vmid": 104, "config": {"memory": 4096, "onboot": true, "description": "set by an agent"}}),
            )
            .await;
        assert_eq!(out["sent"], true, "{out}");
        assert_eq!(out["task"], serde_json::Value::Null, "a PUT is synchronous: {out}");
        let config = sim.guest(104).unwrap().config;
        assert_eq!(config["memory"].to_string().trim_matches('"'), "4096", "{config}");
        let sent = sim.writes().pop().unwrap();
        assert_eq!(sent.method, "PUT");
        assert_eq!(sent.params["digest"], digest);
        assert_eq!(sent.params["onboot"], "1");

        for (tool, args, expected) in [
            (
                "pve_create_qemu_vm",
                json!({"node": "pve1", "vmid": 101}),
                "vmid 101 is taken",
            ),
            (
                "pve_create_lxc",
                json!({"node": "nowhere", "vmid": 160, "ostemplate": "local:vztmpl/x.tar.zst"}),
                "not a node of this cluster",
            ),
            (
                // Issue 21: a backup archive as the template would restore
                // it over the new vmid; refused before any request.
                "pve_create_lxc",
                json!({"node": "pve1", "vmid": 160,
                       "ostemplate": "local:backup/vzdump-lxc-102-2026_01_01-00_00_00.tar.zst"}),
                "ostemplate: \"local:backup/vzdump-lxc-102-2026_01_01-00_00_00.tar.zst\" is not a container template volume",
            ),
            (
                // Issue 21: 102.0 is refused at the argument check, not at
                // the gate.
                "pve_set_vm_config",
                json!({"vmid": 104.0, "config": {"onboot": true}}),
                "vmid: must be an integer written without a decimal point: send 104 instead of 104.0",
            ),
            (
                "pve_set_vm_config",
                json!({"vmid": 104, "config": {"hookscript": "local:snippets/x.sh"}}),
                "only root@pam",
            ),
        ] {
            let message = p.server.err(tool, args).await;
            assert!(message.contains(expected), "{expected}: {message}");
        }
        assert_eq!(sim.writes().len(), 3);
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_backup_keeps_older_ones_and_restores_to_a_new_guest_or_over_a_stopped_one() {
    within(async {
        let sim = simulator().await;
        let p = with_policy(
            &sim,
            &allow(&["pve_backup_vm", "pve_restore_vm"]),
        )
        .await;
        let out = p
            .server
            .ok(
                "pve_backup_vm",
                json!({"vmid": 104, "storage": "local", "notes": "before upgrade", "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["type"], "vzdump", "{out}");
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        let sent = sim.writes();
        assert_eq!(sent[0].api_path(), "/nodes/pve1/vzdump");
        assert_eq!(sent[0].params["remove"], "0");
        let backups = p
            .server
            .ok(
                "pve_list_backups",
                json!({"node": "pve1", "storage": "local", "vmid": 104}),
            )
            .await;
        let archive = backups["backups"][0]["volid"]
            .as_str()
            .expect("the new backup")
            .to_owned();

        let out = p
            .server
            .ok(
                "pve_restore_vm",
                json!({"archive": archive, "vmid": 155, "node": "pve1", "unique": true, "wait": true}),
            )
            .await;
        assert_eq!(out["task"]["type"], "qmrestore", "{out}");
        assert_eq!(out["task"]["end"]["outcome"], "ok", "{out}");
        assert!(sim.guest(155).is_some());

        // Over an existing guest only with force, and never a running one.
        let message = p
            .server
            .err(
                "pve_restore_vm",
                json!({"archive": archive, "vmid": 104, "node": "pve1"}),
            )
            .await;
        assert!(message.contains("force: true"), "{message}");
        let message = p
            .server
            .err(
                "pve_restore_vm",
                json!({"archive": archive, "vmid": 101, "node": "pve1", "force": true}),
            )
            .await;
        assert!(message.contains("is running"), "{message}");
        let out = p
            .server
            .ok(
                "pve_restore_vm",
                json!({"archive": archive, "vmid": 104, "node": "pve1", "force": true, "dry_run": true}),
            )
            .await;
        assert!(out["effect"].as_str().unwrap().contains("destroyed"), "{out}");
        assert_eq!(sim.writes().len(), 2);
        assert_no_schema_violations(&sim);
    })
    .await;
}
