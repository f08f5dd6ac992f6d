//! TLS to Proxmox: CA file (the default in these tests), fingerprint pin,
//! public roots, and no verification.

use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn pinned_fingerprint_is_enough_without_the_ca() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(
            &sim,
            Opts {
                tls: Tls::Fingerprint(sim.leaf_fingerprint()),
                ..Opts::default()
            },
        )
        .await;
        let list = server.ok("pve_list_vms", json!({})).await;
        assert_eq!(list["total"], 13);
        // The format PVE shows, lower-case and without colons, works too.
        let compact = sim.leaf_fingerprint().replace(':', "").to_lowercase();
        let server = Server::start(
            &sim,
            Opts {
                tls: Tls::Fingerprint(compact),
                ..Opts::default()
            },
        )
        .await;
        server.ok("pve_get_vm_status", json!({"vmid": 100})).await;
    })
    .await;
}

#[tokio::test]
async fn wrong_pin_fails_closed_naming_both_fingerprints() {
    within(async {
        let sim = simulator().await;
        let wrong = ["AB"; 32].join(":");
        let server = Server::start(
            &sim,
            Opts {
                tls: Tls::Fingerprint(wrong.clone()),
                ..Opts::default()
            },
        )
        .await;
        let message = server.err("pve_list_vms", json!({})).await;
        assert!(
            message.contains(&wrong),
            "expected fingerprint missing: {message}"
        );
        assert!(
            message.contains(&sim.leaf_fingerprint()),
            "seen fingerprint missing: {message}"
        );
        assert!(
            sim.requests().is_empty(),
            "no HTTP request may follow a failed pin: {:?}",
            sim.requests()
        );
    })
    .await;
}

#[tokio::test]
async fn untrusted_certificate_suggests_the_fix() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(
            &sim,
            Opts {
                tls: Tls::Nothing,
                ..Opts::default()
            },
        )
        .await;
        let message = server.err("pve_list_vms", json!({})).await;
        assert!(
            message.contains("PVE_CA_FILE") && message.contains("PVE_TLS_FINGERPRINT"),
            "{message}"
        );
        assert!(sim.requests().is_empty());
    })
    .await;
}

#[tokio::test]
async fn verification_off_works_with_a_loud_warning() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(
            &sim,
            Opts {
                tls: Tls::Insecure,
                ..Opts::default()
            },
        )
        .await;
        server.ok("pve_list_vms", json!({})).await;
        let log = server.stop().await;
        assert!(log.contains("TLS verification is OFF"), "{log}");
    })
    .await;
}
