//! The guest agent endpoints: passthrough reads, exec and exec-status,
//! file-read and file-write, their checks, privileges and PVE 8 mode.

use super::*;
use crate::perms::{Acl, AclEntry};
use crate::state::Token;
use serde_json::json;

const FORM: &str = "application/x-www-form-urlencoded";
const A: &str = "/api2/json/nodes/pve1/qemu/100/agent";

async fn sim_with(pve8: &[&str]) -> Simulator {
    let sim = Simulator::start(SimConfig {
        schema_path: schema_path(),
        pve8_nodes: pve8.iter().map(|s| s.to_string()).collect(),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    for (name, privs) in [
        ("audit", vec!["VM.GuestAgent.Audit"]),
        ("reader", vec!["VM.GuestAgent.FileRead"]),
        ("monitor", vec!["VM.Monitor"]),
    ] {
        util::write(&sim.handle.shared.cluster).tokens.push(Token {
            full_id: format!("agent@pve!{name}"),
            secret: "s".into(),
            acl: Acl::Entries(vec![AclEntry {
                path: "/vms".into(),
                privs,
                propagate: true,
            }]),
        });
    }
    sim
}

fn token(name: &str) -> String {
    format!("PVEAPIToken=agent@pve!{name}=s")
}

async fn post_form(sim: &Simulator, path: &str, form: &str) -> Resp {
    send(
        sim,
        "POST",
        path,
        &[("authorization", ADMIN)],
        Some((FORM, form.as_bytes())),
    )
    .await
}

async fn exec(sim: &Simulator, form: &str) -> i64 {
    let d = post_form(sim, &format!("{A}/exec"), form).await.data();
    d["pid"].as_i64().expect("pid")
}

async fn status(sim: &Simulator, pid: i64) -> Value {
    get(sim, &format!("{A}/exec-status?pid={pid}"), ADMIN)
        .await
        .data()
}

/// Runs to the end: the final exec-status.
async fn run(sim: &Simulator, form: &str) -> Value {
    let pid = exec(sim, form).await;
    testing::wait_until("the command to exit", Duration::from_secs(10), async || {
        let s = status(sim, pid).await;
        (s["exited"] == 1).then_some(s)
    })
    .await
}

fn fail(r: &Resp, status: u16, reason: &str) {
    assert_eq!(r.status, status, "{:?}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.reason.as_deref(), Some(reason));
}

#[tokio::test]
async fn passthrough_reads_answer_in_qga_shapes() {
    let sim = sim_with(&[]).await;
    let r = |cmd: &'static str| {
        let sim = sim.clone();
        async move { get(&sim, &format!("{A}/{cmd}"), ADMIN).await.data()["result"].clone() }
    };
    let info = r("info").await;
    assert_eq!(info["version"], "7.2.11");
    let cmds = info["supported_commands"].as_array().unwrap();
    let exec = cmds.iter().find(|c| c["name"] == "guest-exec").unwrap();
    assert_eq!(exec["enabled"], true);
    assert_eq!(exec["success-response"], true);
    let shutdown = cmds.iter().find(|c| c["name"] == "guest-shutdown").unwrap();
    assert_eq!(shutdown["success-response"], false);

    let os = r("get-osinfo").await;
    assert_eq!(os["id"], "debian");
    assert_eq!(os["pretty-name"], "Debian GNU/Linux 12 (bookworm)");
    assert_eq!(os["version-id"], "12");
    assert_eq!(os["machine"], "x86_64");
    assert_eq!(os["kernel-release"], "6.1.0-27-amd64");
    assert_eq!(
        r("get-host-name").await,
        json!({"host-name": "web-frontend-01"})
    );
    let fs = r("get-fsinfo").await;
    let fs = fs.as_array().unwrap();
    assert_eq!(fs.len(), 2);
    assert_eq!(fs[0]["mountpoint"], "/boot");
    let root = &fs[1];
    assert_eq!(
        (root["name"].clone(), root["type"].clone()),
        (json!("sda2"), json!("ext4"))
    );
    let (used, total) = (
        root["used-bytes"].as_u64().unwrap(),
        root["total-bytes"].as_u64().unwrap(),
    );
    assert!(
        total < 5 << 30 && used * 100 / total >= 90,
        "{used}/{total}"
    );
    assert_eq!(root["disk"][0]["bus-type"], "scsi");
    assert_eq!(root["disk"][0]["dev"], "/dev/sda2");
    let users = r("get-users").await;
    assert_eq!(users[0]["user"], "debian");
    assert!(users[0]["login-time"].is_f64());
    assert_eq!(
        r("get-timezone").await,
        json!({"zone": "CET", "offset": 3600})
    );
    let t = r("get-time").await.as_u64().unwrap();
    assert!(
        t / 1_000_000_000 >= util::now_secs() - 5,
        "nanoseconds: {t}"
    );
    let cpus = r("get-vcpus").await;
    assert_eq!(cpus.as_array().unwrap().len(), 2);
    assert_eq!(
        cpus[0],
        json!({"logical-id": 0, "online": true, "can-offline": false})
    );
    assert_eq!(r("network-get-interfaces").await[1]["name"], "eth0");
    assert_eq!(sim.schema_violations(), Vec::<String>::new());
}

#[tokio::test]
async fn every_endpoint_runs_pves_checks_in_order() {
    let sim = sim_with(&[]).await;
    let cases = [
        (101, "pve1", "No QEMU guest agent configured"),
        (104, "pve1", "No QEMU guest agent configured"),
        (110, "pve2", "VM 110 is not running"),
        (102, "pve2", "QEMU guest agent is not running"),
        (103, "pve2", "QEMU guest agent is not running"),
        (
            100,
            "pve2",
            "Configuration file 'nodes/pve2/qemu-server/100.conf' does not exist",
        ),
        (
            999,
            "pve1",
            "Configuration file 'nodes/pve1/qemu-server/999.conf' does not exist",
        ),
    ];
    for (id, node, msg) in cases {
        let base = format!("/api2/json/nodes/{node}/qemu/{id}/agent");
        for cmd in [
            "info",
            "get-osinfo",
            "get-fsinfo",
            "exec-status?pid=1",
            "file-read?file=/etc/hostname",
        ] {
            fail(&get(&sim, &format!("{base}/{cmd}"), ADMIN).await, 500, msg);
        }
        fail(
            &post_form(&sim, &format!("{base}/exec"), "command=true").await,
            500,
            msg,
        );
        fail(
            &post_form(&sim, &format!("{base}/file-write"), "file=/tmp/x&content=y").await,
            500,
            msg,
        );
    }
}

#[tokio::test]
async fn an_agent_error_passes_through_or_fails() {
    let sim = Simulator::start(SimConfig {
        shapes: Shapes::Real,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let base = "/api2/json/nodes/pve2/qemu/111/agent";
    let d = get(&sim, &format!("{base}/get-osinfo"), ADMIN).await.data();
    assert_eq!(d["result"]["error"]["class"], "Unsupported");
    let r = post_form(&sim, &format!("{base}/exec"), "command=true").await;
    fail(
        &r,
        500,
        "Agent error: this feature or command is not currently supported",
    );
}

#[tokio::test]
async fn exec_runs_the_fake_programs() {
    let sim = sim_with(&[]).await;
    let s = run(&sim, "command=df&command=-h").await;
    assert_eq!(s["exitcode"], 0);
    let out = s["out-data"].as_str().unwrap();
    assert!(
        out.starts_with("Filesystem      Size  Used Avail Use% Mounted on\n"),
        "{out}"
    );
    assert!(
        out.contains("/dev/sda2") && out.contains("95% /\n"),
        "{out}"
    );
    assert!(s.get("err-data").is_none() && s.get("out-truncated").is_none());
    // The wire request as received: `command` repeated, in order.
    let logged = sim
        .writes()
        .into_iter()
        .find(|r| r.api_path().ends_with("/exec"))
        .unwrap();
    assert_eq!(logged.params["command"], "df\0-h");

    let s = run(&sim, "command=systemctl&command=status&command=nginx").await;
    assert_eq!(s["exitcode"], 0);
    assert!(
        s["out-data"]
            .as_str()
            .unwrap()
            .contains("Active: active (running)")
    );
    let s = run(&sim, "command=systemctl&command=status&command=x").await;
    assert_eq!(s["exitcode"], 4);
    assert_eq!(s["err-data"], "Unit x.service could not be found.\n");
    assert!(s.get("out-data").is_none());
    assert_eq!(
        run(&sim, "command=systemctl&command=status&command=postfix").await["exitcode"],
        3
    );
    let s = run(&sim, "command=cat&input-data=hello%0A").await;
    assert_eq!(s["out-data"], "hello\n");
    assert_eq!(
        run(&sim, "command=false").await,
        json!({"exited": 1, "exitcode": 1})
    );
    assert_eq!(
        run(&sim, "command=true").await,
        json!({"exited": 1, "exitcode": 0})
    );
    for (argv, want) in [
        ("command=hostname", "web-frontend-01\n"),
        ("command=id", "uid=0(root) gid=0(root) groups=0(root)\n"),
        ("command=sh&command=-c&command=echo hi there", "hi there\n"),
        (
            "command=/usr/bin/cat&command=/etc/hostname",
            "web-frontend-01\n",
        ),
    ] {
        assert_eq!(run(&sim, argv).await["out-data"], want, "{argv}");
    }
    assert!(
        run(&sim, "command=uname&command=-a").await["out-data"]
            .as_str()
            .unwrap()
            .starts_with("Linux web-frontend-01 6.1.0-27-amd64 ")
    );
    assert_eq!(
        run(&sim, "command=journalctl&command=-n&command=5").await["out-data"]
            .as_str()
            .unwrap()
            .lines()
            .count(),
        5
    );

    // A JSON body gives the same argv.
    let r = send(
        &sim,
        "POST",
        &format!("{A}/exec"),
        &[("authorization", ADMIN)],
        Some(("application/json", br#"{"command":["echo","a b"]}"#)),
    )
    .await;
    let pid = r.data()["pid"].as_i64().unwrap();
    let s = testing::wait_until("echo", Duration::from_secs(5), async || {
        let s = status(&sim, pid).await;
        (s["exited"] == 1).then_some(s)
    })
    .await;
    assert_eq!(s["out-data"], "a b\n");
    assert_eq!(sim.schema_violations(), Vec::<String>::new());
}

#[tokio::test]
async fn exec_status_tracks_time_truncation_and_pids() {
    let sim = sim_with(&[]).await;
    let a = exec(&sim, "command=sleep&command=1").await;
    let b = exec(&sim, "command=true").await;
    assert_ne!(a, b, "a fresh pid per exec");
    assert_eq!(status(&sim, a).await, json!({"exited": 0}));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(status(&sim, a).await, json!({"exited": 1, "exitcode": 0}));
    // qemu-ga forgets a process once it reported its exit.
    let r = get(&sim, &format!("{A}/exec-status?pid={a}"), ADMIN).await;
    fail(&r, 500, "Agent error: Invalid parameter 'pid'");
    // A pid belongs to the VM it ran in (here 101, given an agent).
    if let Some(g) = util::write(&sim.handle.shared.cluster).guests.get_mut(&101) {
        g.agent = true;
    }
    let pid = exec(&sim, "command=sleep&command=5").await;
    let r = get(
        &sim,
        &format!("/api2/json/nodes/pve1/qemu/101/agent/exec-status?pid={pid}"),
        ADMIN,
    )
    .await;
    fail(&r, 500, "Agent error: Invalid parameter 'pid'");
    assert_eq!(status(&sim, pid).await, json!({"exited": 0}));
    let r = get(&sim, &format!("{A}/exec-status?pid=999999"), ADMIN).await;
    fail(&r, 500, "Agent error: Invalid parameter 'pid'");

    let s = run(&sim, "command=seq&command=300000").await;
    assert_eq!(s["out-truncated"], 1);
    assert_eq!(
        s["out-data"].as_str().unwrap().len(),
        guest_exec::OUTPUT_CAP
    );
    assert!(s["out-data"].as_str().unwrap().starts_with("1\n2\n3\n"));

    let r = post_form(&sim, &format!("{A}/exec"), "command=nope").await;
    assert_eq!(r.status, 500);
    // glib's curly quotes are obs-text in the reason phrase, which the
    // client's parser drops; the body's message has them.
    assert_eq!(
        r.json()["message"],
        "Agent error: Guest agent command failed, error was 'Failed to execute child process \u{201c}nope\u{201d} (No such file or directory)'\n"
    );
    let r = post_form(&sim, &format!("{A}/exec"), "input-data=x").await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["command"],
        "property is missing and it is not optional"
    );
    let big = format!("command=cat&input-data={}", "a".repeat(65_537));
    let r = post_form(&sim, &format!("{A}/exec"), &big).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["input-data"],
        "value may only be 65536 characters long"
    );
}

#[tokio::test]
async fn file_read_and_write() {
    let sim = sim_with(&[]).await;
    let read = |q: &'static str| {
        let sim = sim.clone();
        async move { get(&sim, &format!("{A}/file-read?{q}"), ADMIN).await }
    };
    assert_eq!(
        read("file=/etc/hostname").await.data(),
        json!({"content": "web-frontend-01\n"})
    );
    assert_eq!(
        read("file=/etc/hostname&decode=0").await.data(),
        json!({"content": util::base64(b"web-frontend-01\n", true)})
    );
    assert_eq!(
        read("file=/etc/hostname&count=3").await.data(),
        json!({"content": "web", "truncated": 1})
    );
    assert_eq!(
        read("file=/etc/hostname&count=3&offset=4").await.data(),
        json!({"content": "fro", "truncated": 1})
    );
    let os = read("file=/etc/os-release").await.data();
    assert!(
        os["content"]
            .as_str()
            .unwrap()
            .contains("VERSION_CODENAME=bookworm")
    );
    let log = read("file=/var/log/syslog").await.data();
    assert_eq!(
        log["content"].as_str().unwrap().lines().count(),
        guest_os::SYSLOG_LINES
    );
    assert!(log.get("truncated").is_none());
    assert!(
        read("file=/etc/shadow").await.data()["content"]
            .as_str()
            .unwrap()
            .starts_with("root:$y$")
    );
    let bin = read("file=/usr/bin/tool&decode=0").await.data();
    let raw = bin["content"].as_str().unwrap();
    assert!(raw.starts_with("f0VMRg"), "{raw}");
    let text = read("file=/usr/bin/tool").await.data();
    assert!(
        text["content"]
            .as_str()
            .unwrap()
            .starts_with("\u{7f}ELF\u{2}")
    );
    fail(
        &read("file=/nope").await,
        500,
        "Agent error: failed to open file '/nope' (mode: 'r'): No such file or directory",
    );
    fail(
        &read("file=/etc").await,
        500,
        "Agent error: failed to read file: Is a directory",
    );
    let r = read("file=/etc/hostname&count=0").await;
    assert_eq!(
        r.json()["errors"]["count"],
        "value must have a minimum value of 1"
    );

    let w = |form: String| {
        let sim = sim.clone();
        async move { post_form(&sim, &format!("{A}/file-write"), &form).await }
    };
    assert_eq!(
        w("file=/tmp/note&content=hi%20there".into()).await.data(),
        Value::Null
    );
    assert_eq!(
        read("file=/tmp/note").await.data(),
        json!({"content": "hi there"})
    );
    let b64 = util::base64(b"\x00\x01bin", true);
    let form = format!(
        "file=/tmp/b&encode=0&content={}",
        b64.replace('+', "%2B").replace('=', "%3D")
    );
    assert_eq!(w(form).await.data(), Value::Null);
    assert_eq!(
        read("file=/tmp/b&decode=0").await.data(),
        json!({"content": b64})
    );
    fail(
        &w("file=/tmp/c&encode=0&content=!!".into()).await,
        500,
        "Agent error: Base64 data is not valid",
    );
    fail(
        &w("file=/nodir/x&content=y".into()).await,
        500,
        "Agent error: failed to open file '/nodir/x' (mode: 'wb'): No such file or directory",
    );
    let r = w(format!("file=/tmp/big&content={}", "x".repeat(61_441))).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["content"],
        "value may only be 61440 characters long"
    );
    // Files belong to their VM.
    let other = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/100/agent/file-read?file=/tmp/big",
        ADMIN,
    )
    .await;
    assert_eq!(other.status, 500);
    assert_eq!(
        sim.schema_violations().len(),
        2,
        "{:?}",
        sim.schema_violations()
    );
}

#[tokio::test]
async fn privileges_follow_the_schema() {
    let sim = sim_with(&[]).await;
    let audit = token("audit");
    assert_eq!(
        get(&sim, &format!("{A}/get-osinfo"), &audit).await.status,
        200
    );
    fail(
        &get(&sim, &format!("{A}/exec-status?pid=1"), &audit).await,
        403,
        "Permission check failed (/vms/100, VM.GuestAgent.Unrestricted)",
    );
    fail(
        &get(&sim, &format!("{A}/file-read?file=/etc/hostname"), &audit).await,
        403,
        "Permission check failed (/vms/100, VM.GuestAgent.FileRead|VM.GuestAgent.Unrestricted)",
    );
    let reader = token("reader");
    assert_eq!(
        get(&sim, &format!("{A}/file-read?file=/etc/hostname"), &reader)
            .await
            .status,
        200
    );
    fail(
        &get(&sim, &format!("{A}/info"), AUDITOR).await,
        403,
        "Permission check failed (/vms/100, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)",
    );
    let r = send(
        &sim,
        "POST",
        &format!("{A}/file-write"),
        &[("authorization", &reader)],
        Some((FORM, b"file=/tmp/x&content=y")),
    )
    .await;
    fail(
        &r,
        403,
        "Permission check failed (/vms/100, VM.GuestAgent.FileWrite|VM.GuestAgent.Unrestricted)",
    );
    // PVE 9 has no VM.Monitor any more.
    assert_eq!(
        get(&sim, &format!("{A}/info"), &token("monitor"))
            .await
            .status,
        403
    );
}

#[tokio::test]
async fn pve8_nodes_check_vm_monitor_and_know_no_decode() {
    let sim = sim_with(&["pve1"]).await;
    let monitor = token("monitor");
    assert_eq!(get(&sim, &format!("{A}/info"), &monitor).await.status, 200);
    fail(
        &get(&sim, &format!("{A}/info"), &token("audit")).await,
        403,
        "Permission check failed (/vms/100, VM.Monitor)",
    );
    let r = get(
        &sim,
        &format!("{A}/file-read?file=/etc/hostname&decode=0&count=2"),
        ADMIN,
    )
    .await;
    fail(&r, 400, "Parameter verification failed.");
    let e = &r.json()["errors"];
    let msg =
        "property is not defined in schema and the schema does not allow additional properties";
    assert_eq!(
        (e["decode"].as_str(), e["count"].as_str()),
        (Some(msg), Some(msg))
    );
    assert_eq!(
        get(&sim, &format!("{A}/file-read?file=/etc/hostname"), ADMIN)
            .await
            .data(),
        json!({"content": "web-frontend-01\n"})
    );
    // pve2 still runs PVE 9.
    let sim9 = sim_with(&["pve2"]).await;
    assert_eq!(
        get(
            &sim9,
            &format!("{A}/file-read?file=/etc/hostname&decode=0"),
            ADMIN
        )
        .await
        .status,
        200
    );
}
