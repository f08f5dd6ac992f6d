//! pve-mcp: an MCP server for Proxmox VE whose tool logic runs in a
//! sandboxed WebAssembly component.
//!
//! The modules are layers, listed here bottom to top; a module imports only
//! from its own layer's shared types and the layers below it, never above
//! (`tests/layers.rs` fails the build when one does). `docs/architecture.md`
//! walks through them.
//!
//! A tool call goes down the stack: a transport ([`transport`]) hands it to
//! the MCP handler ([`server`]), which asks the policy ([`policy`], with
//! [`approval`] when a person must agree), runs the component in a fresh
//! sandboxed instance ([`sandbox`]) whose HTTP requests leave only through
//! the egress gate ([`egress`]) and the HTTPS client ([`upstream`]), and
//! records the call ([`audit`]).

// 1. Small shared types: no imports from the crate above this line.
pub mod caller;
pub mod canonical;
pub mod endpoint;
pub mod error;
pub mod logging;
pub mod metrics;
pub mod route;
pub mod secret;
pub mod state;
pub mod tier;
pub mod tools;
// 2. TLS for both directions.
pub mod tls;
// 3. Configuration, one file per section, parsed into typed values.
pub mod config;
// 4. The HTTPS client to Proxmox.
pub mod exposure;
pub mod upstream;
// 5. The egress gate: what a component's request may reach.
pub mod egress;
// 6. The sandbox: engine, compile cache, one instance per call.
pub mod sandbox;
// 7. Policy: rules, conditions, rate limits, decisions.
pub mod policy;
// 8. What happens around an allowed call: approvals and the audit log.
pub mod approval;
pub mod audit;
// Traces of each call, around it like the audit log.
pub mod telemetry;
// 9. The server: the app, the MCP handler and what it reports to clients.
pub mod server;
// 10. Transports: stdio and Streamable HTTP.
pub mod transport;
// 11. The command line, one file per command.
pub mod commands;
