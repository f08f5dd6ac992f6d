//! The command line: config errors exit 2 naming the key, `call` and
//! `tools` work, and a bad transport is refused.

use std::process::Output;

use serde_json::Value;

use crate::common::HOSTILE_WASM;

const BIN: &str = env!("CARGO_BIN_EXE_pve-mcp");

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let cache = crate::common::cache_dir();
    let mut cmd = std::process::Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PVE_MCP_CACHE_DIR", cache)
        .args(args)
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running pve-mcp");
    crate::common::Secrets::of_command(env, args).check_output(&format!("pve-mcp {args:?}"), &out);
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn missing_settings_exit_2_naming_the_key_and_the_fix() {
    let o = run(&["serve"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("PVE_BASE_URL") && e.contains("fix:") && e.contains("pve-mcp demo"),
        "{e}"
    );
    assert!(o.stdout.is_empty(), "stdout is for MCP only");

    let o = run(
        &["serve"],
        &[
            ("PVE_BASE_URL", "http://pve:8006"),
            ("PVE_API_TOKEN_ID", "a@pam!b"),
            ("PVE_API_TOKEN_SECRET", "123456"),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("PVE_ALLOW_INSECURE_HTTP"),
        "{}",
        stderr(&o)
    );

    let o = run(
        &["serve"],
        &[
            ("PVE_BASE_URL", "https://pve:8006"),
            ("PVE_API_TOKEN_ID", "root@pam"),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("PVE_API_TOKEN_ID"), "{}", stderr(&o));

    let o = run(&["serve"], &[("MCP_TRANSPORT", "sse")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("MCP_TRANSPORT"), "{}", stderr(&o));

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pve-mcp.toml");
    std::fs::write(
        &config,
        "[pve]\nbase_url = \"https://pve:8006\"\nverify_tls = false\n",
    )
    .unwrap();
    let o = run(&["--config", config.to_str().unwrap(), "serve"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("verify_tls") && stderr(&o).contains("line 3"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn call_against_the_demo_prints_the_mcp_result() {
    let o = run(
        &[
            "call",
            "pve_get_vm_status",
            "--args",
            r#"{"vmid": 102}"#,
            "--demo",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let result: Value = serde_json::from_slice(&o.stdout).expect("stdout is the JSON result");
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["qmpstatus"], "paused");

    let o = run(
        &[
            "call",
            "pve_get_vm_status",
            "--args",
            r#"{"vmid": 99}"#,
            "--demo",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(result["isError"], true);

    let o = run(
        &["call", "pve_get_vm_status", "--args", "{vmid: 1}", "--demo"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--args"), "{}", stderr(&o));

    let o = run(&["call", "no_such_tool", "--demo"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("pve_list_vms"),
        "the real tools are listed: {}",
        stderr(&o)
    );
}

#[test]
fn tools_lists_the_catalog_as_table_and_json() {
    let o = run(&["tools"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("pve_list_vms") && table.contains("pve_get_vm_status"),
        "{table}"
    );
    let o = run(&["tools", "--json"], &[]);
    let tools: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let mut expected: Vec<&str> =
        [crate::common::read_tools(), crate::common::write_tools()].concat();
    names.sort_unstable();
    expected.sort_unstable();
    assert_eq!(names, expected);
    assert!(
        tools
            .iter()
            .all(|t| t["inputSchema"]["type"] == "object" && t["outputSchema"].is_object())
    );
}

/// The table says which tools wait for Proxmox tasks (and so may run up to
/// `sandbox.max_wait_secs` longer): what each component's descriptors say.
/// The WAITS cell of a row of `pve-mcp tools`.
fn waits_cell(row: &str) -> String {
    row.split_whitespace()
        .skip(1)
        .find(|c| *c == "yes" || *c == "-")
        .unwrap_or_default()
        .to_string()
}

#[test]
fn tools_table_marks_the_tools_that_wait() {
    let o = run(&["--component", HOSTILE_WASM, "tools"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    let waits = |tool: &str| {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(tool))
            .unwrap_or_else(|| panic!("no {tool} in {table}"));
        // The tier may be several words (`write; destructive with prune`):
        // WAITS is the first cell after the name that is `yes` or `-`.
        waits_cell(row)
    };
    assert!(table.starts_with("TOOL"), "{table}");
    assert_eq!(waits("hostile_wait"), "yes", "{table}");
    assert_eq!(waits("hostile_sleep"), "-", "{table}");
    // The embedded tools: the write tools and pve_wait_task wait for
    // tasks; no other read tool does.
    let o = run(&["tools"], &[]);
    let table = String::from_utf8_lossy(&o.stdout);
    // Below the rows, the toolsets a server offers only when named.
    assert!(
        table.ends_with(
            "\nOffered only when named (--toolsets default,NAME, or all): agent, firewall, ha, \
             nodes, pools, provisioning, replication.\n"
        ),
        "{table}"
    );
    for line in table.lines().skip(1).take_while(|l| !l.is_empty()) {
        let tool = line.split_whitespace().next().unwrap_or_default();
        let waits = waits_cell(line);
        let expected = if crate::common::write_tools().contains(&tool) || tool == "pve_wait_task" {
            "yes"
        } else {
            "-"
        };
        assert_eq!(waits, expected, "{tool}: {table}");
    }
}

/// `tools --routes` shows the only writes each tool may send: none for the
/// embedded read tools, its own for each write tool; the hostile
/// component's declared routes, as the host parsed them.
#[test]
fn tools_routes_prints_each_tools_writes() {
    let o = run(&["tools", "--routes"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = table.lines().skip(1).collect();
    let starts = |r: &&str, names: &[&str]| names.iter().any(|n| r.starts_with(&format!("{n} ")));
    let reads: Vec<&&str> = rows
        .iter()
        .filter(|r| starts(r, crate::common::read_tools()))
        .collect();
    assert_eq!(reads.len(), crate::common::read_tools().len(), "{table}");
    assert!(reads.iter().all(|r| r.contains("reads only")), "{table}");
    for tool in crate::common::write_tools() {
        // The generic tool's one route is its call's own request.
        let route = if *tool == "pve_api_request" {
            "{method} /api2/json/{path} (the call's own request"
        } else if tool.ends_with("_pool") {
            // Pools are the cluster's, not a node's.
            "/api2/json/pools"
        } else if tool.contains("_ha_") || tool.ends_with("_ha_resource") {
            "/api2/json/cluster/ha/resources"
        } else if tool.contains("firewall") {
            // Each scope its own route, the cluster's first.
            "/api2/json/cluster/firewall/"
        } else {
            "/api2/json/nodes/"
        };
        assert!(
            rows.iter()
                .any(|r| r.starts_with(&format!("{tool} ")) && r.contains(route)),
            "{tool} lists no route: {table}"
        );
    }
    assert!(
        table.contains("DELETE /api2/json/nodes/{node}/{vm_type}/{vmid}"),
        "{table}"
    );

    let o = run(&["--component", HOSTILE_WASM, "tools", "--routes"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    let row = |tool: &str| {
        table
            .lines()
            .find(|l| l.starts_with(tool))
            .unwrap_or_else(|| panic!("no {tool} in {table}"))
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        row("hostile_routes"),
        "POST /api2/json/nodes/{node}/{vm_type}/{vmid}/status/start params: none"
    );
    assert_eq!(
        row("hostile_methods"),
        "POST /api2/json/version params: hostile=1, padding=<text of up to 524288 bytes>"
    );
    assert_eq!(
        row("hostile_backup"),
        "POST /api2/json/nodes/{node}/vzdump params: vmid=<vmid>, storage=<storage>, remove=<prune>|0"
    );
    assert!(
        table.contains("PUT /api2/json/version") && table.contains("DELETE /api2/json/version")
    );
}

#[test]
fn demo_serves_mcp_when_spawned_by_a_client() {
    use std::io::Write;
    let cache = crate::common::cache_dir();
    let mut child = std::process::Command::new(BIN)
        .arg("demo")
        .env("PVE_MCP_CACHE_DIR", cache)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
    .unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"pve_list_vms","arguments":{{}}}}}}"#).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = lines
        .iter()
        .find(|m| m["id"] == 2)
        .expect("a reply to the call");
    assert_eq!(call["result"]["structuredContent"]["total"], 13, "{call}");
}

/// `--help` of every command, with every secret variable set: nothing
/// shows a secret's value (clap prints `[env: NAME=value]` for an argument
/// bound to a variable unless told not to). `run` scans the output.
#[test]
fn help_shows_no_secret_from_the_environment() {
    let env = [
        ("PVE_API_TOKEN_SECRET", pve_sim::tokens::ADMIN_TOKEN_SECRET),
        ("PVE_PASSWORD", "help-password-6c2e"),
        ("MCP_AUTH_TOKEN", "help-mcp-token-0123456789abcdef"),
        ("PVE_MCP_ADMIN_TOKEN", "help-admin-token-5d1f"),
        (
            "PVE_MCP_POLICY_STATE",
            "redis://:help-redis-pass@127.0.0.1:1/0",
        ),
    ];
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["demo", "--help"],
        &["tools", "--help"],
        &["call", "--help"],
        &["policy", "check", "--help"],
        &["approvals", "--help"],
        &["audit", "verify", "--help"],
    ] {
        let o = run(args, &env);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(!o.stdout.is_empty(), "{args:?} printed no help");
    }
}

/// `--version` names the embedded component by its SHA-256 (that of the
/// file the build embedded) and the WIT contract it implements, so an
/// operator can tie a deployment to the exact code that runs.
#[test]
fn version_names_the_component_and_its_contract() {
    let o = run(&["--version"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let hex = crate::common::sha256_hex(&std::fs::read(env!("PVE_MCP_GUEST_WASM_PATH")).unwrap());
    let package = crate::common::wit_package();
    assert!(
        text.starts_with(&format!("pve-mcp {}\n", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(
        text.contains(&format!("component: sha256:{hex} (embedded")),
        "{text}"
    );
    assert!(text.contains(&format!("contract: {package}")), "{text}");
}

/// `pve-mcp component --out DIR` writes the exact component this binary
/// runs (its SHA-256 is the one `--version` prints) and the WIT contract,
/// and that component imports only what the world declares, so a host
/// that links exactly the world can run it.
#[test]
fn component_writes_the_embedded_component_and_its_contract() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dist");
    let o = run(&["component", "--out", out.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let wasm = std::fs::read(out.join("pve_tools.wasm")).unwrap();
    let hex = crate::common::sha256_hex(&wasm);
    let version = String::from_utf8_lossy(&run(&["--version"], &[]).stdout).to_string();
    assert!(version.contains(&format!("sha256:{hex}")), "{version}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("sha256:{hex}")),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let wit = concat!(env!("CARGO_MANIFEST_DIR"), "/../wit");
    for file in ["pve-tools.wit", "deps/http/http.wit", "deps/io/io.wit"] {
        assert_eq!(
            std::fs::read(out.join("wit").join(file)).unwrap(),
            std::fs::read(format!("{wit}/{file}")).unwrap(),
            "{file}"
        );
    }
    let imports = pve_mcp::sandbox::component::imports(&wasm).unwrap();
    assert!(
        imports
            .iter()
            .any(|i| i.starts_with("wasi:http/outgoing-handler"))
    );
    assert_eq!(
        pve_mcp::sandbox::component::undeclared(&imports),
        Vec::<String>::new()
    );
}
