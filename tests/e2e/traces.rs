//! Traces (issue 28): `pve-mcp` exports one span per `tools/call` over
//! OTLP/HTTP to a collector. The collector here is a small OTLP/HTTP
//! receiver (hyper on a loopback port) that decodes each
//! `ExportTraceServiceRequest` with `opentelemetry-proto`; the tests check
//! the span names, the MCP semantic-convention attributes, the parent
//! taken from `params._meta.traceparent`, `error.type`, and that arguments
//! appear only with `include_arguments` (redacted) and secrets never.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, span, status};
use prost::Message;
use rmcp::model::{CallToolRequestParams, RequestParamsMeta};
use serde_json::{Value, json};

use crate::common::*;
use crate::http::{HttpServer, call_request, http_client, messages};

/// A W3C `traceparent` for a sampled remote parent: the trace id and the
/// caller's span id the server's span must carry.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";
const OTHER_TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const OTHER_PARENT_ID: &str = "b7ad6b7169203331";

fn traceparent(trace: &str, parent: &str) -> String {
    format!("00-{trace}-{parent}-01")
}

/// A span as received, with the resource it came under.
#[derive(Debug, Clone)]
struct Received {
    resource: Vec<KeyValue>,
    span: Span,
}

/// The OTLP/HTTP receiver: `POST /v1/traces` with a protobuf body.
struct Receiver {
    /// The base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it.
    url: String,
    spans: Arc<Mutex<Vec<Received>>>,
    /// Anything that was not a protobuf POST to /v1/traces.
    wrong: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding the receiver");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let spans = Arc::new(Mutex::new(Vec::new()));
        let wrong = Arc::new(Mutex::new(Vec::new()));
        let (s, w) = (spans.clone(), wrong.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (spans, wrong) = (s.clone(), w.clone());
                let service = hyper::service::service_fn(move |req| {
                    let (spans, wrong) = (spans.clone(), wrong.clone());
                    async move { Ok::<_, Infallible>(receive(req, &spans, &wrong).await) }
                });
                tokio::spawn(async move {
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Receiver { url, spans, wrong }
    }

    /// Waits until `n` spans have arrived; all of them.
    async fn wait_for(&self, n: usize, log: impl Fn() -> String) -> Vec<Received> {
        wait_until(
            Lazy(|| {
                format!(
                    "{n} spans; received {:#?}\nwrong requests: {:?}\nserver log:\n{}",
                    self.spans.lock().unwrap(),
                    self.wrong.lock().unwrap(),
                    log()
                )
            }),
            Duration::from_secs(60),
            async || {
                let spans = self.spans.lock().unwrap();
                (spans.len() >= n).then(|| spans.clone())
            },
        )
        .await
    }
}

async fn receive(
    req: hyper::Request<hyper::body::Incoming>,
    spans: &Mutex<Vec<Received>>,
    wrong: &Mutex<Vec<String>>,
) -> hyper::Response<Full<Bytes>> {
    let what = format!(
        "{} {} {:?}",
        req.method(),
        req.uri().path(),
        req.headers().get("content-type")
    );
    let protobuf = req
        .headers()
        .get("content-type")
        .is_some_and(|v| v == "application/x-protobuf");
    if req.method() != hyper::Method::POST || req.uri().path() != "/v1/traces" || !protobuf {
        wrong.lock().unwrap().push(what);
        return hyper::Response::builder()
            .status(404)
            .body(Full::new(Bytes::new()))
            .unwrap();
    }
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let request = match ExportTraceServiceRequest::decode(body) {
        Ok(request) => request,
        Err(e) => {
            wrong.lock().unwrap().push(format!("{what}: {e}"));
            return hyper::Response::builder()
                .status(400)
                .body(Full::new(Bytes::new()))
                .unwrap();
        }
    };
    let mut received = spans.lock().unwrap();
    for resource_spans in request.resource_spans {
        let resource = resource_spans
            .resource
            .map(|r| r.attributes)
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                received.push(Received {
                    resource: resource.clone(),
                    span,
                });
            }
        }
    }
    let answer = ExportTraceServiceResponse::default().encode_to_vec();
    hyper::Response::builder()
        .status(200)
        .header("content-type", "application/x-protobuf")
        .body(Full::new(Bytes::from(answer)))
        .unwrap()
}

fn text_of(value: &Option<AnyValue>) -> Option<String> {
    match value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        other => Some(format!("{other:?}")),
    }
}

fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| text_of(&kv.value))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The one span named `name` whose trace is `trace`.
fn find<'a>(spans: &'a [Received], name: &str, trace: &str) -> &'a Received {
    let found: Vec<&Received> = spans
        .iter()
        .filter(|r| r.span.name == name && hex(&r.span.trace_id) == trace)
        .collect();
    assert_eq!(found.len(), 1, "one {name} in trace {trace}: {spans:#?}");
    found[0]
}

/// What every call span carries, whatever the call.
fn assert_call_span(r: &Received, tool: &str, transport: &str, version: &str) {
    let a = &r.span.attributes;
    assert_eq!(r.span.name, format!("tools/call {tool}"));
    assert_eq!(r.span.kind, span::SpanKind::Server as i32, "{r:#?}");
    assert_eq!(attr(a, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attr(a, "gen_ai.tool.name").as_deref(), Some(tool));
    assert_eq!(
        attr(a, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(attr(a, "network.transport").as_deref(), Some(transport));
    assert_eq!(attr(a, "mcp.protocol.version").as_deref(), Some(version));
    assert!(attr(a, "jsonrpc.request.id").is_some(), "{r:#?}");
    assert_eq!(
        attr(&r.resource, "service.name").as_deref(),
        Some("pve-mcp")
    );
    // The bridge's own extras are off: no code locations, threads or
    // busy/idle times.
    for key in [
        "code.filepath",
        "thread.name",
        "busy_ns",
        "idle_ns",
        "level",
    ] {
        assert!(attr(a, key).is_none(), "{key} in {r:#?}");
    }
}

fn assert_ok(r: &Received) {
    assert!(attr(&r.span.attributes, "error.type").is_none(), "{r:#?}");
    let code = r.span.status.as_ref().map_or(0, |s| s.code);
    assert_ne!(code, status::StatusCode::Error as i32, "{r:#?}");
}

fn assert_error(r: &Received, error_type: &str) {
    assert_eq!(
        attr(&r.span.attributes, "error.type").as_deref(),
        Some(error_type),
        "{r:#?}"
    );
    let code = r.span.status.as_ref().map_or(0, |s| s.code);
    assert_eq!(code, status::StatusCode::Error as i32, "{r:#?}");
}

fn assert_parent(r: &Received, trace: &str, parent: &str) {
    assert_eq!(hex(&r.span.trace_id), trace, "{r:#?}");
    assert_eq!(hex(&r.span.parent_span_id), parent, "{r:#?}");
    assert_eq!(r.span.span_id.len(), 8);
    assert_ne!(hex(&r.span.span_id), parent);
}

/// No secret of the test, in any span or attribute.
fn assert_no_secrets(spans: &[Received]) {
    Secrets::fixed().check("the exported spans", &format!("{spans:?}"));
    for secret in [ADMIN_TOKEN_SECRET, AUDITOR_TOKEN_SECRET, crate::http::TOKEN] {
        assert!(!format!("{spans:?}").contains(secret), "a secret in a span");
    }
}

fn call_with_parent(tool: &str, args: Value, parent: Option<&str>) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(tool.to_string())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    if let Some(parent) = parent {
        params.set_traceparent(parent);
    }
    params
}

#[tokio::test]
async fn stdio_calls_are_spans_named_and_parented_as_the_mcp_conventions_say() {
    let receiver = Receiver::start().await;
    let sim = simulator().await;
    let opts = Opts::default()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.url)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    let server = Server::start(&sim, opts).await;
    let version = server
        .client
        .peer_info()
        .expect("the server's initialize result")
        .protocol_version
        .to_string();

    let tp = traceparent(TRACE_ID, PARENT_ID);
    let ok = server
        .client
        .call_tool(call_with_parent(
            "pve_list_vms",
            json!({"limit": 5}),
            Some(&tp),
        ))
        .await
        .expect("pve_list_vms");
    assert_eq!(ok.is_error, Some(false), "{ok:?}");
    let other = traceparent(OTHER_TRACE_ID, OTHER_PARENT_ID);
    let failed = server
        .client
        .call_tool(call_with_parent(
            "pve_get_vm_status",
            json!({"vmid": 987654}),
            Some(&other),
        ))
        .await
        .expect("pve_get_vm_status");
    assert_eq!(failed.is_error, Some(true), "{failed:?}");
    let unknown = server
        .client
        .call_tool(call_with_parent(
            "pve_no_such_tool",
            json!({}),
            Some(&other),
        ))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
    // Without a traceparent the span starts a trace of its own.
    server.ok("pve_get_cluster_status", json!({})).await;

    let spans = receiver.wait_for(4, || server.stderr()).await;
    assert!(receiver.wrong.lock().unwrap().is_empty());

    let listed = find(&spans, "tools/call pve_list_vms", TRACE_ID);
    assert_call_span(listed, "pve_list_vms", "pipe", &version);
    assert_parent(listed, TRACE_ID, PARENT_ID);
    assert_ok(listed);

    let status = find(&spans, "tools/call pve_get_vm_status", OTHER_TRACE_ID);
    assert_call_span(status, "pve_get_vm_status", "pipe", &version);
    assert_parent(status, OTHER_TRACE_ID, OTHER_PARENT_ID);
    assert_error(status, "tool_error");

    let unknown = find(&spans, "tools/call pve_no_such_tool", OTHER_TRACE_ID);
    assert_error(unknown, "-32602");

    let root: Vec<&Received> = spans
        .iter()
        .filter(|r| r.span.name == "tools/call pve_get_cluster_status")
        .collect();
    assert_eq!(root.len(), 1, "{spans:#?}");
    assert!(root[0].span.parent_span_id.is_empty(), "{:#?}", root[0]);
    assert_ne!(hex(&root[0].span.trace_id), TRACE_ID);
    assert_ne!(hex(&root[0].span.trace_id), OTHER_TRACE_ID);
    assert_call_span(root[0], "pve_get_cluster_status", "pipe", &version);

    // Arguments stay out by default: neither the attribute nor a value.
    for r in &spans {
        assert!(
            attr(&r.span.attributes, "gen_ai.tool.call.arguments").is_none(),
            "{r:#?}"
        );
    }
    assert!(!format!("{spans:?}").contains("987654"), "{spans:#?}");
    assert_no_secrets(&spans);
    server.stop().await;
}

#[tokio::test]
async fn http_calls_are_tcp_spans_and_carry_redacted_arguments_when_asked() {
    let receiver = Receiver::start().await;
    let sim = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pve-mcp.toml");
    std::fs::write(
        &config,
        format!(
            "[telemetry]\notlp_endpoint = \"{}\"\ninclude_arguments = true\n",
            receiver.url
        ),
    )
    .unwrap();
    let opts = Opts::default()
        .env("MCP_AUTH_TOKEN", crate::http::TOKEN)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .arg("--config")
        .arg(config.to_str().unwrap());
    let server = HttpServer::spawn(
        &sim,
        opts,
        &["serve", "--http", "127.0.0.1:0"],
        http_client(),
    )
    .await;
    let session = server.session().await;

    let mut call = call_request(2, "pve_get_vm_status", json!({"vmid": 100}));
    call["params"]["_meta"] = json!({"traceparent": traceparent(TRACE_ID, PARENT_ID)});
    let answer = messages(server.post_in(&session, &call).send().await.unwrap()).await;
    assert_eq!(
        answer.last().unwrap()["result"]["isError"],
        false,
        "{answer:?}"
    );
    // A secret-named argument: refused by the tool, masked in the span.
    let mut call = call_request(
        3,
        "pve_get_vm_status",
        json!({"vmid": 100, "password": "hunter2hunter2"}),
    );
    call["params"]["_meta"] = json!({"traceparent": traceparent(OTHER_TRACE_ID, OTHER_PARENT_ID)});
    let answer = messages(server.post_in(&session, &call).send().await.unwrap()).await;
    assert_eq!(
        answer.last().unwrap()["result"]["isError"],
        true,
        "{answer:?}"
    );

    let spans = receiver.wait_for(2, || server.log()).await;
    let ok = find(&spans, "tools/call pve_get_vm_status", TRACE_ID);
    assert_call_span(ok, "pve_get_vm_status", "tcp", "2025-11-25");
    assert_parent(ok, TRACE_ID, PARENT_ID);
    assert_ok(ok);
    assert_eq!(
        attr(&ok.span.attributes, "gen_ai.tool.call.arguments").as_deref(),
        Some(r#"{"vmid":100}"#)
    );

    let refused = find(&spans, "tools/call pve_get_vm_status", OTHER_TRACE_ID);
    assert_parent(refused, OTHER_TRACE_ID, OTHER_PARENT_ID);
    assert_error(refused, "tool_error");
    let arguments = attr(&refused.span.attributes, "gen_ai.tool.call.arguments").unwrap();
    assert!(arguments.contains("\"password\""), "{arguments}");
    assert!(arguments.contains("\"vmid\":100"), "{arguments}");
    assert!(
        !format!("{spans:?}").contains("hunter2hunter2"),
        "{spans:#?}"
    );
    assert_no_secrets(&spans);
}

#[tokio::test]
async fn a_bad_endpoint_is_a_configuration_error_naming_the_key() {
    let sim = simulator().await;
    let dir = tempfile::tempdir().unwrap();
    let opts = Opts::default().env("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318");
    let out = command(&sim, &opts, dir.path(), &["serve"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{stderr}");
    assert!(stderr.contains("http://127.0.0.1:4318"), "{stderr}");
}

#[tokio::test]
async fn a_collector_that_is_down_costs_no_call_and_does_not_hold_the_exit() {
    // A port nobody listens on any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sim = simulator().await;
    let opts = Opts::default()
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            &format!("http://127.0.0.1:{port}"),
        )
        .env("OTEL_BSP_SCHEDULE_DELAY", "50");
    let server = Server::start(&sim, opts).await;
    for _ in 0..3 {
        server.ok("pve_list_vms", json!({"limit": 1})).await;
    }
    let started = std::time::Instant::now();
    let log = server.stop().await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the exit waited {:?}:\n{log}",
        started.elapsed()
    );
    assert!(log.contains("exporting traces (OTLP/HTTP)"), "{log}");
}
