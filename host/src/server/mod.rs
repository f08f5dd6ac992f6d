//! The MCP server, independent of its transport: the [`app::App`] that
//! authorizes and runs tool calls, the rmcp handler ([`mcp`]), what it sends
//! back while a call runs ([`progress`], [`client_log`]), the discovery pair
//! ([`discover`]), `pve_check_permissions` run once per credential
//! ([`each_credential`]), resources, completions and prompts over the read
//! tools ([`resources`], [`completions`], [`prompts`], through [`reads`]),
//! and [`serving`],
//! which assembles them for `pve-mcp serve`.

pub mod app;
pub mod call_slots;
pub mod client_log;
pub mod completions;
pub mod discover;
pub mod each_credential;
pub mod mcp;
pub mod progress;
pub mod prompts;
pub mod reads;
pub mod resources;
pub mod serving;
pub mod tasks;
