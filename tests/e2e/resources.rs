//! MCP resources and completions (issue 26): the Python SDK over stdio and
//! Streamable HTTP (tests/interop/python_sdk_resources.py), and through
//! the real binary with rmcp's client what the policy, the rate limits,
//! several clusters and the audit log do to them.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use pve_sim::{Scenario, SimConfig, Simulator};
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompletionContext, CompletionInfo, ErrorCode,
    ReadResourceRequestParams, Reference, ResourceContents,
};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

use crate::common::*;

const GUESTS: &str = "pve://{cluster}/guests/{vmid}";
const NODES: &str = "pve://{cluster}/nodes/{node}";
const TASK_LOGS: &str = "pve://{cluster}/tasks/{upid}/log";

/// tests/interop/PYTHON with the binary, which must pass and print `lines`.
pub fn python_script(script: &str, lines: &[&str]) {
    let found = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed(found, "the Python `mcp` package", "`pip install mcp`") {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/interop")
        .join(script);
    let out = Command::new("python3")
        .arg(path)
        .arg(BIN)
        .env("PVE_MCP_CACHE_DIR", cache_dir())
        .output()
        .expect("running python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in lines {
        assert!(
            stdout.contains(line),
            "{script} did not print {line:?}: {stdout}"
        );
    }
}

/// tests/interop/python_sdk_resources.py: lists, reads of every kind,
/// completions and bad URIs, over stdio (both handshakes) and HTTP; and
/// with the cluster toolset not offered, its resources gone.
#[test]
fn python_sdk_lists_reads_and_completes_resources_over_stdio_and_http() {
    python_script(
        "python_sdk_resources.py",
        &[
            "resources [stdio legacy]: ok",
            "resources [stdio auto]: ok",
            "resources [http]: ok",
            "resources [not offered]: ok",
        ],
    );
}

/// `resources/read` of `uri`: its one JSON text.
pub async fn read(server: &Server, uri: &str) -> Result<Value, ServiceError> {
    let result = server
        .client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await?;
    assert_eq!(result.contents.len(), 1, "{uri}: {result:?}");
    match &result.contents[0] {
        ResourceContents::TextResourceContents {
            uri: named,
            mime_type,
            text,
            ..
        } => {
            assert_eq!(named, uri);
            assert_eq!(mime_type.as_deref(), Some("application/json"));
            Ok(serde_json::from_str(text).expect("a resource's text is JSON"))
        }
        other => panic!("{uri}: not text: {other:?}"),
    }
}

/// The MCP error a request failed with.
pub fn mcp_error(result: Result<impl std::fmt::Debug, ServiceError>) -> rmcp::ErrorData {
    match result {
        Err(ServiceError::McpError(error)) => error,
        other => panic!("expected an MCP error, got {other:?}"),
    }
}

/// `completion/complete` of a template's variable, in `cluster` if given.
pub async fn complete(
    server: &Server,
    template: &str,
    name: &str,
    value: &str,
    cluster: Option<&str>,
) -> CompletionInfo {
    let mut request = CompleteRequestParams::new(
        Reference::for_resource(template),
        ArgumentInfo::new(name, value),
    );
    if let Some(cluster) = cluster {
        let context = HashMap::from([("cluster".to_string(), cluster.to_string())]);
        request = request.with_context(CompletionContext::with_arguments(context));
    }
    server
        .client
        .complete(request)
        .await
        .unwrap_or_else(|e| panic!("completing {name} {value:?}: {e}"))
        .completion
}

/// The URI templates listed.
async fn templates(server: &Server) -> Vec<String> {
    server
        .client
        .list_all_resource_templates()
        .await
        .expect("resources/templates/list")
        .into_iter()
        .map(|t| t.uri_template.clone())
        .collect()
}

/// The one cluster's name, from its listed resource.
async fn only_cluster(server: &Server) -> String {
    let listed = server
        .client
        .list_all_resources()
        .await
        .expect("resources/list");
    assert_eq!(listed.len(), 1, "{listed:?}");
    let uri = &listed[0].uri;
    uri.strip_prefix("pve://")
        .and_then(|rest| rest.strip_suffix("/resources"))
        .unwrap_or_else(|| panic!("{uri}"))
        .to_string()
}

/// A policy that denies pve_get_vm_status and hides pve_list_vms takes
/// the guests template away, refuses its reads (audited as the denied
/// call) and empties vmid completions, while the rest keeps serving and
/// the audit log records each resource read as its tool's call.
#[tokio::test]
async fn the_policy_decides_resource_reads_and_completions_and_the_audit_log_records_them() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let config = format!(
            "[policy.tools.pve_get_vm_status]\naction = \"deny\"\nreason = \"status is private \
             here\"\n[policy.tools.pve_list_vms]\nhide = true\n\
             [policy.tools.pve_get_node_metrics]\nrate_limit = \"2/minute\"\n\
             [audit]\npath = \"{}\"\ninclude_arguments = true\n",
            log.display()
        );
        let server = Server::with_config(&sim, dir.path(), &config, Opts::default()).await;
        let cluster = only_cluster(&server).await;

        assert_eq!(templates(&server).await, [NODES, TASK_LOGS]);
        let guest = format!("pve://{cluster}/guests/100");
        let refused = mcp_error(read(&server, &guest).await);
        assert_eq!(refused.code, ErrorCode::RESOURCE_NOT_FOUND, "{refused:?}");
        assert_eq!(refused.data, Some(json!({ "uri": guest })));
        assert!(
            refused
                .message
                .contains("pve_get_vm_status refused this read")
                && refused.message.contains("status is private here"),
            "{refused:?}"
        );
        let vmids = complete(&server, GUESTS, "vmid", "", None).await;
        assert!(vmids.values.is_empty(), "{vmids:?}");
        // pve_list_nodes is allowed: its completions are there.
        let nodes = complete(&server, NODES, "node", "", None).await;
        assert_eq!(nodes.values, ["pve1", "pve2", "pve3"]);
        assert_eq!((nodes.total, nodes.has_more), (Some(3), Some(false)));

        let resources = read(&server, &format!("pve://{cluster}/resources"))
            .await
            .expect("the cluster's resources");
        assert_eq!(resources["cluster"], cluster.as_str());
        assert!(
            resources["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["vmid"] == 100),
            "{resources}"
        );

        // The node's reads are rate-limited as pve_get_node_metrics is.
        let node = format!("pve://{cluster}/nodes/pve1");
        for _ in 0..2 {
            let metrics = read(&server, &node).await.expect("a node within its limit");
            assert_eq!(metrics["node"], "pve1");
        }
        let limited = mcp_error(read(&server, &node).await);
        assert_eq!(limited.code, ErrorCode::RESOURCE_NOT_FOUND, "{limited:?}");
        assert!(
            limited.message.to_lowercase().contains("rate limit"),
            "{limited:?}"
        );
        server.stop().await;

        let records = audit_records(&log);
        let calls = |tool: &str| -> Vec<&Value> {
            records
                .iter()
                .filter(|r| r["kind"] == "call" && r["tool"] == tool)
                .collect()
        };
        let listed = calls("pve_list_resources");
        assert_eq!(listed.len(), 1, "{records:#?}");
        assert_eq!(listed[0]["decision"], "allow");
        assert_eq!(listed[0]["session"], "stdio");
        assert_eq!(
            listed[0]["args"],
            json!({"cluster": cluster, "limit": 200}),
            "{}",
            listed[0]
        );
        let denied = calls("pve_get_vm_status");
        assert_eq!(denied.len(), 1, "{records:#?}");
        assert_eq!(denied[0]["decision"], "deny");
        assert_eq!(denied[0]["args"], json!({"cluster": cluster, "vmid": 100}));
        let metrics = calls("pve_get_node_metrics");
        let decisions: Vec<&Value> = metrics.iter().map(|r| &r["decision"]).collect();
        assert_eq!(
            decisions,
            [&json!("allow"), &json!("allow"), &json!("rate-limited")],
            "{metrics:#?}"
        );
        // The hidden list tool was never run for a completion.
        assert!(calls("pve_list_vms").is_empty(), "{records:#?}");
        assert_eq!(calls("pve_list_nodes").len(), 1, "{records:#?}");
    })
    .await;
}

/// At most 100 values, with the total and `hasMore` as they are, on a
/// cluster of 250 guests; the typed prefix filters by vmid.
#[tokio::test]
async fn completions_hold_at_most_a_hundred_values_and_say_how_many_there_are() {
    within(async {
        let sim = Simulator::start(SimConfig {
            scenario: Scenario::Large { guests: 250 },
            schema_path: Some(schema_path()),
            ..SimConfig::default()
        })
        .await
        .unwrap();
        let server = Server::start(&sim, Opts::default()).await;
        let all = vmids(&server.ok("pve_list_vms", json!({"limit": 1000})).await);
        assert_eq!(all.len(), 250);

        let every = complete(&server, GUESTS, "vmid", "", None).await;
        assert_eq!(every.values.len(), 100);
        assert_eq!((every.total, every.has_more), (Some(250), Some(true)));
        let mut sorted = all.clone();
        sorted.sort();
        let first: Vec<String> = sorted[..100].iter().map(u64::to_string).collect();
        assert_eq!(every.values, first);

        let typed = "11";
        let matching: Vec<String> = sorted
            .iter()
            .map(u64::to_string)
            .filter(|v| v.starts_with(typed))
            .collect();
        let some = complete(&server, GUESTS, "vmid", typed, None).await;
        assert_eq!(some.total, Some(matching.len() as u32));
        assert_eq!(some.has_more, Some(matching.len() > 100));
        assert_eq!(some.values, matching[..matching.len().min(100)]);
        server.stop().await;
    })
    .await;
}

/// With two clusters each has its resource; a read and a completion go to
/// the cluster the URI or the completion's context names.
#[tokio::test]
async fn each_cluster_has_its_resources_and_completions() {
    within(async {
        let main = simulator().await;
        let lab = lab_simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let opts = Opts {
            env_cluster: false,
            tls: Tls::Nothing,
            ..Opts::default()
        }
        .arg("--config")
        .arg(&two_clusters(&main, &lab, &dir));
        let server = Server::start(&main, opts).await;
        let listed: Vec<String> = server
            .client
            .list_all_resources()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.uri.clone())
            .collect();
        assert_eq!(listed, ["pve://main/resources", "pve://lab/resources"]);

        let status = read(&server, "pve://lab/guests/302").await.unwrap();
        assert_eq!(status["status"]["node"], "lab1");
        assert_eq!(status["status"]["cluster"], "lab");
        let on_lab = complete(&server, GUESTS, "vmid", "3", Some("lab")).await;
        assert_eq!(on_lab.values, ["300", "301", "302", "303"]);
        let on_main = complete(&server, GUESTS, "vmid", "3", None).await;
        assert!(on_main.values.is_empty(), "{on_main:?}");
        let clusters = complete(&server, GUESTS, "cluster", "l", None).await;
        assert_eq!(clusters.values, ["lab"]);

        let elsewhere = mcp_error(read(&server, "pve://prod/resources").await);
        assert_eq!(elsewhere.code, ErrorCode::INVALID_PARAMS);
        assert!(
            elsewhere
                .message
                .contains("which this server does not serve (it serves main, lab)"),
            "{elsewhere:?}"
        );
        server.stop().await;
    })
    .await;
}
