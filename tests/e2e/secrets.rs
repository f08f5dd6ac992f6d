//! The API token reaches Proxmox and nothing else: not the results, not
//! the errors, not the logs (even at trace level).

use pve_sim::AuthSeen;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn token_is_sent_upstream_and_appears_nowhere_else() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let mut seen = String::new();
        for (tool, args) in [
            ("pve_list_vms", json!({})),
            ("pve_get_vm_status", json!({"vmid": 100})),
            ("pve_get_vm_status", json!({"vmid": 105})),
            (
                "pve_get_vm_status",
                json!({"vmid": 555, "node": "pve1", "vm_type": "qemu"}),
            ),
            ("pve_get_vm_status", json!({"vmid": 99})),
        ] {
            let result = server.call(tool, args).await;
            seen.push_str(&serde_json::to_string(&result).unwrap());
        }
        let log = server.stop().await;
        assert!(
            log.contains("TRACE") || log.contains("DEBUG"),
            "the log ran at a verbose level: {log}"
        );
        for (what, text) in [("tool output", &seen), ("stderr log", &log)] {
            assert!(
                !text.contains(ADMIN_TOKEN_SECRET),
                "the token secret leaked into the {what}"
            );
        }
        let requests = sim.requests();
        assert!(!requests.is_empty());
        for r in &requests {
            match &r.auth {
                AuthSeen::Token {
                    token_id,
                    secret_ok,
                } => {
                    assert_eq!(token_id, ADMIN_TOKEN_ID);
                    assert!(secret_ok, "{r:?}");
                }
                other => panic!("request without the token: {other:?}"),
            }
        }
    })
    .await;
}
