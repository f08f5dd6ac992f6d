//! Turning Proxmox and transport failures into messages an agent can act on.
//!
//! Each message says what happened, in words, then what to do about it, and
//! ends with the request that failed. Proxmox's own message (the HTTP reason
//! phrase, which the host copies into [`REASON_HEADER`]) is always quoted so
//! nothing it says is lost.

use serde_json::Value;
use wasip2::http::types::ErrorCode;

use crate::error::{ToolError, quoted};

/// The response header the host copies Proxmox's HTTP reason phrase into,
/// because `wasi:http` cannot carry reason phrases.
pub const REASON_HEADER: &str = "pve-mcp-reason-phrase";

/// How much of Proxmox's message we quote; its messages are short, so this
/// only cuts off something pathological.
const MESSAGE_MAX: usize = 500;

/// Privileges the built-in `PVEAuditor` role grants; for these we can name
/// a ready-made role in the fix.
const AUDITOR_PRIVS: &[&str] = &[
    "VM.Audit",
    "Sys.Audit",
    "Datastore.Audit",
    "Pool.Audit",
    "SDN.Audit",
    "Mapping.Audit",
];

/// One HTTP exchange, for messages: `GET /api2/json/...` and the base URL.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `GET` for all read tools.
    pub method: &'a str,
    /// Path and query below the base URL, e.g. `/api2/json/cluster/resources?type=vm`.
    pub target: &'a str,
    /// The endpoint's base URL, e.g. `https://pve1.example:8006`.
    pub base_url: &'a str,
}

impl Request<'_> {
    fn label(&self) -> String {
        format!("{} {}", self.method, self.target)
    }
}

/// Proxmox's message for a failed response: the reason phrase the host
/// passed on, else the body's `message` (libpve-http-server >= 5.2), else
/// the standard phrase for the status code. A body's per-parameter
/// `errors` (400) are appended, since the reason alone says only
/// "Parameter verification failed.".
pub fn proxmox_message(status: u16, reason_header: Option<&str>, body: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let body_message = parsed
        .as_ref()
        .and_then(|v| v.get("message"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty());
    let reason = reason_header.map(str::trim).filter(|r| !r.is_empty());
    let mut message = match (reason, body_message) {
        // The body can say more than the (single-line) reason phrase.
        (Some(r), Some(b)) if r != b => Some(format!("{r} ({b})")),
        (Some(r), _) => Some(r.to_owned()),
        (None, b) => b.map(str::to_owned),
    }
    .or_else(|| {
        wstd::http::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .map(str::to_owned)
    })
    .unwrap_or_default();
    if let Some(Value::Object(errors)) = parsed.as_ref().and_then(|v| v.get("errors")) {
        let details: Vec<String> = errors
            .iter()
            .map(|(k, v)| {
                let v = v
                    .as_str()
                    .map(str::trim)
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string());
                format!("{k}: {v}")
            })
            .collect();
        if !details.is_empty() {
            message = format!("{message} {}", details.join("; "));
        }
    }
    message
}

/// The `upstream` error for a non-2xx response.
pub fn http_error(
    req: Request<'_>,
    status: u16,
    reason_header: Option<&str>,
    body: &[u8],
) -> ToolError {
    let message = proxmox_message(status, reason_header, body);
    let said = format!("HTTP {status} {}", quoted(&message, MESSAGE_MAX));
    let lower = message.to_ascii_lowercase();
    let text = match status {
        401 if lower.contains("no ticket") => format!(
            "No credentials reached Proxmox ({said}): the pve-mcp host did not attach an API \
             token. Check that pve-mcp is configured with a token for this endpoint."
        ),
        401 => format!(
            "Authentication failed: Proxmox rejected the API token ({said}). Check the token id \
             (form user@realm!tokenname) and its secret in the pve-mcp configuration, and that \
             the token has not expired or been deleted (pveum user token list <user@realm>). \
             With user and password login, check PVE_USERNAME (user@realm) and PVE_PASSWORD, \
             and that two-factor authentication is off for that user."
        ),
        403 => forbidden(&message, &said),
        500 if (lower.contains("configuration file") && lower.contains("does not exist"))
            || lower.contains("unable to find configuration file") =>
        {
            format!(
                "No such VM or container on that node ({said}). Check the vmid with \
                 pve_list_vms, or omit node (and vm_type) so pve-mcp looks up where the guest \
                 is."
            )
        }
        _ if lower.contains("no such cluster node") || lower.contains("hostname lookup") => {
            format!(
                "Proxmox does not know that node ({said}). Check the node name with \
                 pve_list_vms, whose entries show each guest's node (node names are case-sensitive)."
            )
        }
        595 | 596 => unreachable_node(&said),
        500..=599
            if [
                "connection refused",
                "no route to host",
                "connection timed out",
            ]
            .iter()
            .any(|m| lower.contains(m)) =>
        {
            unreachable_node(&said)
        }
        400 => format!(
            "Proxmox rejected the request parameters ({said}). Check the arguments; if they \
             look right, this Proxmox version may expect something else."
        ),
        501 => format!(
            "Proxmox does not implement this request ({said}); the endpoint may not exist in \
             this Proxmox VE version."
        ),
        502..=504 => format!(
            "Proxmox, or a proxy in front of it, is unavailable or overloaded ({said}). Retry \
             in a moment."
        ),
        _ => format!("Proxmox returned an error ({said})."),
    };
    ToolError::Upstream(format!("{text} [{}]", req.label()))
}

/// The message for a 403; names the privilege and how to grant it when the
/// message has Proxmox's usual shape `Permission check failed (PATH, PRIV)`.
fn forbidden(message: &str, said: &str) -> String {
    if message.contains("not available with API token") {
        return format!(
            "Permission denied: this endpoint cannot be used with an API token at all ({said}); \
             pve-mcp cannot offer it."
        );
    }
    let Some((path, privs)) = permission_check(message) else {
        return format!(
            "Permission denied ({said}). The API token lacks a privilege this request needs; \
             check its ACLs with pveum acl list."
        );
    };
    let alternatives: Vec<&str> = privs.split('|').map(str::trim).collect();
    let needed = if alternatives.len() > 1 {
        format!("one of {}", alternatives.join(" or "))
    } else {
        privs.to_owned()
    };
    if let Some(text) = guest_agent_privilege(path, &alternatives, &needed, said) {
        return text;
    }
    let role = if alternatives.iter().any(|p| AUDITOR_PRIVS.contains(p)) {
        "PVEAuditor".to_owned()
    } else {
        format!("<a role with {}>", alternatives[0])
    };
    format!(
        "Permission denied: the API token lacks {needed} on {path} ({said}). Grant it, e.g. \
         pveum acl modify {path} --tokens 'user@realm!tokenname' --roles {role}; a \
         privilege-separated token (the default) needs the ACL on the token itself, not only \
         on its user."
    )
}

/// The 403 fix for the guest agent's privileges, which Proxmox renamed:
/// PVE 9's `VM.GuestAgent.*` are PVE 8's `VM.Monitor`. No built-in role
/// holds just them, so the fix makes one.
fn guest_agent_privilege(
    path: &str,
    alternatives: &[&str],
    needed: &str,
    said: &str,
) -> Option<String> {
    let pve9 = alternatives
        .iter()
        .find(|p| p.starts_with("VM.GuestAgent."))
        .copied();
    if pve9.is_none() && alternatives != ["VM.Monitor"] {
        return None;
    }
    let (names, privs) = match pve9 {
        Some(p) => (
            format!("{needed} (PVE 8: VM.Monitor)"),
            format!("{p} (PVE 8: VM.Monitor)"),
        ),
        None => (
            format!(
                "{needed} (PVE 9: VM.GuestAgent.Audit, .FileRead, .FileWrite or .Unrestricted)"
            ),
            "VM.Monitor (PVE 9: VM.GuestAgent.Unrestricted)".to_owned(),
        ),
    };
    Some(format!(
        "Permission denied: the API token lacks {names} on {path} ({said}). Grant it with a \
         role that holds it, e.g. pveum role add PVEMCPAgent --privs {privs}, then pveum acl \
         modify {path} --tokens 'user@realm!tokenname' --roles PVEMCPAgent; a \
         privilege-separated token (the default) needs the ACL on the token itself."
    ))
}

/// Splits `Permission check failed (/vms/100, VM.Audit)` into its ACL path
/// and privilege list.
fn permission_check(message: &str) -> Option<(&str, &str)> {
    let start = message.find("Permission check failed (")? + "Permission check failed (".len();
    let inner = &message[start..];
    let inner = &inner[..inner.rfind(')')?];
    let (path, privs) = inner.rsplit_once(", ")?;
    (path.starts_with('/') && !privs.is_empty()).then_some((path, privs))
}

fn unreachable_node(said: &str) -> String {
    format!(
        "The node that holds this resource is unreachable ({said}): the API node could not \
         forward the request to it, so it is probably offline or out of quorum. Guests on \
         it show status \"unknown\" in pve_list_vms; try again once the node is back."
    )
}

/// The `upstream` error for a wasi:http transport failure, mapped from the
/// typed `ErrorCode` the host returned.
pub fn transport_error(req: Request<'_>, code: &ErrorCode) -> ToolError {
    let base = req.base_url;
    let text = match code {
        ErrorCode::HttpRequestDenied => format!(
            "The host's egress gate refused this request (host policy, not Proxmox): the \
             request to {base} is outside what the host allows. Retrying will not help; ask \
             the operator to check the host's endpoint configuration (pve-mcp's clusters, or \
             the network grant of the wasm host that runs this component)."
        ),
        ErrorCode::DnsTimeout | ErrorCode::DnsError(_) | ErrorCode::DestinationNotFound => {
            let detail = match code {
                ErrorCode::DnsError(p) => p
                    .rcode
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default(),
                ErrorCode::DnsTimeout => " (DNS timeout)".to_owned(),
                _ => String::new(),
            };
            format!(
                "Cannot reach Proxmox at {base}: its host name does not resolve{detail}. Check \
                 the endpoint URL in the pve-mcp configuration."
            )
        }
        ErrorCode::ConnectionRefused => format!(
            "Cannot reach Proxmox at {base}: connection refused. Check that the host is up, \
             pveproxy is running and the port (normally 8006) is right."
        ),
        ErrorCode::DestinationUnavailable
        | ErrorCode::DestinationIpUnroutable
        | ErrorCode::ConnectionLimitReached => format!(
            "Cannot reach Proxmox at {base} ({}). Check that the host is up and reachable \
             from the pve-mcp host.",
            code_name(code)
        ),
        ErrorCode::DestinationIpProhibited => format!(
            "The pve-mcp host's network policy does not allow connecting to {base}. Ask the \
             operator to check the endpoint configuration."
        ),
        ErrorCode::ConnectionTerminated | ErrorCode::HttpResponseIncomplete => format!(
            "The connection to Proxmox at {base} was closed before the response was complete \
             ({}). Retry; if it persists, check pveproxy and any proxy in between.",
            code_name(code)
        ),
        ErrorCode::ConnectionTimeout => format!(
            "Proxmox at {base} did not accept the connection in time. The host may be down or \
             firewalled; retry later."
        ),
        ErrorCode::HttpResponseTimeout
        | ErrorCode::ConnectionReadTimeout
        | ErrorCode::ConnectionWriteTimeout => format!(
            "Proxmox at {base} did not answer in time ({}). It may be overloaded or waiting on \
             an unreachable node; retry, or narrow the request.",
            code_name(code)
        ),
        ErrorCode::TlsCertificateError => {
            tls_failure(base, "the server certificate is not trusted")
        }
        ErrorCode::TlsProtocolError => tls_failure(base, "the TLS handshake failed"),
        ErrorCode::TlsAlertReceived(p) => {
            let what = match (&p.alert_message, p.alert_id) {
                (Some(m), _) => format!("the server sent TLS alert {}", quoted(m, MESSAGE_MAX)),
                (None, Some(id)) => format!("the server sent TLS alert {id}"),
                (None, None) => "the server sent a TLS alert".to_owned(),
            };
            tls_failure(base, &what)
        }
        ErrorCode::InternalError(Some(msg)) if mentions_tls(msg) => tls_failure(base, msg),
        ErrorCode::InternalError(msg) => format!(
            "The pve-mcp host failed while calling Proxmox at {base}: {}.",
            msg.as_deref().unwrap_or("no details")
        ),
        ErrorCode::HttpResponseHeaderSectionSize(_)
        | ErrorCode::HttpResponseHeaderSize(_)
        | ErrorCode::HttpResponseBodySize(_)
        | ErrorCode::HttpResponseTrailerSectionSize(_)
        | ErrorCode::HttpResponseTrailerSize(_) => format!(
            "Proxmox's response was larger than the pve-mcp host accepts ({}). Narrow the \
             request, e.g. with filters.",
            code_name(code)
        ),
        ErrorCode::HttpResponseTransferCoding(_)
        | ErrorCode::HttpResponseContentCoding(_)
        | ErrorCode::HttpProtocolError
        | ErrorCode::HttpUpgradeFailed
        | ErrorCode::LoopDetected => format!(
            "Proxmox at {base} sent a response the host could not read ({}). Check that the \
             endpoint URL points at the Proxmox API (https://host:8006) and that no proxy in \
             between rewrites it.",
            code_name(code)
        ),
        ErrorCode::ConfigurationError => format!(
            "The pve-mcp host is misconfigured for {base} (HTTP client configuration error). \
             Ask the operator to check its configuration."
        ),
        ErrorCode::HttpRequestLengthRequired
        | ErrorCode::HttpRequestBodySize(_)
        | ErrorCode::HttpRequestMethodInvalid
        | ErrorCode::HttpRequestUriInvalid
        | ErrorCode::HttpRequestUriTooLong
        | ErrorCode::HttpRequestHeaderSectionSize(_)
        | ErrorCode::HttpRequestHeaderSize(_)
        | ErrorCode::HttpRequestTrailerSectionSize(_)
        | ErrorCode::HttpRequestTrailerSize(_) => {
            // We built the request; the host calling it malformed is our bug.
            return ToolError::Internal(format!(
                "the host rejected the request pve-mcp built ({}) [{}]",
                code_name(code),
                req.label()
            ));
        }
    };
    ToolError::Upstream(format!("{text} [{}]", req.label()))
}

/// The `upstream` error when the response started but reading its body
/// failed. wstd reports this only as text (the io-error's debug string),
/// so this is the one place we look at words rather than a typed code.
pub fn body_read_error(req: Request<'_>, detail: &str) -> ToolError {
    let base = req.base_url;
    let text = if detail.to_ascii_lowercase().contains("timeout") {
        format!(
            "Proxmox at {base} stopped sending the response in time ({}). Retry, or narrow the \
             request.",
            quoted(detail, MESSAGE_MAX)
        )
    } else {
        format!(
            "Reading Proxmox's response from {base} failed ({}). Retry; if it persists, check \
             pveproxy and any proxy in between.",
            quoted(detail, MESSAGE_MAX)
        )
    };
    ToolError::Upstream(format!("{text} [{}]", req.label()))
}

/// The `upstream` error for a 2xx response whose body we cannot use.
pub fn bad_body(req: Request<'_>, status: u16, problem: &str, body: &[u8]) -> ToolError {
    let start = String::from_utf8_lossy(&body[..body.len().min(120)]).into_owned();
    ToolError::Upstream(format!(
        "Proxmox answered HTTP {status} but {problem} (body starts {}). Check that the \
         endpoint URL ({}) points at the Proxmox API, normally https://host:8006, not at a web \
         page or proxy. [{}]",
        quoted(&start, 120),
        req.base_url,
        req.label()
    ))
}

fn tls_failure(base: &str, detail: &str) -> String {
    format!(
        "TLS verification of Proxmox at {base} failed: {detail}. Proxmox's default \
         certificate is signed by the cluster's own CA: point PVE_CA_FILE at the cluster CA \
         (/etc/pve/pve-root-ca.pem on any node), or pin the certificate with \
         PVE_TLS_FINGERPRINT (SHA-256, shown by pvenode cert info)."
    )
}

/// Whether a host's free-text error is about TLS; the host uses
/// `internal-error` with a message for fingerprint mismatches.
fn mentions_tls(msg: &str) -> bool {
    let m = msg.to_ascii_lowercase();
    ["tls", "certificate", "fingerprint", "x509", "handshake"]
        .iter()
        .any(|w| m.contains(w))
}

/// A stable short name for an error code (its WIT case name).
fn code_name(code: &ErrorCode) -> &'static str {
    match code {
        ErrorCode::DnsTimeout => "DNS-timeout",
        ErrorCode::DnsError(_) => "DNS-error",
        ErrorCode::DestinationNotFound => "destination-not-found",
        ErrorCode::DestinationUnavailable => "destination-unavailable",
        ErrorCode::DestinationIpProhibited => "destination-IP-prohibited",
        ErrorCode::DestinationIpUnroutable => "destination-IP-unroutable",
        ErrorCode::ConnectionRefused => "connection-refused",
        ErrorCode::ConnectionTerminated => "connection-terminated",
        ErrorCode::ConnectionTimeout => "connection-timeout",
        ErrorCode::ConnectionReadTimeout => "connection-read-timeout",
        ErrorCode::ConnectionWriteTimeout => "connection-write-timeout",
        ErrorCode::ConnectionLimitReached => "connection-limit-reached",
        ErrorCode::TlsProtocolError => "TLS-protocol-error",
        ErrorCode::TlsCertificateError => "TLS-certificate-error",
        ErrorCode::TlsAlertReceived(_) => "TLS-alert-received",
        ErrorCode::HttpRequestDenied => "HTTP-request-denied",
        ErrorCode::HttpRequestLengthRequired => "HTTP-request-length-required",
        ErrorCode::HttpRequestBodySize(_) => "HTTP-request-body-size",
        ErrorCode::HttpRequestMethodInvalid => "HTTP-request-method-invalid",
        ErrorCode::HttpRequestUriInvalid => "HTTP-request-URI-invalid",
        ErrorCode::HttpRequestUriTooLong => "HTTP-request-URI-too-long",
        ErrorCode::HttpRequestHeaderSectionSize(_) => "HTTP-request-header-section-size",
        ErrorCode::HttpRequestHeaderSize(_) => "HTTP-request-header-size",
        ErrorCode::HttpRequestTrailerSectionSize(_) => "HTTP-request-trailer-section-size",
        ErrorCode::HttpRequestTrailerSize(_) => "HTTP-request-trailer-size",
        ErrorCode::HttpResponseIncomplete => "HTTP-response-incomplete",
        ErrorCode::HttpResponseHeaderSectionSize(_) => "HTTP-response-header-section-size",
        ErrorCode::HttpResponseHeaderSize(_) => "HTTP-response-header-size",
        ErrorCode::HttpResponseBodySize(_) => "HTTP-response-body-size",
        ErrorCode::HttpResponseTrailerSectionSize(_) => "HTTP-response-trailer-section-size",
        ErrorCode::HttpResponseTrailerSize(_) => "HTTP-response-trailer-size",
        ErrorCode::HttpResponseTransferCoding(_) => "HTTP-response-transfer-coding",
        ErrorCode::HttpResponseContentCoding(_) => "HTTP-response-content-coding",
        ErrorCode::HttpResponseTimeout => "HTTP-response-timeout",
        ErrorCode::HttpUpgradeFailed => "HTTP-upgrade-failed",
        ErrorCode::HttpProtocolError => "HTTP-protocol-error",
        ErrorCode::LoopDetected => "loop-detected",
        ErrorCode::ConfigurationError => "configuration-error",
        ErrorCode::InternalError(_) => "internal-error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasip2::http::types::{DnsErrorPayload, TlsAlertReceivedPayload};

    const REQ: Request<'static> = Request {
        method: "GET",
        target: "/api2/json/nodes/pve1/qemu/100/status/current",
        base_url: "https://pve1.example:8006",
    };

    fn upstream(e: ToolError) -> String {
        match e {
            ToolError::Upstream(m) => m,
            other => panic!("expected upstream, got {other:?}"),
        }
    }

    fn http(status: u16, reason: Option<&str>, body: &str) -> String {
        upstream(http_error(REQ, status, reason, body.as_bytes()))
    }

    #[test]
    fn reason_header_then_body_message_then_status_text() {
        assert_eq!(
            proxmox_message(500, Some("boom"), br#"{"message":"other\n"}"#),
            "boom (other)"
        );
        assert_eq!(
            proxmox_message(500, Some("same"), br#"{"data":null,"message":"same\n"}"#),
            "same"
        );
        assert_eq!(
            proxmox_message(500, None, br#"{"data":null,"message":"from body\n"}"#),
            "from body"
        );
        assert_eq!(
            proxmox_message(500, Some("  "), b""),
            "Internal Server Error"
        );
        assert_eq!(proxmox_message(595, None, b"garbage"), "");
        assert_eq!(
            proxmox_message(
                400,
                Some("Parameter verification failed."),
                br#"{"errors":{"vmid":"invalid format - value does not look like a valid VM ID\n"},"data":null}"#
            ),
            "Parameter verification failed. vmid: invalid format - value does not look like a valid VM ID"
        );
    }

    #[test]
    fn every_message_ends_with_the_request() {
        let m = http(418, Some("teapot"), "");
        assert_eq!(
            m,
            "Proxmox returned an error (HTTP 418 \"teapot\"). \
             [GET /api2/json/nodes/pve1/qemu/100/status/current]"
        );
    }

    #[test]
    fn unauthorized() {
        for reason in [
            "Authentication failed!",
            "invalid token value!",
            "no such token 'x' for user 'u@pve'",
            "token 'x' access expired",
        ] {
            let m = http(401, Some(reason), "");
            assert!(
                m.starts_with("Authentication failed: Proxmox rejected the API token"),
                "{m}"
            );
            assert!(m.contains("user@realm!tokenname"), "{m}");
            assert!(m.contains(reason), "{m}");
        }
        let m = http(401, Some("No ticket"), "");
        assert!(m.starts_with("No credentials reached Proxmox"), "{m}");
    }

    #[test]
    fn forbidden_names_privilege_path_and_fix() {
        let m = http(
            403,
            Some("Permission check failed (/vms/100, VM.Audit)"),
            r#"{"data":null,"message":"Permission check failed (/vms/100, VM.Audit)\n"}"#,
        );
        assert!(
            m.starts_with("Permission denied: the API token lacks VM.Audit on /vms/100"),
            "{m}"
        );
        assert!(
            m.contains(
                "pveum acl modify /vms/100 --tokens 'user@realm!tokenname' --roles PVEAuditor"
            ),
            "{m}"
        );
        assert!(m.contains("privilege-separated token"), "{m}");

        let m = http(
            403,
            None,
            r#"{"data":null,"message":"Permission check failed (/, Sys.Audit)\n"}"#,
        );
        assert!(m.contains("lacks Sys.Audit on / "), "{m}");

        let m = http(
            403,
            Some("Permission check failed (/vms/100, VM.Console|VM.Monitor)"),
            "",
        );
        assert!(
            m.contains("lacks one of VM.Console or VM.Monitor on /vms/100"),
            "{m}"
        );
        assert!(m.contains("--roles <a role with VM.Console>"), "{m}");

        let m = http(
            403,
            Some("Permission check failed (/vms/100, VM.GuestAgent.Unrestricted)"),
            "",
        );
        for needle in [
            "lacks VM.GuestAgent.Unrestricted (PVE 8: VM.Monitor) on /vms/100",
            "pveum role add PVEMCPAgent --privs VM.GuestAgent.Unrestricted (PVE 8: VM.Monitor)",
            "pveum acl modify /vms/100 --tokens 'user@realm!tokenname' --roles PVEMCPAgent",
        ] {
            assert!(m.contains(needle), "{needle}: {m}");
        }
        let m = http(
            403,
            Some("Permission check failed (/vms/100, VM.Monitor)"),
            "",
        );
        assert!(m.contains("PVE 9: VM.GuestAgent."), "{m}");
        assert!(m.contains("--privs VM.Monitor"), "{m}");

        let m = http(403, Some("Permission check failed (user != root@pam)"), "");
        assert!(m.starts_with("Permission denied (HTTP 403"), "{m}");

        let m = http(
            403,
            Some("URI '/access/ticket' not available with API token, need proper ticket."),
            "",
        );
        assert!(m.contains("cannot be used with an API token"), "{m}");
    }

    #[test]
    fn missing_guest_on_node() {
        let m = http(
            500,
            Some("Configuration file 'nodes/pve/qemu-server/100.conf' does not exist"),
            "",
        );
        assert!(m.starts_with("No such VM or container on that node"), "{m}");
        assert!(m.contains("pve_list_vms") && m.contains("omit node"), "{m}");
        let m = http(
            500,
            None,
            r#"{"data":null,"message":"Configuration file 'nodes/pve02/lxc/212.conf' does not exist\n"}"#,
        );
        assert!(m.starts_with("No such VM or container"), "{m}");
        let m = http(
            500,
            Some("unable to find configuration file for VM 100 on node 'pve'"),
            "",
        );
        assert!(m.starts_with("No such VM or container"), "{m}");
    }

    #[test]
    fn unreachable_and_unknown_nodes() {
        for (status, reason) in [
            (595, "Connection refused"),
            (596, "Connection timed out"),
            (595, "No route to host"),
            (500, "proxy error: Connection refused"),
        ] {
            let m = http(status, Some(reason), "");
            assert!(
                m.starts_with("The node that holds this resource is unreachable"),
                "{status} {m}"
            );
            assert!(m.contains("offline"), "{m}");
        }
        let m = http(595, None, "");
        assert!(
            m.contains("unreachable") && m.contains("HTTP 595 \"\""),
            "{m}"
        );
        let m = http(500, Some("no such cluster node 'pve9'"), "");
        assert!(m.starts_with("Proxmox does not know that node"), "{m}");
        let m = http(
            500,
            Some(
                "hostname lookup 'pve9' failed - failed to get address info for: pve9: Name or service not known",
            ),
            "",
        );
        assert!(m.starts_with("Proxmox does not know that node"), "{m}");
    }

    #[test]
    fn other_statuses() {
        let m = http(
            400,
            Some("Parameter verification failed."),
            r#"{"errors":{"upid":"no such task"},"data":null}"#,
        );
        assert!(
            m.contains("rejected the request parameters") && m.contains("upid: no such task"),
            "{m}"
        );
        let m = http(
            501,
            Some("Method 'GET /nodes/x//2/config' not implemented"),
            "",
        );
        assert!(m.contains("does not implement"), "{m}");
        let m = http(503, None, "<html>");
        assert!(
            m.contains("Service Unavailable") && m.contains("Retry"),
            "{m}"
        );
        let m = http(500, Some("VM 100 not running"), "");
        assert_eq!(
            m,
            "Proxmox returned an error (HTTP 500 \"VM 100 not running\"). \
             [GET /api2/json/nodes/pve1/qemu/100/status/current]"
        );
    }

    fn transport(code: ErrorCode) -> ToolError {
        transport_error(REQ, &code)
    }

    #[test]
    fn transport_denied_dns_refused() {
        let m = upstream(transport(ErrorCode::HttpRequestDenied));
        assert!(
            m.starts_with("The host's egress gate refused this request"),
            "{m}"
        );
        let m = upstream(transport(ErrorCode::DnsError(DnsErrorPayload {
            rcode: Some("NXDOMAIN".into()),
            info_code: None,
        })));
        assert!(
            m.contains("does not resolve (NXDOMAIN)") && m.contains("https://pve1.example:8006"),
            "{m}"
        );
        let m = upstream(transport(ErrorCode::ConnectionRefused));
        assert!(
            m.starts_with("Cannot reach Proxmox at https://pve1.example:8006: connection refused"),
            "{m}"
        );
        let m = upstream(transport(ErrorCode::DestinationUnavailable));
        assert!(
            m.starts_with("Cannot reach Proxmox") && m.contains("destination-unavailable"),
            "{m}"
        );
    }

    #[test]
    fn transport_timeouts() {
        for code in [
            ErrorCode::HttpResponseTimeout,
            ErrorCode::ConnectionReadTimeout,
            ErrorCode::ConnectionWriteTimeout,
        ] {
            let m = upstream(transport(code));
            assert!(m.contains("did not answer in time"), "{m}");
        }
        let m = upstream(transport(ErrorCode::ConnectionTimeout));
        assert!(m.contains("did not accept the connection in time"), "{m}");
    }

    #[test]
    fn transport_tls() {
        let m = upstream(transport(ErrorCode::TlsCertificateError));
        assert!(
            m.starts_with("TLS verification of Proxmox at https://pve1.example:8006 failed"),
            "{m}"
        );
        assert!(
            m.contains("PVE_CA_FILE") && m.contains("PVE_TLS_FINGERPRINT"),
            "{m}"
        );
        let m = upstream(transport(ErrorCode::TlsAlertReceived(
            TlsAlertReceivedPayload {
                alert_id: Some(42),
                alert_message: Some("bad certificate".into()),
            },
        )));
        assert!(m.contains("TLS alert \"bad certificate\""), "{m}");
        let host_msg = "certificate fingerprint mismatch: expected AA:BB, got CC:DD";
        let m = upstream(transport(ErrorCode::InternalError(Some(host_msg.into()))));
        assert!(
            m.contains(host_msg) && m.contains("PVE_TLS_FINGERPRINT"),
            "{m}"
        );
        let m = upstream(transport(ErrorCode::InternalError(Some(
            "worker crashed".into(),
        ))));
        assert!(
            m.starts_with("The pve-mcp host failed") && m.contains("worker crashed"),
            "{m}"
        );
    }

    #[test]
    fn request_side_codes_are_internal_bugs() {
        assert!(matches!(
            transport(ErrorCode::HttpRequestUriInvalid),
            ToolError::Internal(_)
        ));
        assert!(matches!(
            transport(ErrorCode::HttpResponseIncomplete),
            ToolError::Upstream(_)
        ));
    }

    #[test]
    fn body_failures() {
        let m = upstream(body_read_error(REQ, "ConnectionReadTimeout"));
        assert!(m.contains("stopped sending the response in time"), "{m}");
        let m = upstream(body_read_error(REQ, "connection reset"));
        assert!(m.starts_with("Reading Proxmox's response"), "{m}");
        let m = upstream(bad_body(
            REQ,
            200,
            "the body is not JSON",
            b"<!DOCTYPE html>",
        ));
        assert!(
            m.contains("<!DOCTYPE html>") && m.contains("https://host:8006"),
            "{m}"
        );
    }
}
