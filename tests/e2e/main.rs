//! End-to-end tests: the real `pve-mcp` binary, a real MCP client, real
//! HTTPS to the Proxmox simulator, and the official API schema checking
//! every request the guest makes.

mod actions;
mod actions_api_request;
mod actions_create;
mod actions_lifecycle;
mod approvals;
mod audit;
mod catalog_guests;
mod catalog_infra;
mod catalog_tasks;
mod catalog_vm_detail;
mod cli;
mod client_log;
mod clusters;
mod common;
mod compile_cache;
mod container;
mod egress_proxy;
mod errors;
mod fault_matrix;
mod foreign_hosts;
#[path = "../fuzz/gen.rs"]
mod fuzz_gen;
mod fuzz_http;
mod fuzz_stdio;
mod guest_agent_gate;
mod guest_progress;
mod hostile;
mod http;
mod http_limits;
mod http_ops;
mod interop;
mod list_vms;
mod node_clients;
mod policy_check;
mod policy_egress;
mod policy_harness;
mod policy_limits;
mod policy_reload;
mod policy_rules;
mod policy_tiers;
mod protocol;
mod real_shapes;
mod replicas;
mod secret_scan;
mod secrets;
mod soak_short;
mod tickets;
mod tls;
mod tool_docs;
mod tools_list;
mod toolsets;
mod vm_status;
mod wait_slots;
mod whole_request;
