//! Stateless Streamable HTTP JSON-RPC at `/mcp`: one POST, one JSON
//! message, one JSON answer.
//!
//! - `initialize`: the client's revision when it is one with a handshake
//!   that pve-mcp knows, else 2025-11-25 (what rmcp, and so
//!   `pve-mcp serve`, answers);
//! - `server/discover` (2026-07-28): the revisions and capabilities; a
//!   request whose `_meta` names 2026-07-28 must carry the client's
//!   capabilities there, and one naming an unknown revision gets `-32022`;
//! - `tools/list`: the tools the configuration offers (see
//!   [`crate::config`]), as `pve-mcp serve` lists them;
//! - `tools/call`: `call-tool` with a `call-context` built from the
//!   configuration; a tool's failure is a result with `isError: true`, an
//!   unknown tool a protocol error;
//! - `ping` (before 2026-07-28); notifications and responses get `202`.
//!
//! No sessions are issued and nothing is streamed: `GET` and `DELETE` get
//! `405`, as the transport allows a server without SSE.

use serde_json::{Map, Value, json};

use crate::config::Config;
use crate::wit;

/// The revisions served, oldest first (rmcp's `KNOWN_VERSIONS`).
pub const SUPPORTED: [&str; 4] = ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];
/// The first revision without `initialize`.
pub const STATELESS: &str = "2026-07-28";
/// The newest revision with an `initialize` handshake: the answer to one
/// that names a revision it does not know.
pub const LATEST_WITH_INITIALIZE: &str = "2025-11-25";
/// How often a read whose connection was lost is tried in all.
pub const MAX_TRIES: u64 = 10;
/// The largest request body read.
pub const MAX_BODY: usize = 4 << 20;

const INSTRUCTIONS: &str = "Proxmox VE through pve-mcp's tool component. Start with pve_list_vms \
or pve_get_cluster_status; node and vm_type are looked up from a vmid. Lists page with \
next_offset. After a 403, pve_check_permissions names the missing privilege. Errors say what to \
try next.";

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const UNSUPPORTED_VERSION: i64 = -32022;

/// The tool component (or a fake of it in tests).
pub trait Tools {
    /// `list-tools`.
    fn list(&self) -> Vec<wit::ToolDescriptor>;
    /// `call-tool`.
    fn call(
        &self,
        ctx: &wit::CallContext,
        name: &str,
        arguments: &str,
    ) -> Result<wit::ToolOutput, wit::ToolError>;
}

/// What the handler needs of an HTTP request.
pub struct HttpRequest<'a> {
    /// `POST`, `GET`, ...
    pub method: &'a str,
    /// The path, without the query.
    pub path: &'a str,
    /// Header names (any case) and values.
    pub headers: &'a [(String, String)],
    /// The body (read for `POST` only).
    pub body: &'a [u8],
}

impl HttpRequest<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Headers to send.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpResponse {
    fn text(status: u16, text: &str) -> HttpResponse {
        HttpResponse {
            status,
            headers: vec![("content-type", "text/plain; charset=utf-8".into())],
            body: format!("{text}\n").into_bytes(),
        }
    }

    fn json(status: u16, value: &Value) -> HttpResponse {
        HttpResponse {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: value.to_string().into_bytes(),
        }
    }

    /// The body as text (tests).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A JSON-RPC error.
#[derive(Debug)]
struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn to_json(&self, id: &Value) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        json!({"jsonrpc": "2.0", "id": id, "error": error})
    }
}

/// Answers one HTTP request.
pub fn handle(request: &HttpRequest, config: &Config, tools: &dyn Tools) -> HttpResponse {
    if request.path != "/mcp" {
        return HttpResponse::text(404, "not found: MCP is served at /mcp");
    }
    if let Some(refused) = refused_host(request, config) {
        return refused;
    }
    if let Some(token) = &config.token {
        let given = request
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !same(given.trim().as_bytes(), token.as_bytes()) {
            let mut answer = HttpResponse::text(401, "a bearer token is required");
            answer
                .headers
                .push(("www-authenticate", "Bearer".to_owned()));
            return answer;
        }
    }
    match request.method {
        "POST" => post(request, config, tools),
        _ => {
            // No SSE stream to open and no session to end: the transport
            // lets a server answer 405 to both.
            let mut answer = HttpResponse::text(405, "only POST: this server is stateless");
            answer.headers.push(("allow", "POST".to_owned()));
            answer
        }
    }
}

/// Compares in time that does not depend on where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `403` when `Host` or `Origin` names a host that is not allowed (DNS
/// rebinding: a web page's script reaching a local server by a name).
fn refused_host(request: &HttpRequest, config: &Config) -> Option<HttpResponse> {
    let allowed = |host: &str| {
        config
            .allowed_hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(host))
    };
    if let Some(host) = request.header("host")
        && !allowed(host_of(host))
    {
        return Some(HttpResponse::text(403, "Host not allowed"));
    }
    if let Some(origin) = request.header("origin") {
        let rest = origin.split_once("://").map_or(origin, |(_, r)| r);
        if !allowed(host_of(rest)) {
            return Some(HttpResponse::text(403, "Origin not allowed"));
        }
    }
    None
}

/// `host` of `host[:port][/...]`, brackets kept for IPv6.
fn host_of(authority: &str) -> &str {
    let authority = authority.split('/').next().unwrap_or(authority);
    if authority.starts_with('[') {
        authority
            .find(']')
            .map_or(authority, |end| &authority[..=end])
    } else {
        authority.split(':').next().unwrap_or(authority)
    }
}

fn post(request: &HttpRequest, config: &Config, tools: &dyn Tools) -> HttpResponse {
    if let Some(version) = request.header("mcp-protocol-version")
        && !SUPPORTED.contains(&version.trim())
    {
        return HttpResponse::json(
            400,
            &RpcError::new(
                -32600,
                format!(
                    "Bad Request: unsupported MCP-Protocol-Version {version:?}; supported: {}",
                    SUPPORTED.join(", ")
                ),
            )
            .to_json(&Value::Null),
        );
    }
    if request.body.len() > MAX_BODY {
        return HttpResponse::text(413, "the request body is too large");
    }
    let message: Value = match serde_json::from_slice(request.body) {
        Ok(m) => m,
        Err(e) => {
            return HttpResponse::json(
                400,
                &RpcError::new(-32700, format!("Parse error: {e}")).to_json(&Value::Null),
            );
        }
    };
    let Value::Object(message) = message else {
        return HttpResponse::json(
            400,
            &RpcError::new(
                -32600,
                "Invalid Request: send one JSON-RPC message, not a batch",
            )
            .to_json(&Value::Null),
        );
    };
    let (Some(method), Some(id)) = (
        message.get("method").and_then(Value::as_str),
        message.get("id"),
    ) else {
        // A notification, or a response to a request this server never
        // sends: accepted, nothing to answer.
        return HttpResponse {
            status: 202,
            headers: Vec::new(),
            body: Vec::new(),
        };
    };
    let params = message.get("params").cloned().unwrap_or(json!({}));
    let answer = match dispatch(method, &params, config, tools) {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => error.to_json(id),
    };
    HttpResponse::json(200, &answer)
}

fn dispatch(
    method: &str,
    params: &Value,
    config: &Config,
    tools: &dyn Tools,
) -> Result<Value, RpcError> {
    let meta = params.get("_meta");
    let requested = meta
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str);
    if method != "initialize"
        && let Some(version) = requested
        && !SUPPORTED.contains(&version)
    {
        let mut error = RpcError::new(UNSUPPORTED_VERSION, "Unsupported protocol version");
        error.data = Some(json!({"requested": version, "supported": SUPPORTED}));
        return Err(error);
    }
    // The inline lifecycle of 2026-07-28: every request carries who asks.
    let stateless = method != "initialize"
        && (method == "server/discover" || requested.is_some_and(|v| v >= STATELESS));
    if stateless {
        let missing: Vec<&str> = [META_VERSION, META_CAPABILITIES]
            .into_iter()
            .filter(|k| meta.and_then(|m| m.get(*k)).is_none())
            .collect();
        if !missing.is_empty() {
            return Err(RpcError::new(
                -32602,
                format!(
                    "request _meta is missing or has malformed required fields: {}",
                    missing.join(", ")
                ),
            ));
        }
    }
    let mut result = match method {
        "initialize" => initialize(params),
        "server/discover" => discover(),
        "ping" if !stateless => json!({}),
        "tools/list" => json!({"tools": listed(config, &tools.list())}),
        "tools/call" => call(params, config, tools)?,
        _ => {
            return Err(RpcError::new(-32601, format!("Method not found: {method}")));
        }
    };
    if stateless && let Value::Object(object) = &mut result {
        object
            .entry("resultType")
            .or_insert_with(|| json!("complete"));
        if method == "tools/list" {
            // A list is cacheable from 2026-07-28 on; say it is not, as
            // `pve-mcp serve` does (a policy reload changes it there).
            object.insert("ttlMs".into(), json!(0));
            object.insert("cacheScope".into(), json!("private"));
        }
    }
    Ok(result)
}

fn server_info() -> Value {
    json!({
        "name": "pve-mcp",
        "version": env!("CARGO_PKG_VERSION"),
        "title": "Proxmox VE (wasi:http component)",
    })
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

fn initialize(params: &Value) -> Value {
    let asked = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = if SUPPORTED.contains(&asked) && asked < STATELESS {
        asked
    } else {
        LATEST_WITH_INITIALIZE
    };
    json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}

fn discover() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": SUPPORTED,
        "capabilities": capabilities(),
        "instructions": INSTRUCTIONS,
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
    })
}

/// A tool that can only read: it declares no routes and no destructive
/// hint (pve-mcp's `Tier::Read`), so the proxy lets it send only GETs.
fn reads_only(tool: &wit::ToolDescriptor) -> bool {
    tool.routes.is_empty() && !tool.annotations.destructive
}

/// Whether the configuration offers `tool`.
fn offered(config: &Config, tool: &wit::ToolDescriptor) -> bool {
    config.offers_toolset(&tool.toolset) && (config.writes || reads_only(tool))
}

/// The tools offered, in MCP's form.
pub fn listed(config: &Config, tools: &[wit::ToolDescriptor]) -> Vec<Value> {
    tools
        .iter()
        .filter(|t| offered(config, t))
        .map(|t| to_mcp(t, config.endpoints.len()))
        .collect()
}

/// A tool as `pve-mcp serve` lists it: with one cluster, `cluster` is not
/// advertised; a read tool says only `readOnlyHint: true`. Of a tool that
/// writes, the component's own hints are passed on except that it is never
/// said not to be destructive: pve-mcp's host ranks that from the routes'
/// parameters, which this component does not judge.
fn to_mcp(tool: &wit::ToolDescriptor, clusters: usize) -> Value {
    let mut schema: Value =
        serde_json::from_str(&tool.input_schema).unwrap_or_else(|_| json!({"type": "object"}));
    if clusters <= 1 {
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            properties.remove("cluster");
        }
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            required.retain(|r| r != "cluster");
        }
    }
    let claimed = &tool.annotations;
    let mut hints = Map::new();
    if reads_only(tool) {
        hints.insert("readOnlyHint".into(), json!(true));
    } else {
        if claimed.read_only {
            hints.insert("readOnlyHint".into(), json!(false));
        }
        if claimed.idempotent {
            hints.insert("idempotentHint".into(), json!(true));
        }
        if !claimed.open_world {
            hints.insert("openWorldHint".into(), json!(false));
        }
    }
    let mut out = json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": schema,
        "annotations": hints,
    });
    if let Some(output) = tool
        .output_schema
        .as_deref()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
    {
        out["outputSchema"] = output;
    }
    out
}

fn call(params: &Value, config: &Config, tools: &dyn Tools) -> Result<Value, RpcError> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::new(-32602, "tools/call needs a tool name"))?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::Object(o)) => Value::Object(o.clone()).to_string(),
        Some(_) => {
            return Err(RpcError::new(
                -32602,
                "tools/call arguments must be an object",
            ));
        }
    };
    let listed = tools.list();
    let Some(tool) = listed.iter().find(|t| t.name == name && offered(config, t)) else {
        return Err(RpcError::new(-32602, format!("Unknown tool: {name}")));
    };
    if let Some(problem) = &config.problem {
        return Ok(error_result(format!(
            "This server is not configured to reach Proxmox: {problem}."
        )));
    }
    let ctx = wit::CallContext {
        endpoints: config
            .endpoints
            .iter()
            .map(|(name, base_url)| wit::Endpoint {
                name: name.clone(),
                base_url: base_url.clone(),
            })
            .collect(),
        request_id: request_id(params),
        wait_limit_secs: config.wait_limit_secs,
    };
    // The proxy's token is in the base URL the tool may name; the agent
    // gets it as `***`.
    let clean = |text: String| match config.proxy_token() {
        Some(token) => text.replace(token, "***"),
        None => text,
    };
    // Under the stock CLI's own outgoing HTTP (`-S http`), a request without
    // a body now and then fails as "connection reset" before it is out: the
    // tool component's HTTP client (wstd 0.6.8) still checks the stream of
    // the empty body, which wasmtime may already have closed (hyper sends a
    // GET's head alone), and then drops the request. A tool that only reads
    // changed nothing, so it is run again, a few times at most; a tool that
    // writes is not.
    let mut outcome = tools.call(&ctx, name, &arguments);
    let mut tries = 1;
    while tries < MAX_TRIES && reads_only(tool) && connection_lost(&outcome) {
        std::thread::sleep(std::time::Duration::from_millis(10 * tries));
        outcome = tools.call(&ctx, name, &arguments);
        tries += 1;
    }
    Ok(match outcome {
        Ok(out) if !out.is_error => {
            let structured: Value =
                serde_json::from_str(&clean(out.structured)).unwrap_or_else(|_| json!({}));
            let summary = clean(out.summary);
            json!({
                "content": [
                    {"type": "text", "text": summary},
                    {"type": "text", "text": structured.to_string()},
                ],
                "structuredContent": structured,
                "isError": false,
            })
        }
        Ok(out) => error_result(clean(out.summary)),
        Err(wit::ToolError::UnknownTool(name)) => {
            return Err(RpcError::new(-32602, format!("Unknown tool: {name}")));
        }
        Err(wit::ToolError::InvalidArguments(m)) => {
            error_result(format!("Invalid arguments: {}", clean(m)))
        }
        Err(
            wit::ToolError::Upstream(m)
            | wit::ToolError::Precondition(m)
            | wit::ToolError::Internal(m),
        ) => error_result(clean(m)),
    })
}

/// Whether a call failed because a connection to the proxy was lost
/// before its request was out.
fn connection_lost(outcome: &Result<wit::ToolOutput, wit::ToolError>) -> bool {
    let text = match outcome {
        Err(wit::ToolError::Upstream(m)) => m,
        Ok(out) if out.is_error => &out.summary,
        _ => return false,
    };
    text.contains("(\"connection reset\")")
}

/// A tool's failure: a result the agent reads and adapts to.
fn error_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// An id for the proxy's log: the progress token or a random one.
fn request_id(params: &Value) -> String {
    let mut bytes = [0u8; 8];
    fill_random(&mut bytes);
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    match params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .and_then(|t| {
            t.as_str()
                .map(str::to_owned)
                .or_else(|| Some(t.to_string()))
        }) {
        Some(token) if token.len() <= 64 && token != "null" => format!("http-{id}-{token}"),
        _ => format!("http-{id}"),
    }
}

fn fill_random(bytes: &mut [u8]) {
    #[cfg(target_arch = "wasm32")]
    {
        let random = wasip2::random::random::get_random_bytes(bytes.len() as u64);
        bytes.copy_from_slice(&random[..bytes.len()]);
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (nanos >> (i * 8)) as u8;
        }
    }
}

#[cfg(test)]
mod tests;
