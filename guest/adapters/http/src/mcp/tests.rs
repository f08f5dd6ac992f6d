use std::cell::RefCell;

use super::*;

/// A fake tool component: one read tool, one write tool of an opt-in
/// toolset, and a recorded call.
struct Fake {
    calls: RefCell<Vec<(wit::CallContext, String, String)>>,
    answer: fn(&str) -> Result<wit::ToolOutput, wit::ToolError>,
}

fn descriptor(name: &str, toolset: &str, writes: bool) -> wit::ToolDescriptor {
    wit::ToolDescriptor {
        name: name.into(),
        title: format!("{name} title"),
        description: format!("{name} description"),
        input_schema: r#"{"type":"object","properties":{"vmid":{"type":"integer"},"cluster":{"type":"string"}},"required":["vmid"]}"#.into(),
        output_schema: Some(r#"{"type":"object"}"#.into()),
        annotations: wit::Annotations {
            read_only: !writes,
            destructive: false,
            idempotent: true,
            open_world: true,
        },
        routes: if writes {
            vec![wit::Route {
                method: "POST".into(),
                path: "/nodes/{node}/qemu/{vmid}/status/start".into(),
                params: Vec::new(),
                entries: None,
                once: false,
                when: None,
            }]
        } else {
            Vec::new()
        },
        waits: false,
        privileges: Vec::new(),
        toolset: toolset.into(),
        reads: Vec::new(),
    }
}

impl Tools for Fake {
    fn list(&self) -> Vec<wit::ToolDescriptor> {
        vec![
            descriptor("pve_get_vm_status", "guests", false),
            descriptor("pve_start_vm", "guests", true),
            descriptor("pve_get_firewall", "firewall", false),
        ]
    }

    fn call(
        &self,
        ctx: &wit::CallContext,
        name: &str,
        arguments: &str,
    ) -> Result<wit::ToolOutput, wit::ToolError> {
        self.calls
            .borrow_mut()
            .push((ctx.clone(), name.into(), arguments.into()));
        (self.answer)(arguments)
    }
}

fn fake() -> Fake {
    Fake {
        calls: RefCell::new(Vec::new()),
        answer: |arguments| {
            if arguments.contains("99") {
                Err(wit::ToolError::InvalidArguments(
                    "vmid: 99 is below 100".into(),
                ))
            } else if arguments.contains("reset") {
                Err(wit::ToolError::Upstream(
                    "Reading Proxmox's response from http://x failed (\"connection reset\"). Retry"
                        .into(),
                ))
            } else if arguments.contains("unreachable") {
                Err(wit::ToolError::Upstream(
                    "Cannot reach Proxmox at http://127.0.0.1:8007/token/t0123456789abcdef".into(),
                ))
            } else if arguments.contains("404") {
                Ok(wit::ToolOutput {
                    structured: "{}".into(),
                    summary: "VM 404 does not exist".into(),
                    is_error: true,
                })
            } else {
                Ok(wit::ToolOutput {
                    structured: r#"{"status":"running"}"#.into(),
                    summary: "VM 100 is running".into(),
                    is_error: false,
                })
            }
        },
    }
}

fn config(vars: &[(&str, &str)]) -> Config {
    let mut all = vec![(
        "PVE_MCP_PROXY_URL".to_owned(),
        "http://127.0.0.1:8007/token/t0123456789abcdef".to_owned(),
    )];
    all.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Config::from_vars(all)
}

fn post(config: &Config, tools: &dyn Tools, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let headers = [("Content-Type".to_owned(), "application/json".to_owned())];
    let answer = handle(
        &HttpRequest {
            method: "POST",
            path: "/mcp",
            headers: &headers,
            body: body.as_bytes(),
        },
        config,
        tools,
    );
    let value = if answer.body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&answer.body).unwrap_or_else(|_| json!(answer.body_text()))
    };
    (answer.status, value)
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

#[test]
fn initialize_answers_the_clients_revision_or_the_newest_with_a_handshake() {
    let (c, t) = (config(&[]), fake());
    for (asked, answered) in [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ] {
        let (status, answer) = post(
            &c,
            &t,
            &rpc(
                "initialize",
                json!({"protocolVersion": asked, "capabilities": {}}),
            ),
        );
        assert_eq!(status, 200);
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["result"]["protocolVersion"], answered, "{asked}");
        assert_eq!(
            answer["result"]["capabilities"]["tools"]["listChanged"],
            false
        );
        assert_eq!(answer["result"]["serverInfo"]["name"], "pve-mcp");
    }
    let (_, pong) = post(&c, &t, &rpc("ping", json!({})));
    assert_eq!(pong["result"], json!({}));
}

#[test]
fn notifications_get_202_and_other_methods_405() {
    let (c, t) = (config(&[]), fake());
    let (status, body) = post(
        &c,
        &t,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!((status, body), (202, Value::Null));
    for method in ["GET", "DELETE"] {
        let answer = handle(
            &HttpRequest {
                method,
                path: "/mcp",
                headers: &[],
                body: b"",
            },
            &c,
            &t,
        );
        assert_eq!(answer.status, 405);
    }
    let answer = handle(
        &HttpRequest {
            method: "POST",
            path: "/other",
            headers: &[],
            body: b"{}",
        },
        &c,
        &t,
    );
    assert_eq!(answer.status, 404);
    let (status, answer) = post(&c, &t, &json!([rpc("ping", json!({}))]));
    assert_eq!((status, &answer["error"]["code"]), (400, &json!(-32600)));
    let (_, answer) = post(&c, &t, &rpc("resources/list", json!({})));
    assert_eq!(answer["error"]["code"], -32601);
}

#[test]
fn parse_errors_and_unknown_protocol_headers_are_400() {
    let (c, t) = (config(&[]), fake());
    let answer = handle(
        &HttpRequest {
            method: "POST",
            path: "/mcp",
            headers: &[],
            body: b"{not json",
        },
        &c,
        &t,
    );
    assert_eq!(answer.status, 400);
    assert!(answer.body_text().contains("-32700"));
    let headers = [("MCP-Protocol-Version".to_owned(), "1999-01-01".to_owned())];
    let answer = handle(
        &HttpRequest {
            method: "POST",
            path: "/mcp",
            headers: &headers,
            body: rpc("ping", json!({})).to_string().as_bytes(),
        },
        &c,
        &t,
    );
    assert_eq!(answer.status, 400);
}

#[test]
fn tools_list_offers_what_pve_mcp_serve_offers_by_default() {
    let t = fake();
    let (_, answer) = post(&config(&[]), &t, &rpc("tools/list", json!({})));
    let tools = answer["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["pve_get_vm_status"]);
    let tool = &tools[0];
    assert_eq!(tool["title"], "pve_get_vm_status title");
    assert_eq!(tool["description"], "pve_get_vm_status description");
    assert_eq!(tool["annotations"], json!({"readOnlyHint": true}));
    assert_eq!(tool["outputSchema"], json!({"type": "object"}));
    // One cluster: nothing to choose, so `cluster` is not advertised.
    assert!(tool["inputSchema"]["properties"].get("cluster").is_none());
    assert_eq!(tool["inputSchema"]["required"], json!(["vmid"]));

    let c = config(&[
        ("PVE_MCP_WRITES", "1"),
        ("PVE_MCP_TOOLSETS", "default,firewall"),
        ("PVE_MCP_CLUSTERS", "a,b"),
    ]);
    let (_, answer) = post(&c, &t, &rpc("tools/list", json!({})));
    let tools = answer["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["pve_get_vm_status", "pve_start_vm", "pve_get_firewall"]
    );
    // A write is never said not to be destructive.
    assert_eq!(tools[1]["annotations"], json!({"idempotentHint": true}));
    assert!(
        tools[0]["inputSchema"]["properties"]
            .get("cluster")
            .is_some()
    );
}

#[test]
fn tools_call_builds_the_context_from_the_environment() {
    let (c, t) = (config(&[("PVE_MCP_MAX_WAIT_SECS", "30")]), fake());
    let (_, answer) = post(
        &c,
        &t,
        &rpc(
            "tools/call",
            json!({"name": "pve_get_vm_status", "arguments": {"vmid": 100}}),
        ),
    );
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    assert_eq!(result["structuredContent"], json!({"status": "running"}));
    assert_eq!(result["content"][0]["text"], "VM 100 is running");
    assert_eq!(result["content"][1]["text"], r#"{"status":"running"}"#);
    let calls = t.calls.borrow();
    let (ctx, name, arguments) = &calls[0];
    assert_eq!(name, "pve_get_vm_status");
    assert_eq!(arguments, r#"{"vmid":100}"#);
    assert_eq!(ctx.wait_limit_secs, 30);
    assert_eq!(ctx.endpoints.len(), 1);
    assert_eq!(ctx.endpoints[0].name, "default");
    assert_eq!(
        ctx.endpoints[0].base_url,
        "http://127.0.0.1:8007/token/t0123456789abcdef"
    );
    assert!(ctx.request_id.starts_with("http-"));
}

#[test]
fn a_tools_failure_is_an_error_result_and_an_unknown_tool_a_protocol_error() {
    let (c, t) = (config(&[]), fake());
    let call = |name: &str, args: Value| {
        post(
            &c,
            &t,
            &rpc("tools/call", json!({"name": name, "arguments": args})),
        )
        .1
    };
    let failed = call("pve_get_vm_status", json!({"vmid": 404}));
    assert_eq!(failed["result"]["isError"], true);
    assert_eq!(
        failed["result"]["content"][0]["text"],
        "VM 404 does not exist"
    );
    let invalid = call("pve_get_vm_status", json!({"vmid": 99}));
    assert_eq!(invalid["result"]["isError"], true);
    assert_eq!(
        invalid["result"]["content"][0]["text"],
        "Invalid arguments: vmid: 99 is below 100"
    );
    // Not offered (a write under the default, an opt-in toolset): unknown.
    for name in ["pve_start_vm", "pve_get_firewall", "nope"] {
        let answer = call(name, json!({}));
        assert_eq!(answer["error"]["code"], -32602, "{name}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(name));
    }
    let unreachable = call("pve_get_vm_status", json!({"node": "unreachable"}));
    assert_eq!(
        unreachable["result"]["content"][0]["text"],
        "Cannot reach Proxmox at http://127.0.0.1:8007/token/***"
    );
    assert_eq!(t.calls.borrow().len(), 3);
    // A read whose connection was lost is run again, a few times at most.
    let reset = call("pve_get_vm_status", json!({"node": "reset"}));
    assert_eq!(reset["result"]["isError"], true);
    assert_eq!(t.calls.borrow().len(), 3 + MAX_TRIES as usize);
    let bad = post(
        &c,
        &t,
        &rpc(
            "tools/call",
            json!({"name": "pve_get_vm_status", "arguments": [1]}),
        ),
    );
    assert_eq!(bad.1["error"]["code"], -32602);
}

#[test]
fn without_a_proxy_url_calls_say_how_to_give_one() {
    let t = fake();
    let c = Config::from_vars(Vec::new());
    let (_, answer) = post(
        &c,
        &t,
        &rpc(
            "tools/call",
            json!({"name": "pve_get_vm_status", "arguments": {"vmid": 100}}),
        ),
    );
    assert_eq!(answer["result"]["isError"], true);
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("PVE_MCP_PROXY_URL"), "{text}");
    assert!(t.calls.borrow().is_empty());
}

#[test]
fn stateless_2026_requests_need_their_meta_and_a_known_revision() {
    let (c, t) = (config(&[]), fake());
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let (_, discovered) = post(&c, &t, &rpc("server/discover", json!({"_meta": meta})));
    let result = &discovered["result"];
    assert_eq!(result["supportedVersions"], json!(SUPPORTED));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "pve-mcp"
    );
    let (_, listed) = post(&c, &t, &rpc("tools/list", json!({"_meta": meta})));
    assert_eq!(listed["result"]["resultType"], "complete");
    assert_eq!(listed["result"]["ttlMs"], 0);
    assert_eq!(listed["result"]["cacheScope"], "private");
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 1);
    let (_, missing) = post(&c, &t, &rpc("server/discover", json!({})));
    assert_eq!(missing["error"]["code"], -32602);
    let (_, ping) = post(&c, &t, &rpc("ping", json!({"_meta": meta})));
    assert_eq!(ping["error"]["code"], -32601);
    let (_, unknown) = post(
        &c,
        &t,
        &rpc(
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}}),
        ),
    );
    assert_eq!(unknown["error"]["code"], UNSUPPORTED_VERSION);
    assert_eq!(unknown["error"]["data"]["supported"], json!(SUPPORTED));
}

#[test]
fn a_token_and_the_host_allow_list_guard_every_request() {
    let t = fake();
    let c = config(&[("PVE_MCP_HTTP_TOKEN", "0123456789abcdef")]);
    let send = |headers: &[(String, String)]| {
        handle(
            &HttpRequest {
                method: "POST",
                path: "/mcp",
                headers,
                body: rpc("ping", json!({})).to_string().as_bytes(),
            },
            &c,
            &t,
        )
    };
    let h = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let refused = send(&[]);
    assert_eq!(refused.status, 401);
    assert!(
        refused
            .headers
            .contains(&("www-authenticate", "Bearer".into()))
    );
    assert_eq!(
        send(&h(&[("Authorization", "Bearer 0123456789abcdeX")])).status,
        401
    );
    let ok = h(&[
        ("Authorization", "Bearer 0123456789abcdef"),
        ("Host", "127.0.0.1:8080"),
    ]);
    assert_eq!(send(&ok).status, 200);
    let mut rebound = ok.clone();
    rebound[1].1 = "evil.example:8080".into();
    assert_eq!(send(&rebound).status, 403);
    let mut origin = ok.clone();
    origin.push(("Origin".into(), "http://evil.example".into()));
    assert_eq!(send(&origin).status, 403);
    let mut local = ok;
    local.push(("Origin".into(), "http://[::1]:6274".into()));
    assert_eq!(send(&local).status, 200);
}
