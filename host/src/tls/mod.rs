//! TLS in both directions: [`client`] to Proxmox (CA file, system roots or
//! a pinned certificate fingerprint) and [`server`] for the Streamable HTTP
//! listener.

pub mod client;
pub mod server;
