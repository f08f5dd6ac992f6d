use super::*;

/// The value of the one sample line that starts with `series` (name and
/// labels exactly as rendered).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn every_metric_is_rendered_with_its_documented_name_and_type() {
    let m = Metrics::new();
    // A family with no series yet is not rendered at all.
    assert!(!m.render().contains(OPERATION_DURATION));
    m.operation("tools/call", "x", "", Transport::Tcp, None, Duration::ZERO);
    m.tool_call("x", Outcome::Ok);
    m.sandbox_limit(SandboxLimit::Deadline);
    m.upstream_request(Some("default"), "GET", Some(200));
    m.egress_denied(Denial::Path);
    m.compile_cache(CacheResult::Miss);
    let text = m.render();
    for (name, kind) in [
        (OPERATION_DURATION, "histogram"),
        ("pve_mcp_tool_calls_total", "counter"),
        ("pve_mcp_sandbox_limits_total", "counter"),
        ("pve_mcp_upstream_requests_total", "counter"),
        ("pve_mcp_egress_denials_total", "counter"),
        (APPROVALS_PENDING, "gauge"),
        (APPROVALS_OLDEST, "gauge"),
        (SESSIONS, "gauge"),
        (SLOTS, "gauge"),
        (SLOTS_IN_USE, "gauge"),
        (SLOTS_WAITING, "gauge"),
        ("pve_mcp_compile_cache_lookups_total", "counter"),
        (BUILD_INFO, "gauge"),
    ] {
        assert!(
            text.contains(&format!("# TYPE {name} {kind}\n")),
            "{name} {kind} missing:\n{text}"
        );
    }
    let version = format!(
        "pve_mcp_build_info{{version=\"{}\"}}",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(sample(&text, &version), Some(1.0), "{text}");
}

#[test]
fn calls_are_counted_by_declared_tool_and_outcome_and_others_are_other() {
    let m = Metrics::new();
    m.declare_tools(["pve_list_vms", "pve_get_vm_status"]);
    m.tool_call("pve_list_vms", Outcome::Ok);
    m.tool_call("pve_list_vms", Outcome::Ok);
    m.tool_call("pve_get_vm_status", Outcome::PolicyRefused);
    // A name the component does not declare never becomes a label.
    m.tool_call("made_up\"} 1\nevil", Outcome::InvalidArguments);
    m.tool_call("another_made_up", Outcome::InvalidArguments);
    let text = m.render();
    assert_eq!(
        sample(
            &text,
            "pve_mcp_tool_calls_total{tool=\"pve_list_vms\",outcome=\"ok\"}"
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "pve_mcp_tool_calls_total{tool=\"pve_get_vm_status\",outcome=\"policy_refused\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "pve_mcp_tool_calls_total{tool=\"other\",outcome=\"invalid_arguments\"}"
        ),
        Some(2.0)
    );
    assert!(!text.contains("made_up"), "{text}");
    assert!(!text.contains("evil"), "{text}");
}

#[test]
fn the_operation_histogram_has_the_semantic_conventions_buckets_and_labels() {
    let m = Metrics::new();
    m.declare_tools(["pve_list_vms"]);
    m.operation(
        "tools/call",
        "pve_list_vms",
        error_type(true, None),
        Transport::Pipe,
        Some("2025-06-18"),
        Duration::from_millis(15),
    );
    m.operation(
        "tools/call",
        "pve_list_vms",
        error_type(false, None),
        Transport::Tcp,
        Some("1999-01-01"),
        Duration::from_secs(400),
    );
    let text = m.render();
    let labels = "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"pve_list_vms\",error_type=\"tool_error\",network_transport=\"pipe\",mcp_protocol_version=\"2025-06-18\"";
    for (le, count) in [("0.01", 0.0), ("0.02", 1.0), ("300", 1.0), ("+Inf", 1.0)] {
        assert_eq!(
            sample(
                &text,
                &format!("mcp_server_operation_duration_seconds_bucket{{{labels},le=\"{le}\"}}")
            ),
            Some(count),
            "le {le}:\n{text}"
        );
    }
    let ok = "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"pve_list_vms\",error_type=\"\",network_transport=\"tcp\",mcp_protocol_version=\"other\"";
    assert_eq!(
        sample(
            &text,
            &format!("mcp_server_operation_duration_seconds_bucket{{{ok},le=\"300\"}}")
        ),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            &format!("mcp_server_operation_duration_seconds_count{{{ok}}}")
        ),
        Some(1.0)
    );
    let buckets = text
        .lines()
        .filter(|l| l.contains("_bucket{") && l.contains("network_transport=\"pipe\""))
        .count();
    assert_eq!(buckets, OPERATION_BUCKETS.len() + 1, "{text}");
}

#[test]
fn upstream_requests_denials_limits_and_cache_have_fixed_labels() {
    let m = Metrics::new();
    m.upstream_request(Some("default"), "GET", Some(200));
    m.upstream_request(Some("default"), "POST", Some(500));
    m.upstream_request(Some("lab"), "GET", None);
    m.egress_denied(Denial::Method);
    m.egress_denied(Denial::Method);
    m.sandbox_limit(SandboxLimit::Memory);
    m.compile_cache(CacheResult::Hit);
    let text = m.render();
    for (series, value) in [
        (
            "pve_mcp_upstream_requests_total{cluster=\"default\",method_class=\"read\",status=\"2xx\"}",
            1.0,
        ),
        (
            "pve_mcp_upstream_requests_total{cluster=\"default\",method_class=\"write\",status=\"5xx\"}",
            1.0,
        ),
        (
            "pve_mcp_upstream_requests_total{cluster=\"lab\",method_class=\"read\",status=\"error\"}",
            1.0,
        ),
        ("pve_mcp_egress_denials_total{reason=\"method\"}", 2.0),
        ("pve_mcp_sandbox_limits_total{kind=\"memory\"}", 1.0),
        ("pve_mcp_compile_cache_lookups_total{result=\"hit\"}", 1.0),
    ] {
        assert_eq!(sample(&text, series), Some(value), "{series}:\n{text}");
    }
}

#[tokio::test]
async fn gauges_follow_their_guards_and_samplers_run_before_a_scrape() {
    let m = Metrics::new();
    m.sandbox_slots(32);
    let waiting = m.slot_waiting();
    let a = m.slot_in_use();
    let b = m.slot_in_use();
    let text = m.render();
    assert_eq!(sample(&text, SLOTS), Some(32.0));
    assert_eq!(sample(&text, SLOTS_IN_USE), Some(2.0));
    assert_eq!(sample(&text, SLOTS_WAITING), Some(1.0));
    drop((waiting, a));
    let text = m.render();
    assert_eq!(sample(&text, SLOTS_IN_USE), Some(1.0));
    assert_eq!(sample(&text, SLOTS_WAITING), Some(0.0));
    drop(b);

    let sessions = Arc::new(std::sync::atomic::AtomicUsize::new(3));
    let m = Arc::new(m);
    let (seen, target) = (sessions.clone(), m.clone());
    m.on_scrape(Arc::new(move || {
        let (n, target) = (seen.clone(), target.clone());
        Box::pin(async move {
            target.sessions(n.load(std::sync::atomic::Ordering::SeqCst));
            target.approvals_pending(2, Duration::from_secs(90));
        })
    }));
    let text = m.scrape().await;
    assert_eq!(sample(&text, SESSIONS), Some(3.0), "{text}");
    assert_eq!(sample(&text, APPROVALS_PENDING), Some(2.0));
    assert_eq!(sample(&text, APPROVALS_OLDEST), Some(90.0));
    sessions.store(5, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(sample(&m.scrape().await, SESSIONS), Some(5.0));
}

#[test]
fn outcomes_of_calls_and_refusals() {
    let out = |is_error| CallOutcome::Output {
        structured: serde_json::json!({}),
        summary: String::new(),
        is_error,
    };
    let failed = |kind| CallOutcome::Failed {
        kind,
        message: String::new(),
    };
    assert_eq!(outcome_of(&out(false)), Outcome::Ok);
    assert_eq!(outcome_of(&out(true)), Outcome::ToolError);
    assert_eq!(
        outcome_of(&failed(FailureKind::Upstream)),
        Outcome::UpstreamError
    );
    assert_eq!(
        outcome_of(&failed(FailureKind::Sandbox)),
        Outcome::SandboxLimit
    );
    assert_eq!(outcome_of(&failed(FailureKind::Busy)), Outcome::Busy);
    assert_eq!(error_type(true, None), "tool_error");
    assert_eq!(error_type(false, None), "");
    assert_eq!(error_type(false, Some(-32602)), "-32602");
    assert_eq!(error_type(false, Some(12345)), "_OTHER");
    let labels: Vec<&str> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
    let docs = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/deploy.md"));
    for label in labels {
        assert!(
            docs.contains(&format!("`{label}`")),
            "docs/deploy.md does not list the outcome {label}"
        );
    }
}

#[test]
fn hooks_do_nothing_while_metrics_are_off() {
    // The process-wide instance is never enabled in unit tests: every
    // hook returns at once.
    if enabled() {
        return;
    }
    tool_call("pve_list_vms", Outcome::Ok);
    let held = slot_in_use();
    drop(held);
    assert!(!enabled());
}
