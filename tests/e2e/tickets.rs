//! Username and password: the host logs in, keeps the ticket, renews it
//! before it expires and logs in again once on a 401. Neither the password
//! nor the ticket reaches the guest, the output or the log.

use std::time::Duration;

use pve_sim::tokens::{TICKET_PASSWORD, TICKET_USER};
use pve_sim::{AuthSeen, SimConfig, Simulator};
use serde_json::json;

use crate::common::*;

async fn ticket_sim(lifetime: Duration) -> Simulator {
    Simulator::start(SimConfig {
        schema_path: Some(schema_path()),
        ticket_lifetime: lifetime,
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

fn password_opts(password: &str) -> Opts {
    Opts {
        token_id: String::new(),
        ..Opts::default()
    }
    .env("PVE_USERNAME", TICKET_USER)
    .env("PVE_PASSWORD", password)
}

/// A config file that tells the host how long tickets live.
fn lifetime_config(dir: &tempfile::TempDir, secs: u64) -> String {
    let path = dir.path().join("pve-mcp.toml");
    std::fs::write(&path, format!("[pve]\nticket_lifetime_secs = {secs}\n")).unwrap();
    path.to_str().unwrap().to_string()
}

#[tokio::test]
async fn logs_in_once_and_sends_the_ticket() {
    within(async {
        let sim = ticket_sim(Duration::from_secs(7200)).await;
        let server = Server::start(&sim, password_opts(TICKET_PASSWORD)).await;
        let mut seen = String::new();
        for _ in 0..3 {
            let list = server.call("pve_list_vms", json!({})).await;
            assert_eq!(list.is_error, Some(false), "{}", text(&list));
            seen.push_str(&serde_json::to_string(&list).unwrap());
        }
        assert_eq!(sim.login_count(), 1, "one login serves every call");
        for r in sim
            .requests()
            .iter()
            .filter(|r| r.path != "/api2/json/access/ticket")
        {
            assert_eq!(
                r.auth,
                AuthSeen::Ticket {
                    user: TICKET_USER.into()
                },
                "{r:?}"
            );
        }
        let log = server.stop().await;
        for (what, text) in [("tool output", &seen), ("log", &log)] {
            assert!(
                !text.contains(TICKET_PASSWORD),
                "the password leaked into the {what}"
            );
            assert!(
                !text.contains("PVE:root@pam:"),
                "the ticket leaked into the {what}"
            );
        }
        assert_no_schema_violations(&sim);
    })
    .await;
}

/// Ticket lifetime in the renewal test, on both sides. The host renews at
/// three quarters (9 s); the simulator's tickets carry whole seconds, so
/// one may die up to a second early (past 11 s).
const RENEWAL_LIFETIME: Duration = Duration::from_secs(12);

/// When the renewal test calls again, counted from the end of its first
/// call: a second past the renewal point and over a second before even an
/// early expiry, so neither a slow first call nor a slow machine moves the
/// call out of that window. The first call has 9 s before any renewal.
const RENEWAL_CHECK: Duration = Duration::from_secs(10);

#[tokio::test]
async fn renews_before_expiry_without_a_401() {
    within(async {
        let sim = ticket_sim(RENEWAL_LIFETIME).await;
        let dir = tempfile::tempdir().unwrap();
        let opts = password_opts(TICKET_PASSWORD)
            .arg("--config")
            .arg(&lifetime_config(&dir, RENEWAL_LIFETIME.as_secs()));
        let server = Server::start(&sim, opts).await;
        server.ok("pve_list_vms", json!({})).await;
        assert_eq!(sim.login_count(), 1, "a fresh ticket is not renewed");
        // The ticket's age is what is tested: no event to await.
        tokio::time::sleep(RENEWAL_CHECK).await;
        server.ok("pve_list_vms", json!({})).await;
        assert_eq!(
            sim.login_count(),
            2,
            "the ticket was renewed at three quarters of its life"
        );
        assert!(
            sim.requests().iter().all(|r| r.status != 401),
            "{:?}",
            sim.requests()
        );
    })
    .await;
}

#[tokio::test]
async fn logs_in_again_once_after_a_401() {
    within(async {
        // The simulator's tickets die after 5 s (4 s at worst: they carry
        // whole seconds) while the host expects two hours, so the second
        // call, 6 s later, meets an expired ticket; the first has 4 s.
        let sim = ticket_sim(Duration::from_secs(5)).await;
        let server = Server::start(&sim, password_opts(TICKET_PASSWORD)).await;
        server.ok("pve_list_vms", json!({})).await;
        // Letting the ticket expire is what is tested: no event to await.
        tokio::time::sleep(Duration::from_secs(6)).await;
        let list = server.ok("pve_list_vms", json!({})).await;
        assert_eq!(list["total"], 13);
        assert_eq!(sim.login_count(), 2);
        let statuses: Vec<u16> = sim.requests().iter().map(|r| r.status).collect();
        assert_eq!(
            statuses.iter().filter(|s| **s == 401).count(),
            1,
            "{statuses:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn wrong_password_is_a_clear_401_and_stays_secret() {
    within(async {
        let sim = ticket_sim(Duration::from_secs(7200)).await;
        let wrong = "not-the-password-42";
        let server = Server::start(&sim, password_opts(wrong)).await;
        let message = server.err("pve_list_vms", json!({})).await;
        assert!(message.contains("401"), "{message}");
        assert!(!message.contains(wrong));
        let log = server.stop().await;
        assert!(!log.contains(wrong), "the password leaked into the log");
        assert_eq!(sim.login_count(), 0);
    })
    .await;
}
