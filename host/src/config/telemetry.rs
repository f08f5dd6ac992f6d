//! The `[telemetry]` section: OpenTelemetry traces, exported over OTLP/HTTP
//! (protobuf) to a collector. Off unless an endpoint is given, in the file
//! (`otlp_endpoint`) or through the standard variables
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, the base URL, which traces go to
//! `/v1/traces` under; `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, the exact URL).
//! `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it off
//! whatever the file says. The exporter itself lives in
//! [`crate::telemetry`].

use super::layered::{Layers, Sourced};
use super::section::section;
use crate::error::ConfigError;

/// The standard variable for the collector's base URL (`/v1/traces` is
/// added); it overrides `[telemetry] otlp_endpoint`.
pub const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The standard variable for the exact URL traces are posted to.
pub const TRACES_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The variable that overrides `[telemetry] include_arguments`.
pub const INCLUDE_ARGUMENTS_ENV: &str = "PVE_MCP_TELEMETRY_INCLUDE_ARGUMENTS";
/// Where traces go under a base URL, as the OTLP specification says.
pub const TRACES_PATH: &str = "/v1/traces";

section! {
    /// `[telemetry]` as written in the file.
    file FileTelemetry;
    /// Where traces go, and what a span may carry.
    #[derive(Debug, Clone, PartialEq, Eq)]
    settings TelemetrySettings in "telemetry";

    /// The URL spans are posted to (`…/v1/traces`); `None`: traces are off.
    traces_url: Option<String> = custom(read_endpoint, None) from otlp_endpoint: Option<String>;
    /// Put the call's arguments (redacted as the audit log's are) in its span.
    include_arguments: bool = flag(default false, env INCLUDE_ARGUMENTS_ENV) from include_arguments;
}

impl TelemetrySettings {
    /// Whether traces are exported at all.
    pub fn enabled(&self) -> bool {
        self.traces_url.is_some()
    }
}

/// The traces URL: the exact one from [`TRACES_ENDPOINT_ENV`], else the
/// base URL from [`ENDPOINT_ENV`] or the file with [`TRACES_PATH`] added;
/// `None` when none is set or OpenTelemetry is switched off.
fn read_endpoint(file: &FileTelemetry, layers: &Layers<'_>) -> Result<Option<String>, ConfigError> {
    if let Some(off) = layers.env_sourced("OTEL_SDK_DISABLED")
        && off.value.trim().eq_ignore_ascii_case("true")
    {
        return Ok(None);
    }
    if let Some(exporter) = layers.env_sourced("OTEL_TRACES_EXPORTER") {
        match exporter.value.trim().to_ascii_lowercase().as_str() {
            "none" => return Ok(None),
            "otlp" => {}
            other => {
                return Err(ConfigError::new(
                    exporter.key,
                    format!("{other:?} is not an exporter pve-mcp has"),
                    "use otlp (the default), or none to turn traces off",
                ));
            }
        }
    }
    for protocol in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(p) = layers.env_sourced(protocol)
            && p.value.trim() != "http/protobuf"
        {
            return Err(ConfigError::new(
                p.key,
                format!(
                    "{:?} is not a protocol pve-mcp exports with",
                    p.value.trim()
                ),
                "pve-mcp sends OTLP over HTTP with protobuf: unset it or set http/protobuf \
                 (a collector's OTLP receiver takes it on port 4318)",
            ));
        }
    }
    if let Some(exact) = layers.env_sourced(TRACES_ENDPOINT_ENV) {
        return checked_url(&exact).map(Some);
    }
    let Some(base) = layers.text(ENDPOINT_ENV, "otlp_endpoint", file.otlp_endpoint.as_ref()) else {
        return Ok(None);
    };
    let base = checked_url(&base)?;
    Ok(Some(format!("{}{TRACES_PATH}", base.trim_end_matches('/'))))
}

/// An `http://` or `https://` URL with a host and no credentials in it.
fn checked_url(url: &Sourced<String>) -> Result<String, ConfigError> {
    let text = url.value.trim();
    let fix = "give the collector's OTLP/HTTP address, e.g. http://127.0.0.1:4318 (traces are \
               posted to /v1/traces under it)";
    let wrong = |problem: String| Err(ConfigError::new(url.key.clone(), problem, fix));
    let Ok(uri) = text.parse::<http::Uri>() else {
        return wrong(format!("{text:?} is not a URL"));
    };
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return wrong(format!("{text:?} is not an http:// or https:// URL"));
    }
    let Some(authority) = uri.authority() else {
        return wrong(format!("{text:?} names no host"));
    };
    if authority.host().is_empty() {
        return wrong(format!("{text:?} names no host"));
    }
    if authority.as_str().contains('@') {
        return Err(ConfigError::new(
            url.key.clone(),
            "the URL carries credentials",
            "leave them out of the URL (it is logged); send them as headers with \
             OTEL_EXPORTER_OTLP_HEADERS, e.g. authorization=Bearer%20TOKEN",
        ));
    }
    if uri.query().is_some() {
        return wrong(format!("{text:?} has a query"));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::layered::test_env::env;

    fn load(file: &str, vars: &[(&str, &str)]) -> Result<TelemetrySettings, ConfigError> {
        let file: FileTelemetry = toml::from_str(file).unwrap();
        TelemetrySettings::load(&file, "f.toml", &env(vars))
    }

    #[test]
    fn off_and_free_unless_an_endpoint_is_given() {
        let s = load("", &[]).unwrap();
        assert_eq!(s, TelemetrySettings::default());
        assert!(!s.enabled());
        assert!(!s.include_arguments);
    }

    #[test]
    fn the_file_names_a_base_url_and_traces_go_under_it() {
        let s = load("otlp_endpoint = \"http://127.0.0.1:4318/\"\n", &[]).unwrap();
        assert_eq!(
            s.traces_url.as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        let s = load("otlp_endpoint = \"https://otel.example/otlp\"\n", &[]).unwrap();
        assert_eq!(
            s.traces_url.as_deref(),
            Some("https://otel.example/otlp/v1/traces")
        );
    }

    #[test]
    fn the_standard_variables_override_the_file() {
        let file = "otlp_endpoint = \"http://file:4318\"\ninclude_arguments = true\n";
        let s = load(file, &[(ENDPOINT_ENV, "http://env:4318")]).unwrap();
        assert_eq!(s.traces_url.as_deref(), Some("http://env:4318/v1/traces"));
        assert!(s.include_arguments);
        let s = load(
            file,
            &[
                (ENDPOINT_ENV, "http://env:4318"),
                (TRACES_ENDPOINT_ENV, "http://exact:9999/traces"),
                (INCLUDE_ARGUMENTS_ENV, "false"),
            ],
        )
        .unwrap();
        assert_eq!(s.traces_url.as_deref(), Some("http://exact:9999/traces"));
        assert!(!s.include_arguments);
        let s = load("", &[(ENDPOINT_ENV, "http://env:4318")]).unwrap();
        assert!(s.enabled());
    }

    #[test]
    fn switched_off_by_the_standard_variables() {
        let file = "otlp_endpoint = \"http://file:4318\"\n";
        assert!(
            !load(file, &[("OTEL_SDK_DISABLED", "true")])
                .unwrap()
                .enabled()
        );
        assert!(
            !load(file, &[("OTEL_TRACES_EXPORTER", "none")])
                .unwrap()
                .enabled()
        );
        assert!(
            load(file, &[("OTEL_TRACES_EXPORTER", "otlp")])
                .unwrap()
                .enabled()
        );
        let e = load(file, &[("OTEL_TRACES_EXPORTER", "zipkin")]).unwrap_err();
        assert_eq!(e.key, "OTEL_TRACES_EXPORTER");
        let e = load(file, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap_err();
        assert_eq!(e.key, "OTEL_EXPORTER_OTLP_PROTOCOL");
        assert!(e.fix.contains("http/protobuf"), "{e}");
        assert!(
            load(file, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")])
                .unwrap()
                .enabled()
        );
    }

    #[test]
    fn a_bad_endpoint_names_the_key_and_the_fix() {
        for (bad, problem) in [
            ("collector:4318", "not an http:// or https:// URL"),
            ("ftp://collector:4318", "not an http:// or https:// URL"),
            ("http://", "not a URL"),
            ("http://a b", "not a URL"),
            ("http://host:4318/?x=1", "has a query"),
        ] {
            let e = load(&format!("otlp_endpoint = {bad:?}\n"), &[]).unwrap_err();
            assert_eq!(e.key, "telemetry.otlp_endpoint (in f.toml)", "{bad}: {e}");
            assert!(e.problem.contains(problem), "{bad}: {e}");
            assert!(e.fix.contains("http://127.0.0.1:4318"), "{e}");
        }
        let e = load("", &[(ENDPOINT_ENV, "not a url")]).unwrap_err();
        assert_eq!(e.key, ENDPOINT_ENV);
        let e = load("", &[(ENDPOINT_ENV, "http://user:hunter22@collector:4318")]).unwrap_err();
        assert!(e.problem.contains("credentials"), "{e}");
        assert!(!e.to_string().contains("hunter22"), "{e}");
        assert!(e.fix.contains("OTEL_EXPORTER_OTLP_HEADERS"), "{e}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(toml::from_str::<FileTelemetry>("endpoint = \"http://x\"\n").is_err());
    }
}
