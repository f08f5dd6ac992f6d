//! A call bound once to what it may reach: the cluster its `cluster`
//! argument names and its tool's write routes bound to its arguments. The
//! policy, the approval plan's dry run and the run itself all use the one
//! binding made when the call was authorized.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::gate::{ClusterIndex, Gate};
use super::history::CallHistory;
use super::plan::ApprovedPlan;
use crate::route::{BoundRoute, Route};
use crate::tools::JsonObject;
use crate::upstream::CredentialId;

/// The argument every tool of the component takes to name the cluster it
/// talks to (see `call-context` in the WIT); the call is bound to it.
pub const CLUSTER_ARG: &str = "cluster";

/// Where one call may go.
#[derive(Debug, Clone, Default)]
pub struct Binding {
    /// The one cluster the gate lets the call reach; `None` reaches none
    /// (its `cluster` argument names no configured cluster).
    pub cluster: Option<ClusterIndex>,
    /// The writes the gate lets the call send (when its access is write):
    /// its tool's routes bound to its arguments. A call's own request
    /// (`pve_api_request`) binds its reads too.
    pub writes: Vec<BoundRoute>,
    /// For a call a person approved: the writes of the plan they saw,
    /// which it must send exactly, in order.
    pub plan: Option<Arc<ApprovedPlan>>,
    /// The fields of its writes' answers that later requests may carry
    /// (`pid`): the gate keeps them from each answer.
    pub answer_fields: Vec<String>,
    /// What the call has sent and been answered so far.
    pub history: Arc<CallHistory>,
    /// The credential of its cluster every request carries: its granted
    /// tier's, from its caller's credential set (see
    /// [`Gate::credential`]). Bound as the cluster's own read credential,
    /// the least it holds, until the call's tier is known.
    pub credential: CredentialId,
}

impl Gate {
    /// Binds a call of a tool with these `routes` to its `arguments`: the
    /// cluster they name (see [`Gate::resolve`]) and the routes bound to
    /// them. Bound whatever the call's access: read access lets no write
    /// out anyway.
    pub fn bind(&self, routes: &[Route], arguments: &JsonObject) -> Binding {
        let mut answer_fields: Vec<String> = Vec::new();
        for field in routes.iter().flat_map(|r| r.params().answered_fields()) {
            if !answer_fields.iter().any(|f| f == field) {
                answer_fields.push(field.to_owned());
            }
        }
        Binding {
            cluster: self.resolve(arguments.get(CLUSTER_ARG)),
            writes: routes.iter().map(|r| r.bind(arguments)).collect(),
            plan: None,
            answer_fields,
            history: Arc::default(),
            credential: CredentialId::default(),
        }
    }

    /// The arguments as the policy sees them: `cluster` is the configured
    /// name of the cluster the call is bound to, filled in when it was left
    /// out and spelt as configured, so a condition on `cluster` judges the
    /// cluster the call can actually reach.
    pub fn as_bound<'a>(
        &self,
        binding: &Binding,
        arguments: &'a JsonObject,
    ) -> Cow<'a, JsonObject> {
        let Some(cluster) = binding.cluster else {
            return Cow::Borrowed(arguments);
        };
        let name = self.cluster_name(cluster);
        match arguments.get(CLUSTER_ARG) {
            Some(Value::String(given)) if given == name => Cow::Borrowed(arguments),
            _ => {
                let mut bound = arguments.clone();
                bound.insert(CLUSTER_ARG.into(), Value::String(name.into()));
                Cow::Owned(bound)
            }
        }
    }
}
