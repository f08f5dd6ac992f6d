//! pve-mcp: an MCP server for Proxmox VE whose tool logic runs in a
//! sandboxed WebAssembly component.
//!
//! The host ([`app::App`]) compiles the component once, runs every tool call
//! in a fresh instance ([`sandbox`]), and lets its HTTP requests out only
//! through the egress gate ([`egress`]), which adds the Proxmox credentials
//! after checking them. [`mcp`] speaks MCP over stdio, [`http`] over
//! Streamable HTTP for many clients; [`demo`] runs the same server against
//! the embedded simulated cluster.

pub mod app;
pub mod approval;
pub mod audit;
pub mod caller;
pub mod canonical;
pub mod cli;
pub mod client_log;
pub mod component;
pub mod config;
pub mod demo;
pub mod egress;
pub mod endpoint;
pub mod guest_log;
pub mod http;
pub mod logging;
pub mod mcp;
pub mod policy;
pub mod progress;
pub mod sandbox;
pub mod secret;
pub mod serving;
pub mod state;
pub mod tls;
pub mod tools;
pub mod upstream;

/// The tool component built from `guest/` and embedded at build time.
pub static GUEST_WASM: &[u8] = include_bytes!(env!("PVE_MCP_GUEST_WASM_PATH"));
