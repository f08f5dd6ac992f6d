//! The soak test's short version, for CI: the same driver as `just soak`
//! (`host/benches/support/soak.rs`), at 4 sessions x 100 calls, with the
//! same checks but the memory one, which needs the long run: every call is
//! answered with the guest it asked about, and `pve-mcp audit verify`
//! passes with exactly three records per call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pve_sim::{Scenario, SimConfig, Simulator};

use crate::common::*;
use crate::http::{HttpServer, TOKEN};

// The long run also reads the server's memory, which this test does not.
#[allow(dead_code)]
#[path = "../../host/benches/support/soak.rs"]
mod driver;

#[tokio::test]
async fn soak_short_answers_every_call_with_its_guest_and_audits_each() {
    within(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let sim = Simulator::start(SimConfig {
            scenario: Scenario::Large {
                guests: driver::GUESTS,
            },
            schema_path: Some(schema_path()),
            ..SimConfig::default()
        })
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let config = dir.path().join("soak.toml");
        std::fs::write(&config, driver::config(&audit)).unwrap();
        let server = HttpServer::start(
            &sim,
            Opts::default()
                .arg("--config")
                .arg(config.to_str().unwrap()),
        )
        .await;

        let setup = driver::connect(&server.url, TOKEN).await.unwrap();
        let guests = Arc::new(driver::guests(&setup).await.unwrap());
        let _ = setup.cancel().await;
        let plan = driver::Plan {
            sessions: 4,
            calls: 100,
            checkpoint: 40,
        };
        let reached = Arc::new(AtomicBool::new(false));
        let hook = {
            let reached = reached.clone();
            move || reached.store(true, Ordering::SeqCst)
        };
        let outcome = driver::run(&server.url, TOKEN, plan, guests, hook)
            .await
            .unwrap();
        assert_eq!(
            (outcome.matched, outcome.failed),
            (plan.total(), 0),
            "{:#?}\n{}",
            outcome.failures,
            server.log()
        );
        assert!(reached.load(Ordering::SeqCst), "the checkpoint never ran");
        // Every call's records are written before its answer is sent, so
        // the file is complete while the server still runs.
        let records = driver::verify_audit(BIN, &audit).unwrap();
        assert_eq!(records, driver::expected_records(plan.total()));
        assert_no_schema_violations(&sim);
    })
    .await;
}
