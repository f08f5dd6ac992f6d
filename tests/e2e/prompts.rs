//! MCP prompts (issue 26): the Python SDK over stdio and Streamable HTTP
//! (tests/interop/python_sdk_prompts.py), and through the real binary
//! with rmcp's client the least-privilege commands checked against the
//! privileges `pve-mcp tools --json` declares, and a prompt naming the
//! tools a policy denies as unavailable.

use std::collections::{BTreeMap, BTreeSet};

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, ContentBlock, ErrorCode, GetPromptRequestParams, Reference,
};
use serde_json::{Value, json};

use crate::common::*;
use crate::resources::{mcp_error, python_script};

/// tests/interop/python_sdk_prompts.py: the list, each prompt with
/// arguments, completions of their arguments and bad names and arguments,
/// over stdio (both handshakes) and HTTP.
#[test]
fn python_sdk_lists_and_gets_prompts_over_stdio_and_http() {
    python_script(
        "python_sdk_prompts.py",
        &[
            "prompts [stdio legacy]: ok",
            "prompts [stdio auto]: ok",
            "prompts [http]: ok",
        ],
    );
}

/// The text of prompt `name` with `arguments`.
async fn prompt(server: &Server, name: &str, arguments: Value) -> String {
    let request = GetPromptRequestParams::new(name)
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    let result = server
        .client
        .get_prompt(request)
        .await
        .unwrap_or_else(|e| panic!("prompts/get {name}: {e}"));
    assert_eq!(result.messages.len(), 1, "{result:?}");
    match &result.messages[0].content {
        ContentBlock::Text(text) => text.text.clone(),
        other => panic!("{name}: not text: {other:?}"),
    }
}

/// least_privilege_token's commands grant, on each ACL path, the first
/// privilege of each `any_of` the named tools declare (as `pve-mcp tools
/// --json` shows them), to the token and its user; its policy enables the
/// reads and asks approval for the write.
#[tokio::test]
async fn least_privilege_token_grants_what_the_tools_declare() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let tools = [
            "pve_list_vms",
            "pve_get_node_metrics",
            "pve_list_storage",
            "pve_guest_agent_info",
            "pve_migrate_vm",
        ];
        let text = prompt(
            &server,
            "least_privilege_token",
            json!({"tools": tools.join(",")}),
        )
        .await;

        // Expected from the component's own declarations.
        let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for tool in described_tools()
            .iter()
            .filter(|t| tools.contains(&t["name"].as_str().unwrap()))
        {
            for privilege in tool["privileges"].as_array().unwrap() {
                let path = privilege["path"].as_str().unwrap();
                let acl = path.split("/{").next().unwrap();
                let acl = if acl.is_empty() { "/" } else { acl };
                let first = privilege["any_of"][0].as_str().unwrap().to_string();
                expected.entry(acl.to_string()).or_default().insert(first);
            }
        }
        assert!(expected.len() >= 3, "{expected:?}");
        for (path, privileges) in &expected {
            let role_line = text
                .lines()
                .find(|l| {
                    l.starts_with("pveum role add") && {
                        let role = l.split_whitespace().nth(3).unwrap();
                        text.contains(&format!(
                            "pveum acl modify {path} --tokens 'pve-mcp@pve!agent' --roles {role}"
                        )) && text.contains(&format!(
                            "pveum acl modify {path} --users pve-mcp@pve --roles {role}"
                        ))
                    }
                })
                .unwrap_or_else(|| panic!("no role granted on {path}: {text}"));
            let granted: BTreeSet<String> = role_line
                .split('"')
                .nth(1)
                .unwrap()
                .split(',')
                .map(str::to_string)
                .collect();
            assert_eq!(&granted, privileges, "{path}: {role_line}");
        }
        assert!(text.contains("pveum user token add pve-mcp@pve agent --privsep 1"));
        // The agent tool accepts PVE 8's privilege too: named as such.
        assert!(text.contains("VM.Monitor may stand in for"), "{text}");
        for tool in &tools[..4] {
            assert!(
                text.contains(&format!("[policy.tools.{tool}]\naction = \"allow\"")),
                "{tool}: {text}"
            );
        }
        assert!(
            text.contains("[policy.tools.pve_migrate_vm]\naction = \"require_approval\""),
            "{text}"
        );
        assert!(text.contains("[policy]\ndefault = \"deny\""), "{text}");
        server.stop().await;
    })
    .await;
}

/// A prompt names the tools this caller cannot run as unavailable rather
/// than inviting refused calls; completions for a denied list are empty;
/// a bad prompt request is an invalid-params error and the server goes on.
#[tokio::test]
async fn prompts_name_the_tools_the_policy_denies_as_unavailable() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let config = "[policy.tools.pve_get_vm_metrics]\naction = \"deny\"\n\
                      [policy.tools.pve_list_vms]\naction = \"deny\"\n";
        let server = Server::with_config(&sim, dir.path(), config, Opts::default()).await;
        let text = prompt(&server, "diagnose_guest", json!({"vmid": "100"})).await;
        let unavailable = text
            .split("Not available to you on this server")
            .nth(1)
            .unwrap_or_else(|| panic!("{text}"));
        // Denied by the policy, and (agent) not offered by the server.
        assert!(
            unavailable.contains("pve_get_vm_metrics, pve_guest_agent_info"),
            "{unavailable}"
        );
        assert!(!unavailable.contains("pve_get_vm_status"), "{unavailable}");

        let vmids = server
            .client
            .complete(CompleteRequestParams::new(
                Reference::for_prompt("diagnose_guest"),
                ArgumentInfo::new("vmid", "1"),
            ))
            .await
            .unwrap()
            .completion;
        assert!(vmids.values.is_empty(), "{vmids:?}");

        let missing = mcp_error(
            server
                .client
                .get_prompt(GetPromptRequestParams::new("plan_node_maintenance"))
                .await,
        );
        assert_eq!(missing.code, ErrorCode::INVALID_PARAMS);
        assert!(
            missing
                .message
                .contains("Missing required argument node for prompt plan_node_maintenance"),
            "{missing:?}"
        );
        let plan = prompt(&server, "plan_node_maintenance", json!({"node": "pve2"})).await;
        // pve_list_vms is denied: the plan says so.
        assert!(
            plan.contains("Not available to you on this server (not offered, hidden or denied by its policy, or without a credential): pve_list_vms."),
            "{plan}"
        );
        server.stop().await;
    })
    .await;
}
