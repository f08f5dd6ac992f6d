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
            assert_eq!(input["additionalProperties"], false, "{}", tool.name);
            let output = tool.output_schema.as_ref().expect("outputSchema");
            assert_eq!(output["type"], "object", "{}", tool.name);
            assert!(
                tool.description.as_ref().is_some_and(|d| d.len() > 40),
                "{}",
                tool.name
            );
            assert!(tool.title.is_some(), "{}", tool.name);
            let a = tool.annotations.as_ref().expect("annotations");
            assert_eq!(a.read_only_hint, Some(true), "{}", tool.name);
            assert_eq!(a.destructive_hint, Some(false), "{}", tool.name);
            assert_eq!(a.idempotent_hint, Some(true), "{}", tool.name);
            assert_eq!(a.open_world_hint, Some(true), "{}", tool.name);
            // Every tool can be pointed at any configured cluster, and says
            // which one answered.
            assert_eq!(
                input["properties"]["cluster"]["type"], "string",
                "{}",
                tool.name
            );
            assert!(
                output["required"]
                    .as_array()
                    .unwrap()
                    .contains(&serde_json::json!("cluster")),
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
