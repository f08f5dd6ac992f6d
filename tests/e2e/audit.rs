//! The audit log through the real binary: `pve-mcp serve` with an `[audit]`
//! section, calls over MCP, then the records' fields, that no secret is in
//! them, and `pve-mcp audit verify` on the intact and on tampered logs.

use std::path::{Path, PathBuf};

use pve_mcp::canonical::arguments_hash;
use serde_json::{Value, json};

use crate::common::*;

/// A password passed as a tool argument; it must never reach the log.
const ARG_PASSWORD: &str = "hunter2-Correct-Horse";

const GENESIS: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// How a server-start record names the embedded component.
const EMBEDDED: &str = "embedded";

/// `record` is a server start naming `component` (`embedded`, or the
/// component file), with that component's SHA-256 and the WIT contract.
fn assert_server_start(record: &Value, component: &str) {
    assert_eq!(record["kind"], "server-start", "{record}");
    assert_eq!(record["component"], component, "{record}");
    let wasm = if component == EMBEDDED {
        env!("PVE_MCP_GUEST_WASM_PATH")
    } else {
        component
    };
    let hex = sha256_hex(&std::fs::read(wasm).unwrap());
    assert_eq!(record["component_sha256"], hex, "{record}");
    assert_eq!(record["contract"], wit_package(), "{record}");
    assert_eq!(record["version"], env!("CARGO_PKG_VERSION"), "{record}");
}

/// A config file with this `[audit]` body (and a short sandbox deadline,
/// which the hostile component needs).
fn audit_config(dir: &Path, audit: &str) -> PathBuf {
    let path = dir.join("pve-mcp.toml");
    std::fs::write(
        &path,
        format!("[sandbox]\ntimeout_secs = 4\n\n[audit]\n{audit}\n"),
    )
    .unwrap();
    path
}

fn with_config(opts: Opts, config: &Path) -> Opts {
    opts.arg("--config").arg(config.to_str().unwrap())
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .lines()
        .map(String::from)
        .collect()
}

fn records(path: &Path) -> Vec<Value> {
    audit_records(path)
}

/// The records of `kind` for `tool`, in the log's order. Tests find records
/// by what they say, not by line: every call that runs writes a
/// `call-start` record before its `call` record, which shifts lines.
fn all_of<'a>(records: &'a [Value], kind: &str, tool: &str) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|r| r["kind"] == kind && r["tool"] == tool)
        .collect()
}

/// The one record of `kind` for `tool`.
fn one<'a>(records: &'a [Value], kind: &str, tool: &str) -> &'a Value {
    match all_of(records, kind, tool)[..] {
        [record] => record,
        ref found => panic!("{} {kind} records for {tool}: {records:#?}", found.len()),
    }
}

/// The egress records of the call whose end record is `call`.
fn egress_of<'a>(records: &'a [Value], call: &Value) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|r| r["kind"] == "egress" && r["call_seq"] == call["seq"])
        .collect()
}

/// The exact line of a record, for hashing (one file, so line = seq - 1).
fn line_of<'a>(lines: &'a [String], record: &Value) -> &'a str {
    &lines[record["seq"].as_u64().unwrap() as usize - 1]
}

/// The chain's definition, computed here independently of the host.
fn sha256_line(line: &str) -> String {
    format!("sha256:{}", sha256_hex(line.as_bytes()))
}

fn object(v: &Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap()
}

/// `pve-mcp audit verify ARGS`: exit code, stdout, stderr.
pub async fn verify(args: &[&str]) -> (Option<i32>, String, String) {
    let out = tokio::process::Command::new(BIN)
        .arg("audit")
        .arg("verify")
        .args(args)
        .output()
        .await
        .expect("running pve-mcp audit verify");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Verification must fail at `file:line` with a message containing `what`.
async fn assert_broken_at(file: &Path, args: &[&str], line: usize, what: &str) {
    let mut all = vec![file.to_str().unwrap()];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = verify(&all).await;
    assert_eq!(code, Some(1), "stdout: {stdout}\nstderr: {stderr}");
    let at = format!("error: {}:{line}: ", file.display());
    assert!(stderr.starts_with(&at), "expected {at}...\ngot: {stderr}");
    assert!(stderr.contains(what), "expected {what:?} in: {stderr}");
}

/// A fresh file holding these lines.
fn write_lines(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{}\n", lines.join("\n"))).unwrap();
    path
}

#[tokio::test]
async fn calls_and_egress_are_recorded_without_secrets_and_the_chain_survives_a_restart() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let config = audit_config(
            dir.path(),
            &format!("path = \"{}\"\ninclude_arguments = true", log.display()),
        );
        let with_policy = dir.path().join("with-policy.toml");
        std::fs::write(
            &with_policy,
            format!(
                "{}\n[policy.tools.pve_list_nodes]\naction = \"deny\"\nreason = \"not for agents\"\n",
                std::fs::read_to_string(&config).unwrap()
            ),
        )
        .unwrap();

        // First run: the real tools, under a policy that denies one.
        let server = Server::start(&sim, with_config(Opts::default(), &with_policy)).await;
        let ok_args = json!({"status": "running", "limit": 5});
        let listed = server.ok("pve_list_vms", ok_args.clone()).await;
        let missing_args = json!({"vmid": 4242, "node": "pve1", "vm_type": "qemu"});
        server.err("pve_get_vm_status", missing_args.clone()).await;
        let secret_args = json!({"vmid": 100, "password": ARG_PASSWORD});
        server.err("pve_get_vm_status", secret_args.clone()).await;
        let denied = server.err("pve_list_nodes", json!({})).await;
        assert!(denied.contains("Denied by policy"), "{denied}");
        let first_run = lines(&log);
        server.stop().await;

        let r = records(&log);
        // The server's start, naming the component; list_vms: start, call,
        // its GET; the 404ing status call: start, call, its GET; the refused
        // arguments: start, call (the guest ran and sent nothing); the
        // policy's denial: a call record only (it never ran, so it has no
        // start record).
        assert_eq!(r.len(), 10, "{first_run:#?}");
        assert_server_start(&r[0], EMBEDDED);
        assert_eq!(r[0]["seq"], 1);
        assert_eq!(r[0]["prev"], GENESIS);
        let start = one(&r, "call-start", "pve_list_vms");
        assert_eq!(start["seq"], 2);
        assert_eq!(start["prev"], sha256_line(&first_run[0]));
        assert_eq!(start["access"], "read");
        let call = one(&r, "call", "pve_list_vms");
        assert_eq!(call["prev"], sha256_line(line_of(&first_run, start)));
        assert_eq!(start["call_id"], call["call_id"]);
        assert_eq!(start["args_hash"], call["args_hash"]);
        assert_eq!(start["args"], call["args"]);
        assert_eq!(call["kind"], "call");
        assert_eq!(call["session"], "stdio");
        assert!(
            call["client"].as_str().unwrap().starts_with("rmcp/"),
            "{call}"
        );
        assert_eq!(call["token"], Value::Null);
        assert_eq!(call["tool"], "pve_list_vms");
        assert_eq!(call["args_hash"], arguments_hash(&object(&ok_args)));
        assert_eq!(call["args"], ok_args);
        assert_eq!(call["decision"], "allow");
        assert_eq!(call["rule"], "policy.default");
        assert_eq!(call["outcome"], "ok");
        assert!(call["ms"].as_f64().unwrap() > 0.0, "{call}");
        assert_eq!(
            call["result_bytes"],
            serde_json::to_string(&listed).unwrap().len()
        );
        let upstream = call["upstream"].as_array().unwrap();
        assert_eq!(upstream.len(), 1, "{call}");
        assert_eq!(upstream[0]["method"], "GET");
        assert_eq!(upstream[0]["path"], "/api2/json/cluster/resources");
        assert_eq!(upstream[0]["status"], 200);
        assert_eq!(upstream[0]["decision"], "allow");
        assert!(upstream[0]["ms"].as_f64().unwrap() > 0.0);

        let egress = one(&r, "egress", "pve_list_vms");
        assert_eq!(egress["kind"], "egress");
        assert_eq!(egress["seq"], call["seq"].as_u64().unwrap() + 1);
        assert_eq!(egress["prev"], sha256_line(line_of(&first_run, call)));
        assert_eq!(egress["call_seq"], call["seq"]);
        assert_eq!(egress["call_id"], call["call_id"]);
        assert_eq!(egress["decision"], "allow");
        assert_eq!(egress["rule"], "egress.gate");
        assert_eq!(egress["status"], 200);
        assert_eq!(egress["path"], "/api2/json/cluster/resources");

        let status_calls = all_of(&r, "call", "pve_get_vm_status");
        let by_args = |args: &Value| {
            let hash = arguments_hash(&object(args));
            *status_calls
                .iter()
                .find(|c| c["args_hash"] == hash)
                .unwrap_or_else(|| panic!("no call with {args}: {r:#?}"))
        };
        let failed = by_args(&missing_args);
        assert_eq!(failed["tool"], "pve_get_vm_status");
        assert_eq!(failed["args_hash"], arguments_hash(&object(&missing_args)));
        assert_eq!(failed["outcome"], "upstream", "{failed}");
        assert!(failed["result_bytes"].as_u64().unwrap() > 0);
        assert_eq!(failed["upstream"][0]["status"], 500, "{failed}");
        assert_eq!(egress_of(&r, failed)[0]["status"], 500);

        let refused = by_args(&secret_args);
        assert_eq!(refused["outcome"], "invalid-arguments", "{refused}");
        assert_eq!(refused["args_hash"], arguments_hash(&object(&secret_args)));
        assert_eq!(refused["args"]["password"], "[REDACTED]");
        assert_eq!(refused["args"]["vmid"], 100);
        assert_eq!(refused["upstream"], json!([]));
        assert_eq!(all_of(&r, "call-start", "pve_get_vm_status").len(), 2);

        let by_policy = one(&r, "call", "pve_list_nodes");
        assert_eq!(by_policy["tool"], "pve_list_nodes");
        assert_eq!(by_policy["decision"], "deny");
        assert_eq!(by_policy["rule"], "policy.tools.pve_list_nodes");
        assert_eq!(by_policy["outcome"], "policy");
        assert_eq!(by_policy["args_hash"], arguments_hash(&object(&json!({}))));
        assert_eq!(by_policy["upstream"], json!([]));
        assert!(all_of(&r, "call-start", "pve_list_nodes").is_empty());

        // Second run, on the same file: the hostile component's denied
        // requests, continuing the chain rather than starting a new one.
        let opts = with_config(Opts::default(), &config)
            .arg("--component")
            .arg(HOSTILE_WASM);
        let server = Server::start(&sim, opts).await;
        server.ok("hostile_egress", json!({})).await;
        server.stop().await;

        let all = lines(&log);
        let r = records(&log);
        // The restart names the other component, by its file and hash.
        let restart = &r[first_run.len()];
        assert_eq!(restart["seq"], 11);
        assert_eq!(
            restart["prev"],
            sha256_line(first_run.last().unwrap()),
            "restart broke the chain"
        );
        assert_server_start(restart, HOSTILE_WASM);
        let start = one(&r, "call-start", "hostile_egress");
        assert_eq!(start["seq"], 12);
        let call = one(&r, "call", "hostile_egress");
        assert_eq!(call["seq"], 13);
        assert_eq!(call["call_id"], start["call_id"]);
        assert_eq!(call["tool"], "hostile_egress");
        assert_eq!(call["outcome"], "ok");
        let egress = egress_of(&r, call);
        assert_eq!(egress.len(), all_of(&r, "egress", "hostile_egress").len());
        assert_eq!(egress.len(), call["upstream"].as_array().unwrap().len());
        assert!(egress.len() >= 10, "{call}");
        for e in &egress {
            assert_eq!(e["kind"], "egress");
            assert_eq!(e["call_seq"], 13);
        }
        let denied: Vec<&&Value> = egress.iter().filter(|e| e["decision"] == "deny").collect();
        assert!(denied.len() >= 10, "{all:#?}");
        for e in &denied {
            let rule = e["rule"].as_str().unwrap();
            assert!(
                ["egress.authority", "egress.path", "egress.method"].contains(&rule),
                "{e}"
            );
            assert!(!e["reason"].as_str().unwrap().is_empty(), "{e}");
            assert_eq!(e["status"], Value::Null, "{e}");
        }
        assert!(denied.iter().any(|e| e["rule"] == "egress.authority"));
        assert!(denied.iter().any(|e| e["rule"] == "egress.path"));
        let allowed: Vec<&&Value> = egress.iter().filter(|e| e["decision"] == "allow").collect();
        assert_eq!(allowed.len(), 1, "only the control request goes out");
        assert_eq!(allowed[0]["path"], "/api2/json/version");
        assert_eq!(allowed[0]["status"], 200);

        // No secret anywhere: not the token, not the password argument.
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            !text.contains(ADMIN_TOKEN_SECRET),
            "the token secret is in the log"
        );
        assert!(
            !text.contains(ARG_PASSWORD),
            "the password argument is in the log"
        );

        // The whole chain verifies, and the last hash is the last line's.
        let (code, stdout, stderr) = verify(&[log.to_str().unwrap()]).await;
        assert_eq!(code, Some(0), "{stdout}{stderr}");
        assert!(
            stdout.contains(&format!("ok: {} records", all.len())),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("last hash: {}", sha256_line(all.last().unwrap()))),
            "{stdout}"
        );
    })
    .await;
}

#[tokio::test]
async fn edits_deletions_reorders_and_truncation_are_named_by_line() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let config = audit_config(dir.path(), &format!("path = \"{}\"", log.display()));
        let server = Server::start(&sim, with_config(Opts::default(), &config)).await;
        for _ in 0..4 {
            server.ok("pve_get_version", json!({})).await;
        }
        server.stop().await;
        let good = lines(&log);
        assert_eq!(
            good.len(),
            13,
            "the server's start, then a call's start, its end and its GET, four times"
        );
        let r = records(&log);
        // Without include_arguments only the hash is recorded.
        let first = all_of(&r, "call", "pve_get_version")[0];
        assert!(first.get("args").is_none(), "{first}");
        assert_eq!(first["args_hash"], arguments_hash(&object(&json!({}))));
        let first_start = all_of(&r, "call-start", "pve_get_version")[0];
        assert!(first_start.get("args").is_none(), "{first_start}");
        let (code, _, stderr) = verify(&[log.to_str().unwrap()]).await;
        assert_eq!(code, Some(0), "{stderr}");

        // An edited record (the second call's outcome): the next line's
        // prev no longer matches it.
        let seq = all_of(&r, "call", "pve_get_version")[1]["seq"]
            .as_u64()
            .unwrap() as usize;
        let mut edited = good.clone();
        edited[seq - 1] =
            edited[seq - 1].replace("\"outcome\":\"ok\"", "\"outcome\":\"tool-error\"");
        assert_ne!(edited[seq - 1], good[seq - 1]);
        let file = write_lines(dir.path(), "edited.jsonl", &edited);
        let what = format!("record seq {seq} was edited");
        assert_broken_at(&file, &[], seq, &what).await;

        // A deleted record: the gap is where it was.
        let mut deleted = good.clone();
        deleted.remove(3);
        let file = write_lines(dir.path(), "deleted.jsonl", &deleted);
        assert_broken_at(&file, &[], 4, "record seq 4 is missing").await;

        // Two records swapped.
        let mut swapped = good.clone();
        swapped.swap(4, 5);
        let file = write_lines(dir.path(), "swapped.jsonl", &swapped);
        assert_broken_at(&file, &[], 5, "out of order").await;

        // The first record removed.
        let file = write_lines(dir.path(), "headless.jsonl", &good[1..]);
        assert_broken_at(&file, &[], 1, "missing").await;

        // A last line cut off in the middle.
        let whole = std::fs::read_to_string(&log).unwrap();
        let file = dir.path().join("cut.jsonl");
        std::fs::write(&file, &whole[..whole.len() - 30]).unwrap();
        assert_broken_at(&file, &[], good.len(), "incomplete").await;

        // A dropped tail of whole records keeps a valid chain; only the hash
        // saved from an earlier verification (the anchor) reveals it.
        let (_, stdout, _) = verify(&[log.to_str().unwrap()]).await;
        let anchor = stdout
            .lines()
            .find_map(|l| l.strip_prefix("last hash: "))
            .expect("verify prints the last hash")
            .to_string();
        let file = write_lines(dir.path(), "tailless.jsonl", &good[..6]);
        let (code, stdout, stderr) = verify(&[file.to_str().unwrap()]).await;
        assert_eq!(code, Some(0), "{stdout}{stderr}");
        assert_broken_at(&file, &["--anchor", &anchor], 7, "dropped").await;
        let (code, _, stderr) = verify(&[log.to_str().unwrap(), "--anchor", &anchor]).await;
        assert_eq!(code, Some(0), "{stderr}");
    })
    .await;
}

#[tokio::test]
async fn rotation_keeps_one_chain_across_files() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir(&logs).unwrap();
        let log = logs.join("audit.jsonl");
        // About 2 KiB: a few calls per file.
        let config = audit_config(
            dir.path(),
            &format!("path = \"{}\"\nmax_size_mib = 0.002", log.display()),
        );
        let server = Server::start(&sim, with_config(Opts::default(), &config)).await;
        for _ in 0..8 {
            server.ok("pve_get_version", json!({})).await;
        }
        server.stop().await;

        let mut rotated: Vec<PathBuf> = std::fs::read_dir(&logs)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p != &log)
            .collect();
        rotated.sort();
        assert!(rotated.len() >= 2, "{rotated:?}");
        let mut chain: Vec<PathBuf> = rotated.clone();
        chain.push(log.clone());
        let mut total = 0;
        for pair in chain.windows(2) {
            let before = lines(&pair[0]);
            let after = records(&pair[1]);
            // max_size_mib = 0.002: 2,097 bytes.
            assert!(std::fs::metadata(&pair[0]).unwrap().len() <= (0.002 * 1048576.0) as u64);
            assert_eq!(
                after[0]["prev"],
                sha256_line(before.last().unwrap()),
                "{} does not continue {}",
                pair[1].display(),
                pair[0].display()
            );
        }
        for file in &chain {
            total += lines(file).len();
        }
        // The server's start; a call's start, its end and its GET, eight
        // times.
        assert_eq!(total, 25);

        // The directory, and the files in a shell glob's order (the active
        // file sorts first), both verify.
        let (code, stdout, stderr) = verify(&[logs.to_str().unwrap()]).await;
        assert_eq!(code, Some(0), "{stderr}");
        assert!(stdout.contains("ok: 25 records, seq 1..25"), "{stdout}");
        let mut glob: Vec<String> = chain.iter().map(|p| p.display().to_string()).collect();
        glob.sort();
        let glob: Vec<&str> = glob.iter().map(String::as_str).collect();
        let (code, _, stderr) = verify(&glob).await;
        assert_eq!(code, Some(0), "{stderr}");

        // A removed rotated file is a gap at the start of the next one.
        std::fs::remove_file(&rotated[1]).unwrap();
        let next = chain[2].clone();
        let (code, _, stderr) = verify(&[logs.to_str().unwrap()]).await;
        assert_eq!(code, Some(1), "{stderr}");
        assert!(
            stderr.starts_with(&format!("error: {}:1: ", next.display())),
            "{stderr}"
        );
        assert!(stderr.contains("missing"), "{stderr}");
    })
    .await;
}

/// The audit lines in a server's stderr, which also carries its logs.
fn audit_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("{\"seq\":"))
        .map(String::from)
        .collect()
}

#[tokio::test]
async fn records_go_to_stderr_alone_or_next_to_the_file() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();

        // path = "-": stderr only, one verifiable chain.
        let config = audit_config(dir.path(), "path = \"-\"");
        let server = Server::start(&sim, with_config(Opts::default(), &config)).await;
        server.ok("pve_get_version", json!({})).await;
        server.err("pve_get_vm_status", json!({"vmid": 1})).await;
        let stderr = server.stop().await;
        let only = audit_lines(&stderr);
        // The server's start; each call's start and end; the version
        // call's GET.
        assert_eq!(only.len(), 6, "{stderr}");
        assert!(!stderr.contains(ADMIN_TOKEN_SECRET));
        let file = write_lines(dir.path(), "from-stderr.jsonl", &only);
        let (code, _, err) = verify(&[file.to_str().unwrap()]).await;
        assert_eq!(code, Some(0), "{err}");

        // stderr = true next to a file: the same lines in both.
        let log = dir.path().join("audit.jsonl");
        let config = audit_config(
            dir.path(),
            &format!("path = \"{}\"\nstderr = true", log.display()),
        );
        let server = Server::start(&sim, with_config(Opts::default(), &config)).await;
        server.ok("pve_get_version", json!({})).await;
        let stderr = server.stop().await;
        assert_eq!(audit_lines(&stderr), lines(&log));
        assert_eq!(lines(&log).len(), 4);
    })
    .await;
}

#[tokio::test]
async fn an_unwritable_log_refuses_calls_unless_told_to_continue() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        // /dev/full opens, and fails every write with "no space left".
        let config = audit_config(dir.path(), "path = \"/dev/full\"");
        let server = Server::start(&sim, with_config(Opts::default(), &config)).await;
        for _ in 0..2 {
            let message = server.err("pve_get_version", json!({})).await;
            assert!(
                message.contains("refused") && message.contains("audit"),
                "{message}"
            );
            assert!(message.contains("call-start"), "{message}");
        }
        // Write-ahead: the start record failed, so the guest never ran and
        // nothing reached Proxmox, not even for the first call.
        assert!(sim.requests().is_empty(), "{:#?}", sim.requests());
        // Still serving: the protocol works and the error was logged.
        let tools = server.client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), catalog().len());
        let stderr = server.stop().await;
        assert!(stderr.contains("/dev/full"), "{stderr}");

        let config = audit_config(
            dir.path(),
            "path = \"/dev/full\"\non_failure = \"continue\"",
        );
        let server = Server::start(&sim, with_config(Opts::default(), &config)).await;
        let version = server.ok("pve_get_version", json!({})).await;
        assert!(version.get("version").is_some(), "{version}");
        let stderr = server.stop().await;
        assert!(stderr.contains("audit record lost"), "{stderr}");
    })
    .await;
}

#[tokio::test]
async fn bad_audit_settings_stop_the_start_naming_the_key() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("on_failure = \"sometimes\"", "audit.on_failure"),
            ("path = \"/nonexistent-dir/audit.jsonl\"", "audit.path"),
            ("max_size_mib = -2", "audit.max_size_mib"),
            ("colour = \"red\"", "colour"),
        ];
        for (body, key) in cases {
            let config = audit_config(dir.path(), body);
            let opts = with_config(Opts::default(), &config);
            let out = command(&sim, &opts, dir.path(), &["serve"])
                .stdin(std::process::Stdio::null())
                .output()
                .await
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{body}: {stderr}");
            assert!(stderr.contains(key), "{body}: {stderr}");
            assert!(stderr.contains("fix:"), "{body}: {stderr}");
        }
        // The environment names the file too, and `pve-mcp call` is audited.
        let log = dir.path().join("cli.jsonl");
        let opts = Opts::default().env("PVE_MCP_AUDIT_PATH", log.to_str().unwrap());
        let out = command(&sim, &opts, dir.path(), &["call", "pve_get_version"])
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let r = records(&log);
        assert_eq!(r.len(), 4, "{r:#?}");
        assert_server_start(&r[0], EMBEDDED);
        let call = one(&r, "call", "pve_get_version");
        assert_eq!(call["tool"], "pve_get_version");
        assert_eq!(call["outcome"], "ok");
        assert_eq!(one(&r, "egress", "pve_get_version")["kind"], "egress");
        assert_eq!(
            one(&r, "call-start", "pve_get_version")["call_id"],
            call["call_id"]
        );
    })
    .await;
}

#[tokio::test]
async fn a_cancelled_call_is_recorded_as_cancelled() {
    within(async {
        let sim = simulator().await;
        sim.add_fault(pve_sim::Fault {
            path_prefix: "/cluster/resources".into(),
            status: 0,
            reason: String::new(),
            times: Some(1),
            delay: Some(std::time::Duration::from_secs(3)),
            ..Default::default()
        });
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let config = audit_config(dir.path(), &format!("path = \"{}\"", log.display()));
        let server = Server::start(&sim, with_config(Opts::default(), &config)).await;
        // Dropping the client's call future sends notifications/cancelled;
        // it is dropped once the guest's request is held upstream.
        tokio::select! {
            result = server.try_call("pve_list_vms", json!({})) => {
                panic!("the held call finished: {result:?}")
            }
            () = wait_for_request(&sim) => {}
        }
        // Nobody waits for the record of a cancelled call; it arrives.
        wait_until(
            "the cancelled call's audit record",
            std::time::Duration::from_secs(30),
            async || {
                all_of(&records(&log), "call", "pve_list_vms")
                    .first()
                    .map(|_| ())
            },
        )
        .await;
        server.stop().await;
        let r = records(&log);
        // The server's start; the call's start, its cancelled end, and the
        // GET it had sent.
        assert_eq!(r.len(), 4, "{r:#?}");
        assert_server_start(&r[0], EMBEDDED);
        let start = one(&r, "call-start", "pve_list_vms");
        let call = one(&r, "call", "pve_list_vms");
        assert!(start["seq"].as_u64() < call["seq"].as_u64(), "{r:#?}");
        assert_eq!(start["call_id"], call["call_id"]);
        assert_eq!(call["tool"], "pve_list_vms");
        assert_eq!(call["outcome"], "cancelled");
        // The request it sent before the cancel, which got no answer.
        assert_eq!(call["upstream"][0]["path"], "/api2/json/cluster/resources");
        assert_eq!(call["upstream"][0]["status"], Value::Null);
        let egress = egress_of(&r, call);
        assert_eq!(egress.len(), 1, "{r:#?}");
        assert_eq!(egress[0]["path"], "/api2/json/cluster/resources");
        assert_eq!(egress[0]["call_id"], call["call_id"]);
        // The chain goes on after it, in the next run.
        let server = Server::start(&sim, with_config(Opts::default(), &config)).await;
        server.ok("pve_get_version", json!({})).await;
        server.stop().await;
        // After the four records of the first run, the second run's start.
        let next = one(&records(&log), "call-start", "pve_get_version")["seq"].clone();
        assert_eq!(next, 6);
        let (code, _, stderr) = verify(&[log.to_str().unwrap()]).await;
        assert_eq!(code, Some(0), "{stderr}");
    })
    .await;
}

#[tokio::test]
async fn a_start_record_precedes_its_end_record_with_the_same_id() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let config = audit_config(dir.path(), &format!("path = \"{}\"", log.display()));
        let server = Server::start(&sim, with_config(Opts::default(), &config)).await;
        server.ok("pve_get_version", json!({})).await;
        server.ok("pve_list_vms", json!({})).await;
        server.stop().await;
        let r = records(&log);
        for tool in ["pve_get_version", "pve_list_vms"] {
            let start = one(&r, "call-start", tool);
            let end = one(&r, "call", tool);
            assert_eq!(start["call_id"], end["call_id"], "{r:#?}");
            assert!(start["seq"].as_u64() < end["seq"].as_u64(), "{r:#?}");
            assert_eq!(start["time"], end["time"]);
            assert_eq!(start["args_hash"], end["args_hash"]);
            assert_eq!(start["decision"], end["decision"]);
            assert_eq!(start["rule"], end["rule"]);
            assert_eq!(start["access"], "read");
            // Nothing of the call is written between its start and the
            // guest's first request: its GETs come after the end record.
            for e in egress_of(&r, end) {
                assert!(e["seq"].as_u64() > end["seq"].as_u64());
            }
        }
        let (code, _, stderr) = verify(&[log.to_str().unwrap()]).await;
        assert_eq!(code, Some(0), "{stderr}");
    })
    .await;
}

#[tokio::test]
async fn two_servers_sharing_one_file_extend_one_chain() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        // Small files, so the two also rotate under each other.
        let config = audit_config(
            dir.path(),
            &format!("path = \"{}\"\nmax_size_mib = 0.002", log.display()),
        );
        // An MCP client starts one server per connection; two of them
        // configured alike write to the same file.
        let a = Server::start(&sim, with_config(Opts::default(), &config)).await;
        let b = Server::start(&sim, with_config(Opts::default(), &config)).await;
        for _ in 0..4 {
            a.ok("pve_get_version", json!({})).await;
            b.ok("pve_get_version", json!({})).await;
        }
        a.stop().await;
        b.stop().await;
        let (code, stdout, stderr) = verify(&[dir.path().to_str().unwrap()]).await;
        assert_eq!(code, Some(0), "{stdout}{stderr}");
        // Each server's start; a call's start, its end and its GET, four
        // times each.
        assert!(stdout.contains("ok: 26 records, seq 1..26"), "{stdout}");
    })
    .await;
}

/// Issue 21 (F6): with `include_arguments`, three refused calls with a
/// 1 MiB `node` once added 3 MB to the log, and public SSH keys showed as
/// `[REDACTED]`. Each value is now cut at 4 KiB with the SHA-256 of the
/// whole, and which public key an agent sent is on record.
#[tokio::test]
async fn recorded_argument_values_are_bounded_and_public_keys_shown() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let config = audit_config(
            dir.path(),
            &format!("path = \"{}\"\ninclude_arguments = true", log.display()),
        );
        let server = Server::start(&sim, with_config(Opts::default(), &config)).await;
        let huge = "a".repeat(1 << 20);
        for _ in 0..3 {
            let args = json!({"vmid": 100, "node": huge, "vm_type": "qemu"});
            server.err("pve_get_vm_status", args).await;
        }
        let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0wmN/Cr3JXqmLW7u+g9pTh+wyqDHpSQEIQczXkVx9q agent@ops";
        server
            .err(
                "pve_create_lxc",
                json!({"node": "pve1", "vmid": 170, "ostemplate": "local:vztmpl/x.tar.zst",
                       "ssh_public_keys": key}),
            )
            .await;
        server.stop().await;

        let size = std::fs::metadata(&log).unwrap().len();
        assert!(size < 64 << 10, "the log grew to {size} bytes");
        let r = records(&log);
        let calls = all_of(&r, "call", "pve_get_vm_status");
        assert_eq!(calls.len(), 3);
        for call in calls {
            let node = call["args"]["node"].as_str().unwrap();
            assert!(node.starts_with(&"a".repeat(4096)), "{call}");
            assert!(
                node.ends_with(&format!("[cut: {} bytes, sha256 {}]", huge.len(), sha256_hex(huge.as_bytes()))),
                "{}",
                &node[4096..]
            );
        }
        let create = one(&r, "call", "pve_create_lxc");
        assert_eq!(create["args"]["ssh_public_keys"], key, "{create}");
        assert_eq!(sim.writes().len(), 0);
    })
    .await;
}
