//! Proxmox credentials per tier and per agent, seen from Proxmox's side:
//! the simulator logs the token of every request it gets. A read call's
//! requests all carry the read token (even a write tool's, when its policy
//! lets it only read), a write call's the write token, a destructive
//! call's the destructive token; a tier with no credential is not listed
//! and its calls are refused with nothing sent, unless `fallback` lets it
//! use a lower tier's; and over HTTP each agent whose bearer token names a
//! credential set reaches Proxmox as its own token.

use std::collections::BTreeSet;

use pve_sim::AuthSeen;
use pve_sim::tokens::{OPERATOR_TOKEN_ID, OPERATOR_TOKEN_SECRET};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::common::*;
use crate::http::{HttpServer, http_client};

/// `[pve.credentials.TIER]` with this token.
fn tier(section: &str, tier: &str, id: &str, secret: &str) -> String {
    format!("[{section}.{tier}]\ntoken_id = \"{id}\"\ntoken_secret = \"{secret}\"\n")
}

/// The policy these tests run under: writes allowed, the snapshot tools'
/// destructive calls by their own rules, and `pve_start_vm` granted reads
/// only.
const POLICY: &str = "[policy]\ndefault = \"allow\"\n\
                      [policy.tools.pve_delete_snapshot]\naction = \"allow\"\n\
                      [policy.tools.pve_start_vm]\nwrite = false\n";

/// The server, on the simulator's default cluster with no credential from
/// the environment, configured by `config`.
async fn start(sim: &pve_sim::Simulator, dir: &tempfile::TempDir, config: &str) -> Server {
    let opts = Opts {
        token_id: String::new(),
        token_secret: String::new(),
        ..Opts::default()
    };
    Server::with_config(sim, dir.path(), config, opts).await
}

/// The token ids of every request the simulator got since it was last
/// cleared; panics on one without a valid token.
fn tokens_seen(sim: &pve_sim::Simulator) -> BTreeSet<String> {
    let requests = sim.requests();
    assert!(!requests.is_empty(), "no request reached the simulator");
    requests
        .iter()
        .map(|r| match &r.auth {
            AuthSeen::Token {
                token_id,
                secret_ok: true,
            } => token_id.clone(),
            other => panic!("{} {} without a valid token: {other:?}", r.method, r.path),
        })
        .collect()
}

/// Runs one call and returns the token ids its requests carried.
async fn carried(
    sim: &pve_sim::Simulator,
    server: &Server,
    tool: &str,
    args: Value,
) -> BTreeSet<String> {
    sim.clear_requests();
    // Whether it succeeds is not the point here: what it sent is.
    server.call(tool, args).await;
    tokens_seen(sim)
}

fn only(id: &str) -> BTreeSet<String> {
    BTreeSet::from([id.to_string()])
}

#[tokio::test]
async fn each_call_carries_its_granted_tiers_token() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let config = format!(
            "{}{}{}{POLICY}[audit]\npath = \"{}\"\n",
            tier(
                "pve.credentials",
                "read",
                AUDITOR_TOKEN_ID,
                AUDITOR_TOKEN_SECRET
            ),
            tier(
                "pve.credentials",
                "write",
                OPERATOR_TOKEN_ID,
                OPERATOR_TOKEN_SECRET
            ),
            tier(
                "pve.credentials",
                "destructive",
                ADMIN_TOKEN_ID,
                ADMIN_TOKEN_SECRET
            ),
            audit.display()
        );
        let server = start(&sim, &dir, &config).await;
        // A read tool: the read token (the auditor sees only its guests).
        assert_eq!(
            carried(&sim, &server, "pve_list_vms", json!({})).await,
            only(AUDITOR_TOKEN_ID)
        );
        // A write tool the policy lets only read: every request, the dry
        // run's reads, carries the read token.
        assert_eq!(
            carried(
                &sim,
                &server,
                "pve_start_vm",
                json!({"vmid": 101, "dry_run": true})
            )
            .await,
            only(AUDITOR_TOKEN_ID)
        );
        // A write: its reads and its write carry the write token.
        let snap = json!({"vmid": 104, "snapname": "tiers", "wait": true});
        assert_eq!(
            carried(&sim, &server, "pve_create_snapshot", snap.clone()).await,
            only(OPERATOR_TOKEN_ID)
        );
        assert!(
            sim.writes().iter().any(|r| r.method == "POST"),
            "{:?}",
            sim.requests()
        );
        // A destructive call: the destructive token, reads included.
        assert_eq!(
            carried(&sim, &server, "pve_delete_snapshot", snap).await,
            only(ADMIN_TOKEN_ID)
        );
        assert!(
            sim.writes().iter().any(|r| r.method == "DELETE"),
            "{:?}",
            sim.requests()
        );
        assert!(
            !sim.guest(104)
                .unwrap()
                .snapshots
                .contains(&"tiers".to_owned())
        );
        // pve_check_permissions checks each credential: the call's own
        // answer, and one entry per token, each asked as that token.
        sim.clear_requests();
        let out = server.ok("pve_check_permissions", json!({})).await;
        let entries = out["credentials"].as_array().expect("credentials");
        let seen: Vec<(Value, &str)> = entries
            .iter()
            .map(|e| (e["tiers"].clone(), e["token_id"].as_str().unwrap()))
            .collect();
        assert_eq!(
            seen,
            [
                (json!(["read"]), AUDITOR_TOKEN_ID),
                (json!(["write"]), OPERATOR_TOKEN_ID),
                (json!(["destructive"]), ADMIN_TOKEN_ID),
            ],
            "{out}"
        );
        assert_eq!(entries[0]["answer"]["paths"], out["paths"], "{out}");
        assert_ne!(
            entries[0]["answer"]["paths"], entries[2]["answer"]["paths"],
            "{out}"
        );
        assert_eq!(
            tokens_seen(&sim),
            BTreeSet::from([AUDITOR_TOKEN_ID, OPERATOR_TOKEN_ID, ADMIN_TOKEN_ID].map(String::from))
        );
        // The log and the audit record name the token id, never a secret
        // (the harness scans both for every secret of the configuration).
        let log = server.stop().await;
        assert!(
            log.contains(&format!("pve_token=\"{OPERATOR_TOKEN_ID}\"")),
            "{log}"
        );
        let calls: Vec<(String, String)> = audit_records(&audit)
            .iter()
            .filter(|r| r["kind"] == "call")
            .map(|r| {
                (
                    r["tool"].as_str().unwrap().into(),
                    r["pve_token"].as_str().unwrap_or("").into(),
                )
            })
            .collect();
        assert_eq!(
            calls,
            [
                ("pve_list_vms".into(), AUDITOR_TOKEN_ID.into()),
                ("pve_start_vm".into(), AUDITOR_TOKEN_ID.into()),
                ("pve_create_snapshot".into(), OPERATOR_TOKEN_ID.into()),
                ("pve_delete_snapshot".into(), ADMIN_TOKEN_ID.into()),
                ("pve_check_permissions".into(), AUDITOR_TOKEN_ID.into()),
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn a_tier_without_a_credential_is_unlisted_and_refused_unless_it_falls_back() {
    within(async {
        let sim = simulator().await;
        let read_only = format!(
            "{}{POLICY}",
            tier(
                "pve.credentials",
                "read",
                AUDITOR_TOKEN_ID,
                AUDITOR_TOKEN_SECRET
            )
        );
        let dir = tempfile::tempdir().unwrap();
        let server = start(&sim, &dir, &read_only).await;
        let listed = server.tool_names().await;
        assert!(listed.iter().any(|t| t == "pve_list_vms"), "{listed:?}");
        // pve_start_vm runs with read access here, so its read token is
        // enough: listed.
        assert!(listed.iter().any(|t| t == "pve_start_vm"), "{listed:?}");
        for unlisted in ["pve_create_snapshot", "pve_delete_snapshot"] {
            assert!(
                !listed.iter().any(|t| t == unlisted),
                "{unlisted} is listed: {listed:?}"
            );
        }
        sim.clear_requests();
        let text = server
            .err(
                "pve_create_snapshot",
                json!({"vmid": 104, "snapname": "no"}),
            )
            .await;
        assert!(text.contains("needs a write credential"), "{text}");
        assert!(
            text.contains("[pve.credentials.write]") && text.contains("fallback = true"),
            "{text}"
        );
        let text = server
            .err(
                "pve_delete_snapshot",
                json!({"vmid": 104, "snapname": "no"}),
            )
            .await;
        assert!(text.contains("needs a destructive credential"), "{text}");
        assert!(sim.requests().is_empty(), "{:?}", sim.requests());
        server.stop().await;

        // With fallback, a missing tier uses the next one down: write has
        // its own token, destructive uses write's (never a higher one).
        let fallback = format!(
            "[pve.credentials]\nfallback = true\n{}{}{POLICY}",
            tier(
                "pve.credentials",
                "read",
                AUDITOR_TOKEN_ID,
                AUDITOR_TOKEN_SECRET
            ),
            tier(
                "pve.credentials",
                "write",
                OPERATOR_TOKEN_ID,
                OPERATOR_TOKEN_SECRET
            ),
        );
        let dir = tempfile::tempdir().unwrap();
        let server = start(&sim, &dir, &fallback).await;
        let listed = server.tool_names().await;
        for tool in ["pve_list_vms", "pve_create_snapshot", "pve_delete_snapshot"] {
            assert!(
                listed.iter().any(|t| t == tool),
                "{tool} is not listed: {listed:?}"
            );
        }
        let snap = json!({"vmid": 104, "snapname": "fallback", "wait": true});
        assert_eq!(
            carried(&sim, &server, "pve_create_snapshot", snap.clone()).await,
            only(OPERATOR_TOKEN_ID)
        );
        assert_eq!(
            carried(&sim, &server, "pve_delete_snapshot", snap).await,
            only(OPERATOR_TOKEN_ID)
        );
        assert_eq!(
            carried(&sim, &server, "pve_list_vms", json!({})).await,
            only(AUDITOR_TOKEN_ID)
        );
        server.stop().await;
    })
    .await;
}

const ALICE: &str = "alice-0123456789abcdef0123456789";
const BOB: &str = "bob-0123456789abcdef0123456789abc";

#[tokio::test]
async fn each_agent_reaches_proxmox_as_its_own_token() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        // The cluster's own credential (the admin token) serves callers
        // without a set; alice acts as the auditor, bob as the operator
        // (his writes too); carol names a set this cluster does not have.
        let config = format!(
            "[pve]\ntoken_id = \"{ADMIN_TOKEN_ID}\"\ntoken_secret = \"{ADMIN_TOKEN_SECRET}\"\n\
             {}{}{}\
             [clusters.other]\nbase_url = \"https://192.0.2.1:8006\"\ntoken_id = \"x@pve!y\"\ntoken_secret = \"0123456789-other\"\n\
             {}{POLICY}\
             [http.tokens.alice]\ntoken = \"{ALICE}\"\npve_credentials = \"alice\"\n\
             [http.tokens.bob]\ntoken = \"{BOB}\"\npve_credentials = \"bob\"\n\
             [http.tokens.carol]\ntoken = \"carol-0123456789abcdef0123456789\"\npve_credentials = \"carol\"\n\
             [http.tokens.admin]\ntoken = \"{}\"\n",
            tier("pve.credential_sets.alice", "read", AUDITOR_TOKEN_ID, AUDITOR_TOKEN_SECRET),
            tier("pve.credential_sets.bob", "read", OPERATOR_TOKEN_ID, OPERATOR_TOKEN_SECRET),
            tier("pve.credential_sets.bob", "write", OPERATOR_TOKEN_ID, OPERATOR_TOKEN_SECRET),
            tier("clusters.other.credential_sets.carol", "read", AUDITOR_TOKEN_ID, AUDITOR_TOKEN_SECRET),
            crate::http::TOKEN,
        );
        let path = dir.path().join("pve-mcp.toml");
        std::fs::write(&path, config).unwrap();
        let opts = Opts {
            token_id: String::new(),
            token_secret: String::new(),
            ..Opts::default()
        }
        .arg("--config")
        .arg(path.to_str().unwrap());
        let server = HttpServer::spawn(&sim, opts, &["serve", "--http", "127.0.0.1:0"], http_client()).await;
        let call = async |token: &str, tool: &str, args: Value| {
            let client = server.client_with(Some(token)).await.expect("an MCP session");
            let args = args.as_object().cloned().unwrap_or_default();
            let result = client
                .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
                .await
                .expect("a tool result");
            let _ = client.cancel().await;
            result
        };
        let names = async |token: &str| -> Vec<String> {
            let client = server.client_with(Some(token)).await.expect("an MCP session");
            let tools = client.list_all_tools().await.expect("tools/list");
            let _ = client.cancel().await;
            tools.into_iter().map(|t| t.name.to_string()).collect()
        };
        for (token, id) in [(ALICE, AUDITOR_TOKEN_ID), (BOB, OPERATOR_TOKEN_ID), (crate::http::TOKEN, ADMIN_TOKEN_ID)] {
            sim.clear_requests();
            let result = call(token, "pve_list_vms", json!({})).await;
            assert_eq!(result.is_error, Some(false), "{result:?}\n{}", server.log());
            assert_eq!(tokens_seen(&sim), only(id), "{token}");
        }
        // Bob's write goes out as bob's token; alice, with no write token
        // in her set, is not offered the write and is refused it.
        sim.clear_requests();
        let snap = json!({"vmid": 104, "snapname": "bobs", "wait": true});
        let result = call(BOB, "pve_create_snapshot", snap.clone()).await;
        assert_eq!(result.is_error, Some(false), "{result:?}");
        assert_eq!(tokens_seen(&sim), only(OPERATOR_TOKEN_ID));
        assert!(names(BOB).await.iter().any(|t| t == "pve_create_snapshot"));
        assert!(!names(ALICE).await.iter().any(|t| t == "pve_create_snapshot"));
        sim.clear_requests();
        let result = call(ALICE, "pve_create_snapshot", json!({"vmid": 101, "snapname": "alices"})).await;
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let said = text(&result);
        assert!(said.contains("credential set \"alice\"") && said.contains("[pve.credential_sets.alice.write]"), "{said}");
        assert!(sim.requests().is_empty(), "{:?}", sim.requests());
        // Carol's set is defined only on the other cluster: her calls to
        // this one are refused, with the table to add.
        let result = call("carol-0123456789abcdef0123456789", "pve_list_vms", json!({})).await;
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let said = text(&result);
        assert!(said.contains("[pve.credential_sets.carol.read]"), "{said}");
        assert!(sim.requests().is_empty(), "{:?}", sim.requests());
        // The log names each agent's token name and its Proxmox token id.
        server.expect_log(&format!("pve_token=\"{OPERATOR_TOKEN_ID}\"")).await;
        let log = server.log();
        assert!(
            log.lines().any(|l| l.contains("token=\"bob\"") && l.contains(&format!("pve_token=\"{OPERATOR_TOKEN_ID}\""))),
            "{log}"
        );
    })
    .await;
}
