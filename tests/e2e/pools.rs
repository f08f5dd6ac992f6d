//! The pool tools through the real binary against the simulator, which
//! answers as PVE 9 (`/pools?poolid=`) or, asked to, as PVE 8.0
//! (`/pools/{poolid}` only): members listed, a pool created, filled,
//! emptied and deleted with exactly the requests its dry runs plan, and
//! what Proxmox would refuse refused first, with nothing sent.

use serde_json::json;

use crate::actions::{allow, writes};
use crate::common::*;
use crate::policy_harness::*;

const TOOLS: &[&str] = &["pve_create_pool", "pve_update_pool", "pve_delete_pool"];

fn opts() -> Opts {
    Opts::default().arg("--toolsets").arg("default,pools")
}

fn members(out: &serde_json::Value) -> Vec<String> {
    out["pools"][0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["vmid"]
                .as_u64()
                .map(|v| v.to_string())
                .or_else(|| m["storage"].as_str().map(str::to_owned))
                .unwrap()
        })
        .collect()
}

#[tokio::test]
async fn a_pool_is_created_filled_emptied_and_deleted() {
    within(async {
        let sim = simulator().await;
        let p = with_policy_opts(&sim, &allow(TOOLS), opts()).await;
        let all = p.server.ok("pve_list_pools", json!({})).await;
        assert_eq!(all["pools"][0]["poolid"], "production", "{all}");
        let production = p
            .server
            .ok("pve_list_pools", json!({"poolid": "production"}))
            .await;
        assert_eq!(production["form"], "pools?poolid=", "{production}");
        assert_eq!(members(&production), ["100", "101", "nfs-backup"]);

        let dry = p
            .server
            .ok(
                "pve_create_pool",
                json!({"poolid": "web", "comment": "Web tier", "dry_run": true}),
            )
            .await;
        assert!(sim.writes().is_empty());
        let made = p
            .server
            .ok(
                "pve_create_pool",
                json!({"poolid": "web", "comment": "Web tier"}),
            )
            .await;
        assert_eq!(made["requests"], dry["requests"], "{made}");
        p.server
            .ok("pve_update_pool", json!({"poolid": "web", "vms": "104"}))
            .await;
        assert_eq!(sim.guest(104).unwrap().pool.as_deref(), Some("web"));
        p.server
            .ok(
                "pve_update_pool",
                json!({"poolid": "web", "vms": "100", "allow_move": true}),
            )
            .await;
        assert_eq!(sim.guest(100).unwrap().pool.as_deref(), Some("web"));
        assert_eq!(
            writes(&sim),
            [
                "POST /pools comment=Web tier&poolid=web",
                "PUT /pools poolid=web&vms=104",
                "PUT /pools allow-move=1&poolid=web&vms=100",
            ]
        );

        // What Proxmox would refuse: refused first, nothing sent.
        sim.clear_requests();
        for (tool, args, says) in [
            (
                "pve_create_pool",
                json!({"poolid": "web"}),
                "exists already",
            ),
            (
                "pve_create_pool",
                json!({"poolid": "9web"}),
                "start with a letter",
            ),
            (
                "pve_update_pool",
                json!({"poolid": "web", "vms": "101"}),
                "is in pool production",
            ),
            (
                "pve_update_pool",
                json!({"poolid": "web", "vms": "104"}),
                "a member of pool web already",
            ),
            (
                "pve_update_pool",
                json!({"poolid": "web", "vms": "999"}),
                "no guest has vmid 999",
            ),
            (
                "pve_update_pool",
                json!({"poolid": "nope", "vms": "104"}),
                "there is no pool nope",
            ),
            (
                "pve_delete_pool",
                json!({"poolid": "web"}),
                "still has 2 members: VM 100, VM 104",
            ),
            ("pve_create_pool", json!({"poolid": "a/b"}), "nested pool"),
        ] {
            let message = p.server.err(tool, args.clone()).await;
            assert!(message.contains(says), "{tool} {args}: {message}");
        }
        assert!(sim.writes().is_empty(), "{:?}", sim.writes());

        p.server
            .ok(
                "pve_update_pool",
                json!({"poolid": "web", "vms": "100,104", "remove": true}),
            )
            .await;
        let gone = p
            .server
            .ok("pve_delete_pool", json!({"poolid": "web"}))
            .await;
        assert_eq!(gone["sent"], true, "{gone}");
        assert_eq!(
            writes(&sim),
            [
                "PUT /pools delete=1&poolid=web&vms=100,104",
                "DELETE /pools poolid=web",
            ]
        );
        let all = p.server.ok("pve_list_pools", json!({})).await;
        assert_eq!(all["pools"].as_array().unwrap().len(), 1, "{all}");
        assert_no_schema_violations(&sim);
    })
    .await;
}

#[tokio::test]
async fn on_pve_8_0_a_pool_is_read_and_deleted_by_its_path() {
    within(async {
        let sim = pve_sim::Simulator::start(pve_sim::SimConfig {
            pve_version: Some("8.0.9".into()),
            schema_path: Some(schema_path()),
            ..pve_sim::SimConfig::default()
        })
        .await
        .unwrap();
        let p = with_policy_opts(&sim, &allow(TOOLS), opts()).await;
        let production = p
            .server
            .ok("pve_list_pools", json!({"poolid": "production"}))
            .await;
        assert_eq!(production["form"], "pools/{poolid}", "{production}");
        assert_eq!(members(&production), ["100", "101", "nfs-backup"]);
        p.server
            .ok("pve_create_pool", json!({"poolid": "old"}))
            .await;
        let refused = p
            .server
            .err("pve_update_pool", json!({"poolid": "old", "vms": "104"}))
            .await;
        assert!(
            refused.contains("pve_api_request PUT /pools/old"),
            "{refused}"
        );
        p.server
            .ok("pve_delete_pool", json!({"poolid": "old"}))
            .await;
        assert_eq!(
            writes(&sim),
            ["POST /pools poolid=old", "DELETE /pools/old"]
        );
    })
    .await;
}
