//! The egress gate: the one place a guest's HTTP request can leave the
//! sandbox. Every request is checked against the one cluster its call was
//! bound to and the call's access, and the credentials are added only after
//! the check.
//!
//! - [`gate`]: the decision (`Gate::check`), which nothing else makes;
//! - [`binding`]: a call bound once to its cluster and write routes;
//! - [`credential`]: the Proxmox credential a call carries (its granted
//!   tier's, from its caller's credential set);
//! - [`admission`]: the one admission of a request, which the in-process
//!   hook and `pve-mcp egress-proxy` both call;
//! - [`sent`]: a write's parameters, read strictly from query and body;
//! - [`plan`]: the writes an approved call may send, held in order;
//! - [`history`]: what a call sent and was answered, for once-only routes
//!   and answered values;
//! - [`answer`]: what the gate keeps of an answer (a write's answered
//!   values, a guarded read's summary);
//! - [`record`]: each request's record and the call's budget;
//! - [`hook`]: the wasi:http hook in the sandbox;
//! - [`forward`]: the request sent upstream and the answer mapped back.

pub mod access;
pub mod admission;
pub mod answer;
pub mod binding;
pub mod credential;
pub mod forward;
pub mod gate;
pub mod guest_file;
pub mod history;
pub mod hook;
pub mod plan;
pub mod record;
pub mod sent;

pub use access::Access;
pub use admission::{MAX_REQUEST_BODY, admit_body, admit_head, admit_params};
pub use binding::{Binding, CLUSTER_ARG};
pub use credential::credential_tier;
pub use forward::{REASON_HEADER, reason_header};
pub use gate::{ClusterIndex, Denial, Gate, GateEndpoint};
pub use hook::{CallCaps, CallHooks};
pub use record::{CallBudget, EgressLog, EgressRecord, MAX_RECORDED_LEN, MAX_REFUSALS, TRUNCATED};
