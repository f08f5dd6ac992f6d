//! Traces: one OpenTelemetry span per MCP `tools/call`, exported over
//! OTLP/HTTP (protobuf) when `[telemetry]` names a collector
//! ([`crate::config::telemetry`]).
//!
//! The span is a `tracing` span ([`span`]) that `tracing-opentelemetry`
//! turns into an OpenTelemetry one; the layer that does it sees only that
//! span (its own target), never the log events, so nothing a log line
//! carries reaches a span. Spans leave in batches from the SDK's own thread
//! through a blocking HTTP client, off the call path. Unconfigured, nothing
//! is built: [`span::call_span`] returns a disabled span after one atomic
//! load, and the subscriber is the one logging always had.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::Registry;

use crate::config::telemetry::TelemetrySettings;

pub mod span;

/// The target of the call spans: the only one the exporting layer sees.
pub const TARGET: &str = "pve_mcp::telemetry::call";

/// How long one export may take before it is given up.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the process waits at exit for the last spans to go out.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// What a span may carry, fixed once traces are on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    pub(crate) include_arguments: bool,
}

/// Set once, when the exporter starts; unset means traces are off.
static ON: OnceLock<Options> = OnceLock::new();

/// The options in force, or `None` when traces are off.
pub(crate) fn options() -> Option<Options> {
    ON.get().copied()
}

/// The running exporter. Keep it for the life of the process and call
/// [`Telemetry::shutdown`] at the end, which sends the last batch.
pub struct Telemetry {
    provider: SdkTracerProvider,
    url: String,
}

impl Telemetry {
    /// Starts the exporter `settings` describe; `None` when traces are off.
    /// Call it before the async runtime starts: the HTTP client is a
    /// blocking one, used only by the batch processor's thread.
    pub fn start(settings: &TelemetrySettings) -> anyhow::Result<Option<Telemetry>> {
        let Some(url) = &settings.traces_url else {
            return Ok(None);
        };
        let tls = crate::tls::client::client_config(&crate::tls::client::TlsMode::WebPki)?;
        let client = reqwest::blocking::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(EXPORT_TIMEOUT)
            .build()?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(url.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build()?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource())
            .build();
        let _ = ON.set(Options {
            include_arguments: settings.include_arguments,
        });
        Ok(Some(Telemetry {
            provider,
            url: url.clone(),
        }))
    }

    /// The layer that turns the call spans into OpenTelemetry spans, for
    /// [`crate::logging::init`]. It sees nothing but [`TARGET`].
    pub fn layer(&self) -> Box<dyn Layer<Registry> + Send + Sync> {
        let tracer = self.provider.tracer("pve-mcp");
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_level(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(Targets::new().with_target(TARGET, tracing::Level::INFO))
            .boxed()
    }

    /// Where spans go, for the start-up log line.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends what is still queued and stops the exporter, waiting at most
    /// [`SHUTDOWN_TIMEOUT`] (a collector that is down never holds the exit
    /// longer). Call it outside the async runtime.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
            tracing::warn!("traces: the last spans may not have been sent: {e}");
        }
    }
}

/// `service.name` is `pve-mcp` unless `OTEL_SERVICE_NAME` or
/// `OTEL_RESOURCE_ATTRIBUTES` names it; `service.version` is the binary's.
fn resource() -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|s| !s.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|s| s.contains("service.name="));
    let builder = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    if named {
        builder.build()
    } else {
        builder.with_service_name("pve-mcp").build()
    }
}
