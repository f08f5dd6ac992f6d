//! The lower half of the host (config types, upstream, egress, sandbox) is
//! a library a Rust program can embed without the MCP server, the policy or
//! the audit log: build a `Gate` for a cluster, a `Sandbox` around the
//! component, and call tools. This test does exactly that against the
//! simulator, and checks that the gate still holds when nothing above the
//! sandbox is there.

use std::time::Duration;

use pve_mcp::config::{Auth, Cluster, SandboxLimits};
use pve_mcp::egress::{Access, Gate, GateEndpoint};
use pve_mcp::endpoint::Endpoint;
use pve_mcp::sandbox::component::{CacheDir, FirstCompile, GUEST_WASM};
use pve_mcp::sandbox::{CallRequest, Sandbox};
use pve_mcp::secret::{Redactor, Secret};
use pve_mcp::tls::client::TlsMode;
use pve_mcp::tools::{CallOutcome, JsonObject};
use pve_mcp::upstream::Upstream;
use pve_sim::{SimConfig, Simulator, tokens};

async fn embedded(sim: &Simulator) -> Sandbox {
    let cluster = Cluster {
        name: "lab".into(),
        endpoint: Endpoint::parse(&sim.base_url(), false).expect("the simulator's URL"),
        auth: Auth::Token {
            id: tokens::ADMIN_TOKEN_ID.into(),
            secret: Secret::new(tokens::ADMIN_TOKEN_SECRET),
        },
        tls: TlsMode::CaPem(sim.ca_pem().into_bytes()),
        timeout: Duration::from_secs(30),
        credential_sets: Vec::new(),
    };
    let gate = Gate::new(vec![GateEndpoint {
        cluster: cluster.name.clone(),
        endpoint: cluster.endpoint.clone(),
        upstream: Upstream::new(&cluster).expect("an HTTPS client for the simulator"),
    }]);
    Sandbox::new(
        GUEST_WASM,
        gate,
        SandboxLimits::default(),
        Redactor::new(cluster.auth.secrets()),
        &CacheDir::Disabled,
        FirstCompile::Optimised,
    )
    .await
    .expect("the embedded component loads")
}

#[tokio::test]
async fn a_rust_program_runs_the_component_without_the_mcp_server() {
    let sim = Simulator::start(SimConfig::default())
        .await
        .expect("simulator");
    let sandbox = embedded(&sim).await;
    assert!(
        sandbox.tools().iter().any(|t| t.name == "pve_list_vms"),
        "the component lists its tools"
    );

    let report = sandbox
        .call(CallRequest {
            tool: sandbox.tool("pve_list_vms").expect("the component has it"),
            arguments: "{}",
            request_id: "embed-1",
            access: Access::Read,
            // The default cluster: what the call's arguments name.
            binding: sandbox.gate().bind(&[], &JsonObject::new()),
            progress: None,
            waits: false,
            waiter: None,
        })
        .await;
    let CallOutcome::Output {
        structured,
        is_error: false,
        ..
    } = &report.outcome
    else {
        panic!("pve_list_vms failed: {:?}", report.outcome);
    };
    let vms = structured["vms"].as_array().expect("a list of guests");
    assert!(!vms.is_empty(), "the simulated cluster has guests");
    assert!(vms.iter().all(|vm| vm["vmid"].as_u64().is_some()));
    assert!(!report.egress.is_empty());
    for request in &report.egress {
        assert_eq!(request.method, "GET");
        assert!(request.denied.is_none(), "{request:?}");
        assert_eq!(request.status, Some(200), "{request:?}");
        assert_eq!(request.cluster.as_deref(), Some("lab"), "{request:?}");
    }
}

#[tokio::test]
async fn bad_arguments_are_answered_by_the_component_without_a_request() {
    let sim = Simulator::start(SimConfig::default())
        .await
        .expect("simulator");
    let sandbox = embedded(&sim).await;
    let report = sandbox
        .call(CallRequest {
            tool: sandbox
                .tool("pve_get_vm_status")
                .expect("the component has it"),
            arguments: r#"{"vmid": "not a number"}"#,
            request_id: "embed-2",
            access: Access::Read,
            binding: sandbox.gate().bind(&[], &JsonObject::new()),
            progress: None,
            waits: false,
            waiter: None,
        })
        .await;
    let CallOutcome::Failed { message, .. } = &report.outcome else {
        panic!("a bad vmid must fail: {:?}", report.outcome);
    };
    assert!(message.contains("vmid"), "{message}");
    assert!(report.egress.is_empty(), "{:?}", report.egress);
}
