//! Cloud-init through the real binary against the stateful simulator:
//! `pve_get_cloudinit`, `pve_set_cloudinit` (keys on the wire as Proxmox
//! stores them), `pve_regenerate_cloudinit`, a VM created with its
//! cloud-init settings, and "clone the template with this key and a DHCP
//! address, start it" in three calls.

use serde_json::{Value, json};

use crate::actions::{allow, writes};
use crate::common::*;
use crate::policy_harness::*;

const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ops@example";

/// A server offering `provisioning` (opt-in) with `tools` allowed.
async fn server(sim: &pve_sim::Simulator, tools: &[&str]) -> PolicyServer {
    with_policy_opts(
        sim,
        &allow(tools),
        Opts::default()
            .arg("--toolsets")
            .arg("default,provisioning"),
    )
    .await
}

/// The setting `key` of a pve_get_cloudinit answer.
fn setting<'a>(out: &'a Value, key: &str) -> &'a Value {
    out["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no {key} in {out}"))
}

/// `key` percent-encoded as Perl's `uri_escape` does it.
fn uri_escaped(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test]
async fn cloud_init_is_read_set_and_regenerated() {
    within(async {
        let sim = simulator().await;
        let p = server(&sim, &["pve_set_cloudinit", "pve_regenerate_cloudinit"]).await;
        let get = || p.server.ok("pve_get_cloudinit", json!({"vmid": 900}));

        // The template's drive was generated for `admin`; `ubuntu` waits.
        let before = get().await;
        assert_eq!(before["drive"], "ide2", "{before}");
        assert_eq!(before["pending"], true, "{before}");
        assert_eq!(setting(&before, "ciuser")["pending"], "ubuntu", "{before}");
        assert_eq!(
            setting(&before, "cipassword")["value"],
            "**********",
            "{before}"
        );

        let t = "pve_set_cloudinit";
        let args = json!({"vmid": 900, "sshkeys": KEY, "ciuser": "ubuntu",
                          "ipconfig0": "ip=10.0.0.50/24,gw=10.0.0.1", "nameserver": "10.0.0.1"});
        let mut dry_args = args.clone();
        dry_args["dry_run"] = json!(true);
        let dry = p.server.ok(t, dry_args).await;
        assert!(sim.writes().is_empty());
        let effect = dry["effect"].as_str().unwrap();
        assert!(effect.contains("sshkeys: 1 key -> 1 key"), "{dry}");
        // ciuser is already ubuntu in the config: left out.
        assert!(!effect.contains("ciuser"), "{dry}");
        let done = p.server.ok(t, args).await;
        assert_eq!(done["requests"], dry["requests"], "{done}");
        let digest = sim.guest(900).unwrap().digest;
        let [put] = &writes(&sim)[..] else {
            panic!("{:?}", writes(&sim))
        };
        assert!(put.starts_with("PUT /nodes/pve1/qemu/900/config "), "{put}");
        // Proxmox reads the form, then uri_unescapes sshkeys: the wire
        // carries the keys encoded once, inside the form.
        let sent = &sim.writes()[0].params;
        let param = |k: &str| sent.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(param("sshkeys"), Some(uri_escaped(KEY).as_str()), "{put}");
        assert_eq!(param("ipconfig0"), Some("ip=10.0.0.50/24,gw=10.0.0.1"));
        assert_eq!(param("nameserver"), Some("10.0.0.1"));
        assert_eq!(param("ciuser"), None, "{put}");
        assert!(param("digest").is_some_and(|d| d != digest), "{put}");

        let after = get().await;
        let keys = setting(&after, "sshkeys");
        assert_eq!(
            keys["pending"].as_str().or(keys["value"].as_str()),
            Some(KEY),
            "{after}"
        );

        // Regenerated: nothing waits any more.
        sim.clear_requests();
        let plan = p
            .server
            .ok(
                "pve_regenerate_cloudinit",
                json!({"vmid": 900, "dry_run": true}),
            )
            .await;
        assert!(sim.writes().is_empty());
        let regen = p
            .server
            .ok("pve_regenerate_cloudinit", json!({"vmid": 900}))
            .await;
        assert_eq!(regen["sent"], true, "{regen}");
        assert_eq!(regen["requests"], plan["requests"], "{regen}");
        assert_eq!(writes(&sim), ["PUT /nodes/pve1/qemu/900/cloudinit"]);
        let regenerated = get().await;
        assert_eq!(regenerated["pending"], false, "{regenerated}");
        assert_eq!(
            setting(&regenerated, "sshkeys")["value"],
            KEY,
            "{regenerated}"
        );

        // What cannot work: refused, nothing sent.
        sim.clear_requests();
        for (tool, args, says) in [
            (
                t,
                json!({"vmid": 106, "ciuser": "x"}),
                "vmid: CT 106 is a container",
            ),
            (
                t,
                json!({"vmid": 104, "ciuser": "x"}),
                "has no cloud-init drive",
            ),
            (
                t,
                json!({"vmid": 900, "cipassword": "hunter2"}),
                "cipassword: not taken",
            ),
            (
                t,
                json!({"vmid": 900, "sshkeys": "hunter2"}),
                "sshkeys: line 1",
            ),
            (
                t,
                json!({"vmid": 900, "ipconfig0": "10.0.0.5"}),
                "ipconfig0: ",
            ),
            (t, json!({"vmid": 900}), "name at least one setting"),
            (
                "pve_regenerate_cloudinit",
                json!({"vmid": 104}),
                "has no cloud-init drive",
            ),
        ] {
            let message = p.server.err(tool, args.clone()).await;
            assert!(message.contains(says), "{args}: {message}");
            assert!(!message.contains("hunter2"), "{message}");
        }
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn a_template_is_cloned_given_a_key_and_an_address_and_started_in_three_calls() {
    within(async {
        let sim = simulator().await;
        let p = server(
            &sim,
            &[
                "pve_clone_vm",
                "pve_set_cloudinit",
                "pve_start_vm",
                "pve_create_qemu_vm",
            ],
        )
        .await;
        let clone = p
            .server
            .ok(
                "pve_clone_vm",
                json!({"source_vmid": 900, "newid": 120, "name": "web-120", "wait": true}),
            )
            .await;
        assert_eq!(clone["task"]["end"]["outcome"], "ok", "{clone}");
        p.server
            .ok(
                "pve_set_cloudinit",
                json!({"vmid": 120, "sshkeys": KEY, "ipconfig0": "ip=dhcp"}),
            )
            .await;
        let start = p
            .server
            .ok("pve_start_vm", json!({"vmid": 120, "wait": true}))
            .await;
        assert_eq!(start["task"]["end"]["outcome"], "ok", "{start}");
        let vm = sim.guest(120).unwrap();
        assert_eq!(vm.status, "running");
        assert_eq!(vm.config["ipconfig0"], "ip=dhcp", "{}", vm.config);
        assert_eq!(vm.config["sshkeys"], uri_escaped(KEY), "{}", vm.config);
        // The start generated the drive: nothing waits.
        let ci = p.server.ok("pve_get_cloudinit", json!({"vmid": 120})).await;
        assert_eq!(ci["pending"], false, "{ci}");

        // A new VM gets its cloud-init settings in the create itself.
        sim.clear_requests();
        let create = p
            .server
            .ok(
                "pve_create_qemu_vm",
                json!({"node": "pve1", "vmid": 130, "ide2": "local-lvm:cloudinit",
                       "ciuser": "ops", "sshkeys": KEY, "ipconfig0": "ip=dhcp", "wait": true}),
            )
            .await;
        assert_eq!(create["task"]["end"]["outcome"], "ok", "{create}");
        let sent = &sim.writes()[0].params;
        let param = |k: &str| sent.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(param("sshkeys"), Some(uri_escaped(KEY).as_str()));
        let vm = sim.guest(130).unwrap();
        assert_eq!(vm.config["ciuser"], "ops", "{}", vm.config);
        assert!(
            vm.config["ide2"]
                .as_str()
                .unwrap()
                .contains("vm-130-cloudinit"),
            "{}",
            vm.config
        );
        sim.clear_requests();
        let message = p
            .server
            .err(
                "pve_create_qemu_vm",
                json!({"node": "pve1", "vmid": 131, "sshkeys": KEY}),
            )
            .await;
        assert!(
            message.contains("ide2: ciuser, sshkeys and ipconfig0"),
            "{message}"
        );
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// The generated data is a read the host guards: only the tool's own rule
/// runs it, it reads exactly the type asked, and the password hash the
/// user data carries does not leave.
#[tokio::test]
async fn the_generated_data_needs_its_own_rule_and_hides_the_password_hash() {
    within(async {
        let sim = simulator().await;
        let read_only = with_policy_opts(
            &sim,
            "[policy]\ndefault = \"read-only\"\n",
            Opts::default()
                .arg("--toolsets")
                .arg("default,provisioning"),
        )
        .await;
        let refused = read_only
            .server
            .err("pve_dump_cloudinit", json!({"vmid": 900, "type": "user"}))
            .await;
        assert!(refused.contains("policy"), "{refused}");
        assert!(
            !sim.requests()
                .iter()
                .any(|r| r.api_path().contains("cloudinit/dump")),
            "a refused call read the dump"
        );
        let p = server(&sim, &["pve_dump_cloudinit"]).await;
        let user = p
            .server
            .ok("pve_dump_cloudinit", json!({"vmid": 900, "type": "user"}))
            .await;
        let content = user["content"].as_str().unwrap();
        assert!(content.starts_with("#cloud-config"), "{content}");
        assert!(content.contains("password: **********"), "{content}");
        assert!(!content.contains("$5$"), "{content}");
        let network = p
            .server
            .ok(
                "pve_dump_cloudinit",
                json!({"vmid": 900, "type": "network"}),
            )
            .await;
        assert!(
            network["content"].as_str().unwrap().contains("dhcp"),
            "{network}"
        );
        let dumps: Vec<String> = sim
            .requests()
            .iter()
            .filter(|r| r.api_path().contains("cloudinit/dump"))
            .map(|r| {
                let params: Vec<String> =
                    r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{} {}", r.api_path(), params.join("&"))
            })
            .collect();
        assert_eq!(
            dumps,
            [
                "/nodes/pve1/qemu/900/cloudinit/dump type=user",
                "/nodes/pve1/qemu/900/cloudinit/dump type=network"
            ]
        );
        assert_no_schema_violations(&sim);
    })
    .await;
}
