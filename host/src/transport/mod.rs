//! How MCP reaches the server: [`stdio`] for one local client and [`http`]
//! (Streamable HTTP) for many.

pub mod egress_proxy;
pub mod http;
pub mod stdio;
