//! `tools/list`: schemas and annotations as MCP clients see them.

use crate::common::*;

#[tokio::test]
async fn every_tool_is_listed_with_schemas_and_read_only_annotations() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let tools = server.client.list_all_tools().await.expect("tools/list");
        let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
        assert_eq!(
            names[..2],
            ["pve_list_vms", "pve_get_vm_status"],
            "the two core tools come first"
        );
        names.sort();
        let mut expected: Vec<_> = catalog().iter().map(|s| s.to_string()).collect();
        expected.sort();
        assert_eq!(names, expected);
        for tool in &tools {
            let input = tool.input_schema.as_ref();
            assert_eq!(input["type"], "object", "{}", tool.name);
            // Closed by the guest's own check, not in every conversation.
            assert!(input.get("additionalProperties").is_none(), "{}", tool.name);
            let output = tool.output_schema.as_ref().expect("outputSchema");
            assert_eq!(output["type"], "object", "{}", tool.name);
            assert!(
                tool.description.as_ref().is_some_and(|d| d.len() > 40),
                "{}",
                tool.name
            );
            assert!(tool.title.is_some(), "{}", tool.name);
            let a = tool.annotations.as_ref().expect("annotations");
            // A read-only tool's other hints mean nothing in MCP: only
            // what differs from the defaults is sent.
            assert_eq!(a.read_only_hint, Some(true), "{}", tool.name);
            assert_eq!(a.destructive_hint, None, "{}", tool.name);
            assert_eq!(a.idempotent_hint, None, "{}", tool.name);
            assert_eq!(a.open_world_hint, None, "{}", tool.name);
            // With one cluster there is none to choose: `cluster` is
            // accepted but not offered (see the two-cluster test).
            assert!(
                input["properties"].get("cluster").is_none(),
                "{}",
                tool.name
            );
            // The listed output schema is structure only (docs/tools.md):
            // `cluster` is declared there, and every answer carries it
            // (`structured_results_match_their_output_schemas`).
            assert!(
                output["properties"].get("cluster").is_some(),
                "{}",
                tool.name
            );
            // `confirm` is accepted but not advertised.
            assert!(
                input["properties"].get("confirm").is_none(),
                "{}",
                tool.name
            );
        }
        let status = tools
            .iter()
            .find(|t| t.name == "pve_get_vm_status")
            .unwrap();
        let props = status.input_schema["properties"].as_object().unwrap();
        assert_eq!(props["vmid"]["minimum"], 100);
        assert_eq!(props["vmid"]["maximum"], 999_999_999);
        assert_eq!(props["vm_type"]["enum"], serde_json::json!(["qemu", "lxc"]));
        assert_eq!(status.input_schema["required"], serde_json::json!(["vmid"]));
        // Listing tools never touches Proxmox.
        assert!(sim.requests().is_empty(), "{:?}", sim.requests());
    })
    .await;
}

#[tokio::test]
async fn structured_results_match_their_output_schemas() {
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let tools = server.client.list_all_tools().await.unwrap();
        let calls = [
            ("pve_list_vms", serde_json::json!({})),
            ("pve_list_vms", serde_json::json!({"node": "pve3"})),
            ("pve_get_vm_status", serde_json::json!({"vmid": 100})),
            ("pve_get_vm_status", serde_json::json!({"vmid": 102})),
            ("pve_get_vm_status", serde_json::json!({"vmid": 200})),
            (
                "pve_get_vm_status",
                serde_json::json!({"vmid": 106, "node": "pve1", "vm_type": "lxc"}),
            ),
        ];
        for (tool, args) in calls {
            let result = server.call(tool, args.clone()).await;
            let structured = result
                .structured_content
                .clone()
                .expect("structuredContent");
            assert_matches_output_schema(&tools, tool, &args, &structured);
            assert!(structured.get("cluster").is_some(), "{tool}: {structured}");
            // The JSON also travels as a text block, after the summary.
            assert!(result.content.len() >= 2, "{tool}: {:?}", result.content);
            let json_block: serde_json::Value =
                serde_json::from_str(&text_of_block(&result, 1)).unwrap();
            assert_eq!(json_block, structured);
        }
        assert_no_schema_violations(&sim);
    })
    .await;
}

fn text_of_block(result: &rmcp::model::CallToolResult, i: usize) -> String {
    match &result.content[i] {
        rmcp::model::ContentBlock::Text(t) => t.text.clone(),
        other => panic!("block {i} is not text: {other:?}"),
    }
}

/// Issue 22's tool-list sizes, as a client gets them over stdio, are what
/// `pve-mcp tools --sizes --json` reports, and stay within the ceilings
/// below (bytes of compact JSON; docs/tools.md): the budgets. A
/// new tool is born small enough to keep them; they are never raised to
/// let a tool grow.
#[tokio::test]
async fn the_tool_list_stays_within_its_byte_budgets() {
    const PER_TOOL_MAX: usize = 800;
    const DEFAULT_LIST_MAX: usize = 14 << 10;
    const WHOLE_PER_TOOL_MAX: usize = 2_000;
    within(async {
        let sim = simulator().await;
        let server = Server::start(&sim, Opts::default()).await;
        let tools = server.client.list_all_tools().await.expect("tools/list");
        let visible = ["name", "title", "description", "inputSchema", "annotations"];
        let mut measured = std::collections::BTreeMap::new();
        for tool in &tools {
            let serde_json::Value::Object(d) = serde_json::to_value(tool).unwrap() else {
                panic!("a tool is an object")
            };
            let part: serde_json::Map<_, _> = d
                .iter()
                .filter(|(k, _)| visible.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let size = |m: serde_json::Map<String, serde_json::Value>| {
                serde_json::to_vec(&serde_json::Value::Object(m))
                    .unwrap()
                    .len()
            };
            measured.insert(tool.name.to_string(), (size(part), size(d)));
        }
        let sizes: serde_json::Value =
            serde_json::from_slice(&tools_output_with(&["--sizes", "--json"])).unwrap();
        // The default policy lists the read tier of the default toolsets:
        // those sizes are checked against the client's; the others come
        // from the same definitions.
        let mut read_total = 0;
        for t in sizes["tools"].as_array().unwrap() {
            let name = t["name"].as_str().unwrap();
            if t["default"] != true {
                assert!(!measured.contains_key(name), "{name}");
                continue;
            }
            assert_eq!(t["tier"], "read", "{name}");
            let (visible, whole) = measured[name];
            assert_eq!(t["model_visible"], visible, "{name}");
            assert_eq!(t["whole"], whole, "{name}");
            read_total += visible;
        }
        assert_eq!(sizes["default"]["tools"], tools.len());
        assert_eq!(sizes["default"]["model_visible"], read_total);
        assert_eq!(sizes["all"]["tools"], described_tools().len());
        let all = &sizes["all"];
        let read = &sizes["default"];
        assert!(
            all["model_visible_per_tool"].as_u64().unwrap() as usize <= PER_TOOL_MAX,
            "{all}"
        );
        assert!(
            all["whole_per_tool"].as_u64().unwrap() as usize <= WHOLE_PER_TOOL_MAX,
            "{all}"
        );
        assert!(
            read["model_visible"].as_u64().unwrap() as usize <= DEFAULT_LIST_MAX,
            "{read}"
        );
    })
    .await;
}
