//! `pve_check_permissions` checks each credential: with a token per tier
//! (or per agent), what one token may do says nothing about the others, so
//! after the call ran with its own credential (the read one: it is a read
//! tool) the host runs it again once per other distinct credential of the
//! caller's set on that cluster, and adds each answer to the first as one
//! entry of `credentials`: the tiers it serves, its token id (never the
//! secret), its summary and its whole answer. Each run is a read, held by
//! the egress gate to `GET`, and its requests are in the call's record.

use serde_json::{Value, json};

use crate::egress::{Access, Binding};
use crate::sandbox::{CallReport, CallRequest, Sandbox};
use crate::tools::{CallOutcome, ToolInfo};

/// The tool that is run once per credential.
pub const CHECK_PERMISSIONS: &str = "pve_check_permissions";

/// One call of [`CHECK_PERMISSIONS`] that ran: what it was run with.
pub struct Ran<'a> {
    /// The tool.
    pub tool: &'a ToolInfo,
    /// Its arguments, as the guest got them.
    pub arguments: &'a str,
    /// Its call id.
    pub id: &'a str,
    /// Its binding, its own credential in it.
    pub binding: Binding,
    /// Its caller's credential set, if its bearer token names one.
    pub set: Option<&'a str>,
}

/// The report of a [`CHECK_PERMISSIONS`] call with an entry per
/// credential; other reports (or a cluster with one credential, or a call
/// that failed) are returned as they are.
pub async fn check_each_credential(
    sandbox: &Sandbox,
    ran: Ran<'_>,
    report: CallReport,
) -> CallReport {
    {
        let Some(cluster) = ran.binding.cluster else {
            return report;
        };
        let CallReport {
            outcome:
                CallOutcome::Output {
                    mut structured,
                    mut summary,
                    is_error: false,
                },
            mut egress,
        } = report
        else {
            return report;
        };
        let gate = sandbox.gate();
        let upstream = &gate.endpoint(cluster).upstream;
        let credentials = upstream.tiers_of(ran.set);
        if credentials.len() > 1 {
            let mut entries = Vec::with_capacity(credentials.len());
            for (credential, tiers) in &credentials {
                let tiers: Vec<&str> = tiers.iter().map(|t| t.as_str()).collect();
                let (answer, said) = if *credential == ran.binding.credential {
                    (structured.clone(), summary.clone())
                } else {
                    let id = format!("{}-{}", ran.id, tiers.join("-"));
                    let again = sandbox
                        .call(CallRequest {
                            tool: ran.tool,
                            arguments: ran.arguments,
                            request_id: &id,
                            access: Access::Read,
                            binding: Binding {
                                credential: *credential,
                                ..ran.binding.clone()
                            },
                            progress: None,
                            waits: false,
                            waiter: None,
                        })
                        .await;
                    egress.extend(again.egress);
                    match again.outcome {
                        CallOutcome::Output {
                            structured,
                            summary,
                            ..
                        } => (structured, summary),
                        CallOutcome::Failed { message, .. } => {
                            (json!({ "error": message }), message)
                        }
                        CallOutcome::UnknownTool(name) => (Value::Null, name),
                    }
                };
                entries.push(json!({
                    "tiers": tiers,
                    "token_id": upstream.identity(*credential),
                    "summary": said,
                    "answer": answer,
                }));
            }
            if let Some(object) = structured.as_object_mut() {
                object.insert("credentials".into(), Value::Array(entries));
            }
            summary.push_str(&format!(
                " (checked with each of this cluster's {} credentials: see credentials)",
                credentials.len()
            ));
        }
        CallReport {
            outcome: CallOutcome::Output {
                structured,
                summary,
                is_error: false,
            },
            egress,
        }
    }
}
