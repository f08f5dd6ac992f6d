//! The firewall over real HTTPS: rules, options, aliases, IP sets,
//! security groups and references at the cluster, node and guest scope.

use serde_json::{Value, json};

use super::calls::*;
use super::*;
use crate::digests::{hex, sha1};

/// SHA-1 of nothing: the digest of an empty list or options section.
const EMPTY: &str = "da39a3ee5e6b4b0d3255bfef95601890afd80709";

const MODIFIED: &str = "detected modified configuration - file changed by other user? Try again.\n";

/// pve-firewall's digest of a list as answered: every entry's keys but
/// `digest` and `pos`, sorted, as `key:value` lines.
fn pve_digest(entries: &[Value]) -> String {
    let mut buf = String::new();
    for e in entries {
        for (k, v) in e.as_object().unwrap() {
            if k == "digest" || k == "pos" {
                continue;
            }
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            buf.push_str(&format!("{k}:{text}\n"));
        }
    }
    hex(&sha1(buf.as_bytes()))
}

/// A list's entries all carry its digest, which is PVE's; returns it.
fn list_digest(list: &Value) -> String {
    let items = list.as_array().unwrap();
    let d = pve_digest(items);
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item["digest"], d, "entry {i} of {list}");
    }
    d
}

/// The list's `pos` values are 0, 1, 2, ... in order.
fn assert_positions(list: &Value) {
    for (i, r) in list.as_array().unwrap().iter().enumerate() {
        assert_eq!(r["pos"], i, "{list}");
    }
}

fn field<'a>(list: &'a Value, key: &str) -> Vec<&'a Value> {
    list.as_array().unwrap().iter().map(|e| &e[key]).collect()
}

fn errors(r: &Resp) -> Value {
    assert_eq!(r.status, 400, "{:?} {:?}", r.reason, r.body);
    r.json()["errors"].clone()
}

#[tokio::test]
async fn firewall_reads_at_every_scope() {
    let sim = sim().await;

    // Directory indexes.
    let names = |v: Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(data(&sim, "/cluster/firewall").await),
        [
            "aliases", "rules", "options", "groups", "ipset", "macros", "refs"
        ]
    );
    assert_eq!(
        names(data(&sim, "/nodes/pve1/firewall").await),
        ["rules", "options", "log"]
    );
    assert_eq!(
        names(data(&sim, "/nodes/pve1/lxc/106/firewall").await),
        ["rules", "aliases", "ipset", "refs", "options"]
    );

    // Cluster options and rules.
    let opts = data(&sim, "/cluster/firewall/options").await;
    assert_eq!(
        opts,
        json!({
            "enable": 1, "policy_in": "DROP", "policy_out": "ACCEPT",
            "digest": hex(&sha1(b"enable:1\npolicy_in:DROP\npolicy_out:ACCEPT\n")),
        })
    );
    let rules = data(&sim, "/cluster/firewall/rules").await;
    assert_positions(&rules);
    let d = list_digest(&rules);
    assert_eq!(
        rules[0],
        json!({
            "pos": 0, "type": "in", "action": "ACCEPT", "enable": 1,
            "source": "+management", "proto": "tcp", "dport": "8006",
            "comment": "Web UI and API from management", "digest": d,
        })
    );
    assert_eq!(
        field(&rules, "dport"),
        [&json!("8006"), &json!("22"), &Value::Null, &json!("9100")]
    );
    assert_eq!(
        (&rules[2]["macro"], &rules[2]["comment"]),
        (&json!("Ping"), &json!("Allow ping"))
    );
    // An alias source gives the rule its IP version; pos 3 is disabled.
    assert_eq!(
        (
            &rules[3]["source"],
            &rules[3]["ipversion"],
            &rules[3]["enable"]
        ),
        (&json!("monitoring"), &json!(4), &json!(0))
    );
    assert!(rules[0].get("ipversion").is_none());
    assert_eq!(data(&sim, "/cluster/firewall/rules/2").await, rules[2]);

    // Aliases, IP sets, security groups, references.
    let aliases = data(&sim, "/cluster/firewall/aliases").await;
    let d = list_digest(&aliases);
    assert_eq!(
        aliases,
        json!([
            {"name": "jumphost", "cidr": "10.0.0.5", "ipversion": 4, "comment": "Bastion host", "digest": d},
            {"name": "monitoring", "cidr": "10.0.0.109", "ipversion": 4, "comment": "Prometheus (CT 109)", "digest": d},
        ])
    );
    let sets = data(&sim, "/cluster/firewall/ipset").await;
    let d = list_digest(&sets);
    assert_eq!(
        sets,
        json!([{"name": "management", "comment": "Admin workstations and cluster nodes", "digest": d}])
    );
    let members = data(&sim, "/cluster/firewall/ipset/management").await;
    let d = list_digest(&members);
    assert_eq!(
        members,
        json!([
            {"cidr": "10.0.0.0/24", "comment": "Admin VLAN", "digest": d},
            {"cidr": "10.0.0.66", "nomatch": 1, "comment": "Quarantined laptop", "digest": d},
            {"cidr": "192.0.2.0/24", "comment": "Cluster nodes", "digest": d},
        ])
    );
    let groups = data(&sim, "/cluster/firewall/groups").await;
    let d = list_digest(&groups);
    assert_eq!(
        groups,
        json!([{"group": "webserver", "comment": "HTTP and HTTPS", "digest": d}])
    );
    let web = data(&sim, "/cluster/firewall/groups/webserver").await;
    assert_positions(&web);
    list_digest(&web);
    assert_eq!(field(&web, "dport"), [&json!("80"), &json!("443")]);
    assert_eq!(
        data(&sim, "/cluster/firewall/groups/webserver/1").await,
        web[1]
    );
    let dc_refs = json!([
        {"type": "ipset", "name": "management", "ref": "+management", "scope": "dc", "comment": "Admin workstations and cluster nodes"},
        {"type": "alias", "name": "jumphost", "ref": "jumphost", "scope": "dc", "comment": "Bastion host"},
        {"type": "alias", "name": "monitoring", "ref": "monitoring", "scope": "dc", "comment": "Prometheus (CT 109)"},
    ]);
    assert_eq!(data(&sim, "/cluster/firewall/refs").await, dc_refs);
    assert_eq!(
        data(&sim, "/cluster/firewall/refs?type=ipset").await,
        json!([dc_refs[0]])
    );

    // Node pve1; pve2 has no host.fw (and `localhost` is the node called).
    let opts = data(&sim, "/nodes/pve1/firewall/options").await;
    assert_eq!(
        opts,
        json!({
            "enable": 1, "log_level_in": "nolog", "log_level_out": "nolog",
            "ndp": 1, "nosmurfs": 1, "tcpflags": 1, "digest": opts["digest"],
        })
    );
    assert_eq!(opts["digest"], pve_digest(std::slice::from_ref(&opts)));
    let host = data(&sim, "/nodes/pve1/firewall/rules").await;
    assert_positions(&host);
    list_digest(&host);
    assert_eq!(
        (&host[0]["iface"], &host[0]["source"], &host[0]["ipversion"]),
        (&json!("vmbr0"), &json!("192.0.2.0/24"), &json!(4))
    );
    assert_eq!(
        (&host[2]["type"], &host[2]["action"], &host[2]["log"]),
        (&json!("out"), &json!("REJECT"), &json!("warning"))
    );
    assert_eq!(data(&sim, "/nodes/localhost/firewall/rules").await, host);
    assert_eq!(data(&sim, "/nodes/pve2/firewall/rules").await, json!([]));
    assert_eq!(
        data(&sim, "/nodes/pve2/firewall/options").await,
        json!({ "digest": EMPTY })
    );

    // Guest 100.
    let base = "/nodes/pve1/qemu/100/firewall";
    let opts = data(&sim, &format!("{base}/options")).await;
    assert_eq!(
        opts,
        json!({
            "dhcp": 1, "enable": 1, "ipfilter": 1, "log_level_in": "nolog",
            "policy_in": "DROP", "policy_out": "ACCEPT", "digest": opts["digest"],
        })
    );
    let rules = data(&sim, &format!("{base}/rules")).await;
    assert_positions(&rules);
    let d = list_digest(&rules);
    assert_eq!(
        rules[0],
        json!({
            "pos": 0, "type": "group", "action": "webserver", "enable": 1,
            "iface": "net0", "comment": "Public web traffic", "digest": d,
        })
    );
    assert_eq!(
        (&rules[2]["dest"], &rules[2]["ipversion"], &rules[2]["type"]),
        (&json!("db-primary"), &json!(4), &json!("out"))
    );
    let aliases = data(&sim, &format!("{base}/aliases")).await;
    assert_eq!(field(&aliases, "name"), [&json!("db-primary")]);
    let sets = data(&sim, &format!("{base}/ipset")).await;
    assert_eq!(field(&sets, "name"), [&json!("ipfilter-net0")]);
    let members = data(&sim, &format!("{base}/ipset/ipfilter-net0")).await;
    assert_eq!(
        members,
        json!([{"cidr": "10.0.0.100", "digest": hex(&sha1(b"cidr:10.0.0.100\n"))}])
    );
    let refs = data(&sim, &format!("{base}/refs")).await;
    assert_eq!(&refs.as_array().unwrap()[..3], dc_refs.as_array().unwrap());
    assert_eq!(
        &refs.as_array().unwrap()[3..],
        [
            json!({"type": "ipset", "name": "ipfilter-net0", "ref": "+ipfilter-net0", "scope": "guest", "comment": "Addresses net0 may send from"}),
            json!({"type": "alias", "name": "db-primary", "ref": "db-primary", "scope": "guest", "comment": "VM 101"}),
        ]
    );
    let only = data(&sim, &format!("{base}/refs?type=alias")).await;
    assert_eq!(field(&only, "type"), [&json!("alias"); 3]);
    // The file is the vmid's: PVE checks neither the node nor the type.
    assert_eq!(
        data(&sim, "/nodes/pve2/lxc/100/firewall/rules").await,
        rules
    );

    // Other guests have no firewall file.
    let base = "/nodes/pve1/lxc/106/firewall";
    assert_eq!(data(&sim, &format!("{base}/rules")).await, json!([]));
    assert_eq!(
        data(&sim, &format!("{base}/options")).await,
        json!({ "digest": EMPTY })
    );
    assert_eq!(data(&sim, &format!("{base}/aliases")).await, json!([]));
    assert_eq!(data(&sim, &format!("{base}/ipset")).await, json!([]));
    assert_eq!(data(&sim, &format!("{base}/refs")).await, dc_refs);
    no_violations(&sim);
}

#[tokio::test]
async fn firewall_rule_and_option_writes() {
    let sim = sim().await;
    let list = async |path: &str| data(&sim, path).await;
    let rules = "/cluster/firewall/rules";
    let before = list(rules).await;
    let d0 = list_digest(&before);

    // A new rule goes to the top, disabled unless `enable` is given; PVE
    // ignores `pos` and `digest` on create.
    let r = post(
        &sim,
        rules,
        "type=in&action=ACCEPT&source=%2Bmanagement&proto=tcp&dport=8443&comment=Alt%20UI",
    )
    .await;
    assert_eq!(r.data(), Value::Null);
    let now = list(rules).await;
    assert_eq!(now.as_array().unwrap().len(), 5);
    assert_positions(&now);
    let d1 = list_digest(&now);
    assert_ne!(d1, d0);
    assert_eq!(
        now[0],
        json!({
            "pos": 0, "type": "in", "action": "ACCEPT", "enable": 0,
            "source": "+management", "proto": "tcp", "dport": "8443",
            "comment": "Alt UI", "digest": d1,
        })
    );
    assert_eq!(now[1]["dport"], "8006");
    let r = post(
        &sim,
        rules,
        "type=in&action=DROP&source=198.51.100.0%2F24&enable=1&pos=3&digest=stale&macro=ssh",
    )
    .await;
    assert_eq!(r.status, 200);
    let now = list(rules).await;
    assert_eq!(
        (
            &now[0]["action"],
            &now[0]["enable"],
            &now[0]["macro"],
            &now[0]["ipversion"]
        ),
        (&json!("DROP"), &json!(1), &json!("SSH"), &json!(4))
    );
    let d2 = list_digest(&now);

    // Move: `moveto` places the rule before the one at that position.
    let r = put(
        &sim,
        &format!("{rules}/0"),
        &format!("moveto=3&digest={d2}"),
    )
    .await;
    assert_eq!(r.data(), Value::Null);
    let moved = list(rules).await;
    assert_eq!(
        field(&moved, "dport"),
        [
            &json!("8443"),
            &json!("8006"),
            &Value::Null,
            &json!("22"),
            &Value::Null,
            &json!("9100")
        ]
    );
    assert_eq!(moved[2]["macro"], "SSH");
    // To the end.
    let d3 = list_digest(&moved);
    assert_eq!(
        put(
            &sim,
            &format!("{rules}/2"),
            &format!("moveto=99&digest={d3}")
        )
        .await
        .status,
        200
    );
    let moved = list(rules).await;
    assert_eq!(moved[5]["macro"], "SSH");
    assert_eq!(moved[2]["dport"], "22");

    // Update: values replace, `delete` removes, `enable` toggles.
    let d4 = list_digest(&moved);
    let r = put(
        &sim,
        &format!("{rules}/0"),
        &format!("comment=Alt%20UI%20v2&dport=8443,9443&enable=1&delete=source&digest={d4}"),
    )
    .await;
    assert_eq!(r.data(), Value::Null);
    let now = list(rules).await;
    let d5 = list_digest(&now);
    assert_eq!(
        now[0],
        json!({
            "pos": 0, "type": "in", "action": "ACCEPT", "enable": 1,
            "proto": "tcp", "dport": "8443,9443", "comment": "Alt UI v2", "digest": d5,
        })
    );

    // A stale digest changes nothing.
    for r in [
        put(
            &sim,
            &format!("{rules}/0"),
            &format!("comment=x&digest={d4}"),
        )
        .await,
        put(
            &sim,
            &format!("{rules}/0"),
            &format!("moveto=4&digest={d0}"),
        )
        .await,
        delete(&sim, &format!("{rules}/0?digest={d4}")).await,
    ] {
        assert_eq!((r.status, message(&r)), (500, MODIFIED.to_string()));
        assert_eq!(r.reason.as_deref(), Some(MODIFIED.trim_end()));
    }
    assert_eq!(list(rules).await, now);

    // Delete with the right digest, or none.
    let r = delete(&sim, &format!("{rules}/5?digest={d5}")).await;
    assert_eq!(r.data(), Value::Null);
    let now = list(rules).await;
    assert_eq!(now.as_array().unwrap().len(), 5);
    assert!(now.as_array().unwrap().iter().all(|r| r["macro"] != "SSH"));
    assert_eq!(delete(&sim, &format!("{rules}/0")).await.status, 200);
    assert_eq!(list(rules).await.as_array().unwrap().len(), 4);

    // No rule there.
    for r in [
        get(&sim, &format!("/api2/json{rules}/42"), ADMIN).await,
        put(&sim, &format!("{rules}/42"), "comment=x").await,
        delete(&sim, &format!("{rules}/4")).await,
    ] {
        assert_eq!(r.status, 500);
        assert!(
            message(&r).starts_with("no rule at position 4"),
            "{}",
            message(&r)
        );
    }

    // A node's rules, a guest's, a security group's.
    let host = "/nodes/pve1/firewall/rules";
    let r = post(
        &sim,
        host,
        "type=in&action=DROP&source=203.0.113.7&enable=1&log=info",
    )
    .await;
    assert_eq!(r.status, 200);
    let now = list(host).await;
    assert_eq!(
        (
            &now[0]["source"],
            &now[0]["ipversion"],
            &now[0]["log"],
            now.as_array().unwrap().len()
        ),
        (&json!("203.0.113.7"), &json!(4), &json!("info"), 4)
    );
    let guest = "/nodes/pve1/qemu/100/firewall/rules";
    let r = post(
        &sim,
        guest,
        "type=in&action=ACCEPT&source=dc%2Fjumphost&proto=tcp&dport=ssh&iface=net0&enable=1",
    )
    .await;
    assert_eq!(r.status, 200);
    let now = list(guest).await;
    // `dc/` skips the guest's aliases and, for a guest, finds the cluster's.
    assert_eq!(
        (&now[0]["source"], &now[0]["ipversion"], &now[0]["dport"]),
        (&json!("dc/jumphost"), &json!(4), &json!("ssh"))
    );
    assert_eq!(now[1]["type"], "group");
    assert_eq!(delete(&sim, &format!("{guest}/0")).await.status, 200);
    assert_eq!(list(guest).await.as_array().unwrap().len(), 3);
    // A container's rules start their file.
    let ct = "/nodes/pve1/lxc/106/firewall/rules";
    assert_eq!(
        post(
            &sim,
            ct,
            "type=out&action=ACCEPT&proto=udp&dport=53&enable=1"
        )
        .await
        .status,
        200
    );
    assert_eq!(field(&list(ct).await, "dport"), [&json!("53")]);
    let group = "/cluster/firewall/groups/webserver";
    let d = list_digest(&list(group).await);
    assert_eq!(
        put(&sim, &format!("{group}/1"), &format!("enable=0&digest={d}"))
            .await
            .status,
        200
    );
    assert_eq!(field(&list(group).await, "enable"), [&json!(1), &json!(0)]);
    let groups = list("/cluster/firewall/groups").await;
    assert_eq!(groups[0]["group"], "webserver");

    // Options.
    let path = "/cluster/firewall/options";
    let o = list(path).await;
    let d = o["digest"].as_str().unwrap().to_string();
    let r = put(
        &sim,
        path,
        &format!("policy_in=REJECT&policy_forward=DROP&delete=policy_out&digest={d}"),
    )
    .await;
    assert_eq!(r.data(), Value::Null);
    let o = list(path).await;
    assert_eq!(
        o,
        json!({"enable": 1, "policy_in": "REJECT", "policy_forward": "DROP", "digest": o["digest"]})
    );
    assert_ne!(o["digest"], d);
    let r = put(&sim, path, &format!("enable=0&digest={d}")).await;
    assert_eq!((r.status, message(&r)), (500, MODIFIED.to_string()));
    assert_eq!(list(path).await, o);
    // The anti-lockout call: `enable` above 1 stores the time.
    assert_eq!(put(&sim, path, "enable=2").await.status, 200);
    let t = list(path).await["enable"].as_u64().unwrap();
    assert!(t.abs_diff(crate::util::now_secs()) < 30, "{t}");
    assert_eq!(put(&sim, path, "enable=1").await.status, 200);

    let path = "/nodes/pve1/firewall/options";
    assert_eq!(
        put(
            &sim,
            path,
            "nf_conntrack_max=65536&enable=0&delete=nosmurfs"
        )
        .await
        .status,
        200
    );
    let o = list(path).await;
    assert_eq!(
        (&o["nf_conntrack_max"], &o["enable"]),
        (&json!(65536), &json!(0))
    );
    assert!(o.get("nosmurfs").is_none());
    let path = "/nodes/pve1/lxc/106/firewall/options";
    assert_eq!(
        put(&sim, path, "enable=1&policy_in=DROP&radv=0")
            .await
            .status,
        200
    );
    let o = list(path).await;
    assert_eq!(
        o,
        json!({"enable": 1, "policy_in": "DROP", "radv": 0, "digest": hex(&sha1(b"enable:1\npolicy_in:DROP\nradv:0\n"))})
    );
    let writes: Vec<String> = sim
        .writes()
        .iter()
        .map(|w| format!("{} {}", w.method, w.api_path()))
        .collect();
    assert!(writes.contains(&"PUT /nodes/pve1/lxc/106/firewall/options".to_string()));
    no_violations(&sim);
}

#[tokio::test]
async fn firewall_refusals() {
    let sim = sim().await;
    let rules = "/cluster/firewall/rules";
    let before = data(&sim, rules).await;

    // What the schema rejects.
    let e = errors(&post(&sim, rules, "type=sideways&action=ACCEPT").await);
    assert_eq!(
        e["type"],
        "value 'sideways' does not have a value in the enumeration 'in, out, forward, group'"
    );
    let e = errors(
        &post(
            &sim,
            rules,
            "type=in&action=ACCEPT&proto=tcp&dport=http-ish",
        )
        .await,
    );
    assert_eq!(e["dport"], "invalid format - invalid port 'http-ish'\n");
    let e = errors(&post(&sim, rules, "type=in&action=ACCEPT&source=10.0.0.300").await);
    assert_eq!(
        e["source"],
        "invalid format - invalid IP address: Invalid quad in IP address 10.0.0.300 - 300\n"
    );
    let e = errors(&post(&sim, rules, "action=ACCEPT").await);
    assert_eq!(e["type"], "property is missing and it is not optional");
    let e = errors(&get(&sim, &format!("/api2/json{rules}/first"), ADMIN).await);
    assert_eq!(e["pos"], "type check ('integer') failed - got 'first'");
    let e = errors(&put(&sim, "/cluster/firewall/options", "policy_in=allow").await);
    assert!(e["policy_in"].as_str().unwrap().contains("enumeration"));
    let e = errors(&put(&sim, "/nodes/pve1/qemu/100/firewall/options", "enable=yes").await);
    assert_eq!(e["enable"], "type check ('boolean') failed - got 'yes'");
    let e = errors(&get(&sim, "/api2/json/cluster/firewall/refs?type=vm", ADMIN).await);
    assert!(e["type"].as_str().unwrap().contains("enumeration"));

    // What pve-firewall's checks reject (400 naming the parameter).
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "/nodes/pve1/qemu/100/firewall/rules",
            "type=forward&action=ACCEPT",
            "type",
            "invalid rule type 'forward' for rule_env 'vm'",
        ),
        (
            "/nodes/pve1/lxc/106/firewall/rules",
            "type=forward&action=ACCEPT",
            "type",
            "invalid rule type 'forward' for rule_env 'ct'",
        ),
        (
            rules,
            "type=in&action=ACCEPT&source=%2Bnosuch",
            "source",
            "no such ipset 'nosuch'",
        ),
        (
            rules,
            "type=in&action=ACCEPT&dest=nosuch",
            "dest",
            "no such alias 'nosuch'",
        ),
        (
            rules,
            "type=in&action=ACCEPT&dport=22",
            "proto",
            "missing property - 'dport' requires this property",
        ),
        (
            rules,
            "type=in&action=ACCEPT&proto=udp&icmp-type=echo-request",
            "proto",
            "missing property - 'icmp-type' requires this property",
        ),
        (
            rules,
            "type=in&action=ACCEPT&macro=Nope",
            "macro",
            "unknown macro 'Nope'",
        ),
        (
            rules,
            "type=in&action=ALLOW",
            "action",
            "unknown action 'ALLOW'",
        ),
        (
            "/nodes/pve1/qemu/100/firewall/rules",
            "type=in&action=ACCEPT&iface=eth0",
            "iface",
            "value does not match the regex pattern 'net\\d+'",
        ),
        (
            "/cluster/firewall/groups/webserver",
            "type=group&action=other",
            "type",
            "invalid rule type 'group' for rule_env 'group'",
        ),
    ];
    for (path, form, param, msg) in cases {
        let e = errors(&post(&sim, path, form).await);
        assert_eq!(e, json!({ *param: msg }), "{path} {form}");
    }
    let e = errors(&put(&sim, &format!("{rules}/0"), "delete=action").await);
    assert_eq!(e["delete"], "unable to delete required property 'action'");
    let e = errors(&put(&sim, &format!("{rules}/0"), "delete=moveto").await);
    assert_eq!(e["delete"], "no such property ('moveto')");
    let e = errors(&put(&sim, "/cluster/firewall/options", "delete=bogus").await);
    assert_eq!(e["delete"], "no such option 'bogus'");
    for (path, want) in [
        (
            "/cluster/firewall/groups/nosuch",
            "no such security group 'nosuch'\n",
        ),
        ("/cluster/firewall/ipset/nosuch", "no such IPSet 'nosuch'\n"),
        (
            "/nodes/pve1/qemu/100/firewall/ipset/management",
            "no such IPSet 'management'\n",
        ),
    ] {
        let r = get(&sim, &format!("/api2/json{path}"), ADMIN).await;
        assert_eq!((r.status, message(&r)), (500, want.to_string()), "{path}");
    }
    assert_eq!(data(&sim, rules).await, before);

    // Privileges: Sys.Audit/Sys.Modify on / and /nodes/{node},
    // VM.Audit/VM.Config.Network on /vms/{vmid}.
    let refused = [
        ("GET", rules, "", "/, Sys.Audit"),
        ("POST", rules, "type=in&action=ACCEPT", "/, Sys.Modify"),
        (
            "PUT",
            "/cluster/firewall/options",
            "enable=0",
            "/, Sys.Modify",
        ),
        ("GET", "/cluster/firewall/ipset", "", "/, Sys.Audit"),
        (
            "GET",
            "/nodes/pve1/firewall/rules",
            "",
            "/nodes/pve1, Sys.Audit",
        ),
        (
            "DELETE",
            "/nodes/pve1/firewall/rules/0",
            "",
            "/nodes/pve1, Sys.Modify",
        ),
        (
            "POST",
            "/nodes/pve1/qemu/100/firewall/rules",
            "type=in&action=ACCEPT",
            "/vms/100, VM.Config.Network",
        ),
        (
            "PUT",
            "/nodes/pve1/qemu/100/firewall/options",
            "enable=0",
            "/vms/100, VM.Config.Network",
        ),
        (
            "GET",
            "/nodes/pve1/qemu/104/firewall/rules",
            "",
            "/vms/104, VM.Audit",
        ),
    ];
    for (method, path, form, perm) in refused {
        let r = as_auditor(&sim, method, path, form).await;
        assert_eq!(
            (r.status, message(&r)),
            (403, format!("Permission check failed ({perm})\n")),
            "{method} {path}"
        );
    }
    let r = as_auditor(&sim, "GET", "/nodes/pve1/qemu/100/firewall/rules", "").await;
    assert_eq!(r.data().as_array().unwrap().len(), 3);
    assert_eq!(
        as_auditor(&sim, "GET", "/cluster/firewall/groups", "")
            .await
            .status,
        200
    );

    // Node calls are proxied (pve3 is offline); guest rules are not.
    let r = get(&sim, "/api2/json/nodes/pve3/firewall/rules", ADMIN).await;
    assert_eq!(r.status, 595);
    let r = get(
        &sim,
        "/api2/json/nodes/pve3/qemu/105/firewall/options",
        ADMIN,
    )
    .await;
    assert_eq!(r.status, 595);
    assert_eq!(
        data(&sim, "/nodes/pve3/qemu/105/firewall/rules").await,
        json!([])
    );
    only_violations(
        &sim,
        &[
            "POST /cluster/firewall/rules: type: value 'sideways'",
            "POST /cluster/firewall/rules: dport: invalid format",
            "POST /cluster/firewall/rules: source: invalid format",
            "POST /cluster/firewall/rules: type: property is missing",
            "GET /cluster/firewall/rules/first: pos:",
            "PUT /cluster/firewall/options: policy_in:",
            "PUT /nodes/pve1/qemu/100/firewall/options: enable:",
            "GET /cluster/firewall/refs: type:",
        ],
    );
}
