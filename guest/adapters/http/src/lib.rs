//! pve-mcp's tools as an MCP server under any `wasi:http` host: a
//! `wasm32-wasip2` component that exports `wasi:http/incoming-handler` and
//! imports `pve-mcp:guest/tools@0.5.0`. Composed with the tool component
//! built without the `progress` import (`dist/pve_tools_wasi_only.wasm`),
//! it is `dist/pve_mcp_http.wasm`, which `wasmtime serve -S cli -S http`
//! (or Spin, wasmCloud, ...) serves at `/mcp`.
//!
//! It speaks stateless Streamable HTTP: every request is a JSON-RPC message
//! in a POST to `/mcp`, answered with one JSON body (no sessions, no SSE),
//! which is what a host that makes a fresh instance per request can keep.
//! `initialize` negotiates the revision as pve-mcp's own server does (the
//! client's when it has a handshake and is known, else 2025-11-25), and
//! 2026-07-28 clients get `server/discover` and per-request `_meta`.
//!
//! The component reaches Proxmox only through `pve-mcp egress-proxy`,
//! whose URL (with the proxy's own path token, never the Proxmox token)
//! comes from the environment the host grants: see [`config`]. What the
//! deployment does not have compared with `pve-mcp serve` (policy,
//! approvals, audit outside the proxy, ...) is in `docs/hosting.md`.
//!
//! The JSON-RPC logic ([`mcp`]) is plain Rust over a [`mcp::Tools`] trait,
//! unit-tested natively with fakes; the export glue is compiled for
//! `wasm32` only.

#![warn(missing_docs)]

pub mod config;
pub mod mcp;

/// The bindings of the one import: the tool component's `tools`.
#[allow(missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit",
        inline: "package pve-mcp:http-adapter;
            world http-adapter {
                import pve-mcp:guest/tools@0.5.0;
            }",
        world: "pve-mcp:http-adapter/http-adapter",
        generate_all,
    });
}

pub use bindings::pve_mcp::guest::tools as wit;

/// The imported tool component, as [`mcp::Tools`].
pub struct Imported;

impl mcp::Tools for Imported {
    fn list(&self) -> Vec<wit::ToolDescriptor> {
        wit::list_tools()
    }

    fn call(
        &self,
        ctx: &wit::CallContext,
        name: &str,
        arguments: &str,
    ) -> Result<wit::ToolOutput, wit::ToolError> {
        wit::call_tool(ctx, name, arguments)
    }
}

/// The exported `wasi:http/incoming-handler`, through wstd.
#[cfg(target_arch = "wasm32")]
#[allow(dead_code)] // the macro's stand-in `main`, never called
mod server {
    use wstd::http::{Body, Error, Request, Response};

    #[wstd::http_server]
    async fn main(request: Request<Body>) -> Result<Response<Body>, Error> {
        let (parts, mut body) = request.into_parts();
        let headers: Vec<(String, String)> = parts
            .headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let bytes = if parts.method == wstd::http::Method::POST {
            body.contents().await?.to_vec()
        } else {
            Vec::new()
        };
        let config = crate::config::Config::from_vars(std::env::vars());
        let answer = crate::mcp::handle(
            &crate::mcp::HttpRequest {
                method: parts.method.as_str(),
                path: parts.uri.path(),
                headers: &headers,
                body: &bytes,
            },
            &config,
            &crate::Imported,
        );
        let mut response = Response::builder().status(answer.status);
        for (name, value) in &answer.headers {
            response = response.header(*name, value.as_str());
        }
        Ok(response.body(Body::from(answer.body))?)
    }
}
