//! Human approval of tool calls (the policy action `require_approval`).
//!
//! A call that needs approval runs only once a person has said yes:
//!
//! - **At the client**, when the rule's approver is `"client"` and the client
//!   declared the `elicitation` capability: the host asks with a one-field
//!   form ([`elicit`]) naming the tool and its redacted arguments, and runs
//!   the call if the person approves. Only as trustworthy as the client: an
//!   agent that answers its own forms approves itself, so destructive tools
//!   default to the operator.
//! - **By the operator** (pending-then-retry) otherwise: the call returns a tool error with an
//!   approval id; a person runs `pve-mcp approvals approve ID`, which
//!   talks to the server's loopback admin endpoint ([`client`]; the
//!   transport layer serves it over the [`store`]); the agent retries, and
//!   the identical call runs exactly once.
//!
//! A client on MCP 2026-07-28 that declared elicitation, under a rule whose
//! approver is the client, is asked inside the call instead
//! ([`round_trip`]): the call answers with an `InputRequiredResult` holding
//! the same form and a sealed `requestState`, and the client's retry with
//! the person's answer runs once.
//!
//! An approval is bound to the tool, the canonical hash of its arguments
//! and the caller ([`binding`]), and expires (`[approvals] ttl_secs`).
//! Approvals live in memory, or in Redis so that replicas share them
//! ([`store`], [`redis_store`]).

pub mod client;
pub mod elicit;
pub mod plan;
pub mod redact;
pub mod redis_store;
pub mod round_trip;
pub mod serve;
pub mod store;

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{InputRequiredResult, InputResponses};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};

use crate::caller::Caller;
use crate::canonical::arguments_hash;
use crate::policy::{Approver, Grant};
use crate::secret::Redactor;
use crate::tools::JsonObject;
use store::{ApprovalStore, Check, Millis, Request, now_ms};

/// Longest plan an approval form shows before folding it, in characters.
const FORM_PLAN: usize = 1000;

/// Whether a call that needs approval may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorization {
    /// A person approved exactly this call; run it. Says who: the person
    /// at the client, or the operator.
    Run(Approver),
    /// Do not run it; return this text as a tool error (`isError`), so the
    /// agent reads why and what to do.
    Refused(String),
    /// Not yet: an approval is pending and the agent is to retry once a
    /// person decides. Returned as a tool error like [`Authorization::Refused`],
    /// but the call keeps its rate-limit units: each pending call counts, so
    /// an agent cannot open approvals (or poll them) past its `rate_limit`.
    Pending(String),
}

/// The approval step of one MCP call, as the server acts on it.
#[derive(Debug)]
pub enum Step {
    /// Approved by this approver: run it with this grant.
    Approved(Grant, Approver),
    /// Not run; return this as a tool error. Its units were given back,
    /// unless it was left pending (see [`Authorization::Pending`]).
    Refused(String),
    /// The client cancelled the call while it waited (units given back).
    Cancelled,
    /// Not yet: ask the person at the client with this form and let the
    /// client retry (MCP 2026-07-28). Its units were given back: the retry
    /// is the call that counts.
    InputRequired(InputRequiredResult),
}

/// What a 2026-07-28 client's retry of a call brings back: the sealed
/// `requestState` and its `inputResponses` (the person's answer).
#[derive(Debug, Clone)]
pub struct Retry {
    /// The `requestState` echoed back.
    pub state: String,
    /// The `inputResponses`, if any.
    pub responses: Option<InputResponses>,
}

/// Whom an approval belongs to: `token:NAME` when the caller authenticated
/// with a named bearer token, otherwise `session:ID` (`session:stdio` for
/// the one client of a stdio server).
///
/// The token, when there is one, because it is the identity a person
/// approves for: it is the same on every replica and survives the agent
/// reconnecting (a new MCP session) between the call and its retry, which
/// HTTP clients do routinely and which MCP 2026-07-28 makes universal by
/// dropping sessions. Without a token the session is the only identity
/// there is, and binding to it keeps one unauthenticated client from using
/// another's approval.
///
/// The stdio session is called `stdio` in every process, so it is
/// qualified with this process's id: two stdio servers sharing a Redis
/// store must not use each other's approvals.
pub fn binding(caller: &Caller) -> String {
    match &caller.token {
        Some(token) => format!("token:{token}"),
        None if caller.session.as_ref() == crate::caller::STDIO_SESSION => {
            format!("session:{}@{}", caller.session, process_id())
        }
        None => format!("session:{}", caller.session),
    }
}

/// A random id for this process, the same for all its calls.
fn process_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| uuid::Uuid::new_v4().simple().to_string()[..12].to_string())
}

/// The approval flow, shared by every session of a server.
pub struct Approvals {
    store: Arc<dyn ApprovalStore>,
    ttl: Duration,
    redactor: Redactor,
    /// Whether a person can reach the admin endpoint to approve.
    admin: bool,
    /// Whether clients that can show a form are asked.
    elicitation: bool,
    /// Seals the `requestState` of 2026-07-28 approval round trips.
    seal: round_trip::StateSeal,
}

impl Approvals {
    /// Approvals in `store`, counting for `ttl`; argument previews are
    /// scrubbed of the `redactor`'s secrets.
    pub fn new(store: Arc<dyn ApprovalStore>, ttl: Duration, redactor: Redactor) -> Approvals {
        Approvals {
            store,
            ttl,
            redactor,
            admin: true,
            elicitation: true,
            seal: round_trip::StateSeal::random(),
        }
    }

    /// Seals 2026-07-28 approval round trips with this key instead of a
    /// random one of this process (replicas that share it accept each
    /// other's retries).
    pub fn with_state_seal(mut self, seal: round_trip::StateSeal) -> Approvals {
        self.seal = seal;
        self
    }

    /// Never asks the client, even one that declared elicitation: every
    /// approval goes through the admin endpoint (`[approvals] elicitation
    /// = false`).
    pub fn without_elicitation(mut self) -> Approvals {
        self.elicitation = false;
        self
    }

    /// Without an admin endpoint nobody can approve a pending call, so
    /// pending-then-retry refuses at once, saying so (asking the person at
    /// the client still works).
    pub fn without_admin(mut self) -> Approvals {
        self.admin = false;
        self
    }

    /// How many approvals wait for a person now, and how long the oldest
    /// has waited (for the metrics); `None` when the store cannot say.
    pub async fn pending(&self) -> Option<(usize, Duration)> {
        let now = now_ms();
        let listed = self.store.list(now).await.ok()?;
        let created = listed
            .iter()
            .filter(|a| a.state_at(now) == store::State::Pending)
            .map(|a| a.created_ms);
        let (count, oldest) = created.fold((0, now), |(n, oldest), c| (n + 1, oldest.min(c)));
        Some((count, Duration::from_millis(now.saturating_sub(oldest))))
    }

    /// The approval step of an MCP call the policy marked
    /// `require_approval`: [`Approvals::authorize`], asking the client only
    /// when the grant's approver is the client, cancellable by the
    /// client, giving the call's rate-limit units back when it is cancelled
    /// or refused (a person declined or denied it, the store is full or
    /// unavailable), and keeping them when it runs or is left pending.
    /// `plan` (for a tool that writes) is what a dry run of the call would
    /// send; the person is shown it.
    ///
    /// When the client is the approver and speaks MCP 2026-07-28 with form
    /// elicitation, it is asked inside the call ([`round_trip`]): a first
    /// call gets [`Step::InputRequired`], and its `retry` runs once if the
    /// person approved and the state is this call's, unexpired and unused.
    #[allow(clippy::too_many_arguments)]
    pub async fn gate(
        &self,
        context: &RequestContext<RoleServer>,
        caller: &Caller,
        tool: &str,
        arguments: &JsonObject,
        grant: Grant,
        plan: Option<String>,
        retry: Option<&Retry>,
    ) -> Step {
        // A retry is judged by its state whatever it declares now: the
        // state is what proves a person was asked.
        if grant.approver == Approver::Client
            && self.elicitation
            && (retry.is_some() || round_trip::speaks(context))
        {
            let who = binding(caller);
            let hash = approval_hash(arguments, plan.as_deref());
            let call = round_trip::Bound {
                tool,
                hash: &hash,
                caller: &who,
            };
            if let Some(retry) = retry {
                return self.redeem(call, grant, retry).await;
            }
            let result = self.ask_in_result(call, arguments, plan.as_deref());
            // The retry is the call that counts against rate limits.
            grant.permit.rollback().await;
            crate::metrics::tool_call(tool, crate::metrics::Outcome::ApprovalPending);
            return Step::InputRequired(result);
        }
        let client = (grant.approver == Approver::Client).then_some(&context.peer);
        let authorization = tokio::select! {
            a = self.authorize(client, caller, tool, arguments, plan.as_deref()) => a,
            _ = context.ct.cancelled() => {
                grant.permit.rollback().await;
                return Step::Cancelled;
            }
        };
        match authorization {
            Authorization::Run(by) => Step::Approved(grant, by),
            // Keeping the unit is what makes pending calls count against the
            // tool's rate limit (dropping the permit gives nothing back).
            Authorization::Pending(text) => {
                crate::metrics::tool_call(tool, crate::metrics::Outcome::ApprovalPending);
                Step::Refused(text)
            }
            Authorization::Refused(text) => {
                crate::metrics::tool_call(tool, crate::metrics::Outcome::ApprovalDenied);
                grant.permit.rollback().await;
                Step::Refused(text)
            }
        }
    }

    /// Decides whether this call may run: asks the person at the client
    /// (`client`, when given and it can show a form), otherwise consumes or
    /// requests an operator's approval. The operator's list shows the
    /// `plan` with the arguments.
    pub async fn authorize(
        &self,
        client: Option<&Peer<RoleServer>>,
        caller: &Caller,
        tool: &str,
        arguments: &JsonObject,
        plan: Option<&str>,
    ) -> Authorization {
        let who = binding(caller);
        if let Some(peer) = client.filter(|p| self.elicitation && elicit::supported(p)) {
            let question = self.question(tool, arguments, plan, &who);
            match elicit::ask(peer, question, self.ttl).await {
                elicit::Answer::Approved => {
                    tracing::info!(tool, caller = %who, outcome = "approved", approver = "client", "approval");
                    return Authorization::Run(Approver::Client);
                }
                elicit::Answer::NotApproved(refusal) => {
                    tracing::info!(tool, caller = %who, outcome = "not-approved", reason = %refusal.reason(), approver = "client", "approval");
                    return Authorization::Refused(format!(
                        "Not approved: {}; {tool} was not run. Do not retry the same call unless the person asks you to.",
                        refusal.reason()
                    ));
                }
                elicit::Answer::Unavailable(problem) => {
                    tracing::warn!(tool, caller = %who, %problem, "the client could not show the approval form; falling back to pending-then-retry");
                }
            }
        }
        // The operator's record carries the complete arguments and plan
        // (secrets redacted): `pve-mcp approvals show` prints them whole.
        let request = Request {
            caller: who,
            tool: tool.to_string(),
            arguments_hash: approval_hash(arguments, plan),
            arguments: redact::record_arguments(arguments, &self.redactor),
            plan: plan.map(|p| redact::record_plan(p, &self.redactor)),
        };
        self.pending_then_retry(&request, client.is_some()).await
    }

    /// The first round of a 2026-07-28 approval: the form, and a state
    /// sealed to this call, this caller and the ttl.
    fn ask_in_result(
        &self,
        call: round_trip::Bound<'_>,
        arguments: &JsonObject,
        plan: Option<&str>,
    ) -> InputRequiredResult {
        let (tool, who) = (call.tool, call.caller);
        let state = self.seal.seal(call, self.ttl, now_ms());
        tracing::info!(tool, caller = %who, outcome = "input-required", approver = "client", "approval");
        round_trip::input_required(self.question(tool, arguments, plan, who), state)
    }

    /// The retry of a 2026-07-28 approval: runs (once) if its state opens
    /// for exactly this call and caller before it expires, the person
    /// approved, and the store has not seen its nonce; otherwise refused,
    /// saying why, with its units given back.
    async fn redeem(&self, call: round_trip::Bound<'_>, grant: Grant, retry: &Retry) -> Step {
        let (tool, who) = (call.tool, call.caller);
        let opened = match self.seal.open(&retry.state, call) {
            Ok(opened) => opened,
            Err(problem) => {
                tracing::info!(tool, caller = %who, outcome = "refused", reason = problem.name(), approver = "client", "approval retry");
                return refuse_retry(tool, grant, problem.text(tool)).await;
            }
        };
        match round_trip::answer(retry.responses.as_ref()) {
            elicit::Answer::Approved => {}
            elicit::Answer::NotApproved(refusal) => {
                tracing::info!(tool, caller = %who, outcome = "not-approved", reason = %refusal.reason(), approver = "client", "approval");
                return refuse_retry(tool, grant, format!(
                    "Not approved: {}; {tool} was not run and nothing was sent. Do not retry the same call unless the person asks you to.",
                    refusal.reason()
                ))
                .await;
            }
            elicit::Answer::Unavailable(problem) => {
                tracing::info!(tool, caller = %who, outcome = "not-approved", reason = %problem, approver = "client", "approval");
                return refuse_retry(tool, grant, format!(
                    "Not approved: {problem}; {tool} was not run and nothing was sent. Retry with the person's answer to the form, or call {tool} again without requestState to be asked anew."
                ))
                .await;
            }
        }
        match self
            .store
            .use_once(&opened.nonce, opened.expires_ms, now_ms())
            .await
        {
            Ok(true) => {
                tracing::info!(tool, caller = %who, outcome = "approved", approver = "client", "approval");
                Step::Approved(grant, Approver::Client)
            }
            Ok(false) => {
                let problem = round_trip::Problem::Replayed;
                tracing::info!(tool, caller = %who, outcome = "refused", reason = problem.name(), approver = "client", "approval retry");
                refuse_retry(tool, grant, problem.text(tool)).await
            }
            Err(e) => {
                tracing::error!(tool, error = %e, "approval store unavailable; the approved retry is refused");
                refuse_retry(tool, grant, format!(
                    "Not approved: {tool} was approved, but {e}, so whether this approval was already used cannot be checked; it was not run and nothing was sent. Try again later."
                ))
                .await
            }
        }
    }

    /// The question of an approval form: the tool, its redacted arguments
    /// and plan, folded to fit a form, each fold saying how much it left
    /// out and that the whole call is what runs.
    fn question(
        &self,
        tool: &str,
        arguments: &JsonObject,
        plan: Option<&str>,
        who: &str,
    ) -> String {
        let preview = redact::preview(arguments, &self.redactor);
        // A guest command or file is named whole on its own line, whatever
        // the arguments' fold left out.
        let inside = redact::inside(arguments, &self.redactor);
        let will_send = match plan {
            Some(plan) => format!(
                "\nWill send (from a dry run; nothing is sent until you approve): {}",
                redact::fold(&self.redactor.redact(plan), FORM_PLAN, "")
            ),
            None => String::new(),
        };
        let folded = if preview.contains("…[folded: ") || will_send.contains("…[folded: ") {
            "\nSome long values are folded to fit this form (each fold says how much it left out); approving runs the call with its complete arguments."
        } else {
            ""
        };
        format!(
            "Approve a call to {tool}?\nArguments: {preview}{inside}{will_send}{folded}\nRequested by: {who}\nApproving runs this call once."
        )
    }

    /// The operator's step: consume a granted approval or report what to
    /// do. `client_asked`: whether the client could have been asked instead.
    async fn pending_then_retry(&self, request: &Request, client_asked: bool) -> Authorization {
        let tool = request.tool.as_str();
        if !self.admin {
            tracing::warn!(
                tool,
                "a call needs approval but the admin endpoint is off (no admin token)"
            );
            let why = if client_asked {
                "which this server can only ask for through an approval form in the client, and none was answered"
            } else {
                "which the policy leaves to an operator (approver = \"operator\") through `pve-mcp approvals`"
            };
            return Authorization::Refused(format!(
                "Not approved: {tool} needs a person's approval, {why}; this server has no approvals admin endpoint (no admin token is configured). Ask the operator to set PVE_MCP_ADMIN_TOKEN."
            ));
        }
        let now = now_ms();
        let check = match self
            .store
            .check_or_request(request, &store::new_id(), now)
            .await
        {
            Ok(check) => check,
            Err(e) => {
                tracing::error!(tool, error = %e, "approval store unavailable; the call is refused");
                return Authorization::Refused(format!(
                    "Not approved: {tool} needs a person's approval and {e}, so it was not run. Try again later."
                ));
            }
        };
        let caller = request.caller.as_str();
        match check {
            Check::Granted(approval) => {
                tracing::info!(approval = %approval.id, tool, caller, outcome = "granted", approver = "operator", "approval");
                Authorization::Run(Approver::Operator)
            }
            Check::Pending {
                approval,
                created,
                expired,
            } => {
                tracing::info!(approval = %approval.id, tool, caller, created, expired = expired.as_deref(), outcome = "pending", "approval");
                let id = &approval.id;
                let left = remaining(approval.expires_ms, now);
                let lead = match (&expired, created) {
                    (Some(old), _) => format!(
                        "Approval required: the earlier approval {old} expired unused. A new approval {id} is pending"
                    ),
                    (None, true) => format!(
                        "Approval required: a person must approve this call to {tool} before it runs. Approval {id} is pending"
                    ),
                    (None, false) => format!(
                        "Still waiting for a person to approve this call to {tool}. Approval {id} is pending"
                    ),
                };
                Authorization::Pending(format!(
                    "{lead} (expires in {left}). Ask a person to run `pve-mcp approvals approve {id}`, then retry exactly the same call: it runs once. A call with other arguments needs its own approval."
                ))
            }
            Check::Denied(approval) => {
                tracing::info!(approval = %approval.id, tool, caller, outcome = "denied", "approval");
                Authorization::Refused(format!(
                    "Not approved: a person denied this call to {tool} (approval {}). Do not retry it; identical calls are refused for the next {}.",
                    approval.id,
                    remaining(approval.expires_ms, now)
                ))
            }
            Check::Full => {
                tracing::warn!(
                    tool,
                    caller,
                    "too many approvals are open; the call is refused"
                );
                Authorization::Refused(format!(
                    "Not approved: {tool} needs a person's approval, and too many approvals are already open ({}). Ask a person to review them with `pve-mcp approvals list`.",
                    store::MAX_RECORDS
                ))
            }
            Check::CallerFull { open } => {
                tracing::warn!(
                    tool,
                    caller,
                    open,
                    "this caller has too many approvals pending; the call is refused"
                );
                Authorization::Refused(format!(
                    "Not approved: {tool} needs a person's approval, and {open} approvals requested by you ({caller}) are already waiting for a person, the most one caller may have open ([approvals] max_pending_per_caller). Nothing new was opened and {tool} was not run. Wait for a person to approve or deny the open ones and retry them, or ask them to deny the stale ones (`pve-mcp approvals list`, then `pve-mcp approvals deny ID`); they also expire on their own."
                ))
            }
        }
    }
}

/// A refused retry: counted as denied, its units given back.
async fn refuse_retry(tool: &str, grant: Grant, text: String) -> Step {
    crate::metrics::tool_call(tool, crate::metrics::Outcome::ApprovalDenied);
    grant.permit.rollback().await;
    Step::Refused(text)
}

/// What an approval is bound to beside its tool and caller: the canonical
/// arguments and, for a call that writes, the plan the person is shown. A
/// retry whose dry run plans anything else is a new call that needs its
/// own approval, so an approval never runs a plan nobody saw.
fn approval_hash(arguments: &JsonObject, plan: Option<&str>) -> String {
    let arguments = arguments_hash(arguments);
    match plan {
        None => arguments,
        Some(plan) => {
            use sha2::{Digest, Sha256};
            let digest = Sha256::new()
                .chain_update(arguments.as_bytes())
                .chain_update(b"\nplan: ")
                .chain_update(plan.as_bytes())
                .finalize();
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            format!("sha256:{hex}")
        }
    }
}

/// How long until `until`, for people: "14 min", "45 s".
pub fn remaining(until: Millis, now: Millis) -> String {
    // Rounded up, so a fresh 15-minute approval says 15, not 14.
    let secs = until.saturating_sub(now).div_ceil(1000);
    human_duration(Duration::from_secs(secs))
}

/// A duration rounded to the nearest unit people use for it.
pub fn human_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let round = |unit: u64| (secs + unit / 2) / unit;
    match secs {
        0..=119 => format!("{secs} s"),
        120..=7199 => format!("{} min", round(60)),
        7200..=172_799 => format!("{} h", round(3600)),
        _ => format!("{} d", round(86_400)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use store::{MemoryApprovals, StoreLimits, Verdict};

    fn approvals() -> (Approvals, Arc<MemoryApprovals>) {
        let store = Arc::new(MemoryApprovals::new(StoreLimits::with_ttl(
            Duration::from_secs(600),
        )));
        (
            Approvals::new(store.clone(), Duration::from_secs(600), Redactor::default()),
            store,
        )
    }

    /// Built from `stdio()` so that fields added to `Caller` need no change.
    fn caller_of(session: &str, token: Option<&str>) -> Caller {
        let mut caller = Caller::stdio();
        caller.session = Arc::from(session);
        caller.token = token.map(Arc::from);
        caller
    }

    fn refused(a: Authorization) -> String {
        match a {
            Authorization::Refused(text) | Authorization::Pending(text) => text,
            Authorization::Run(_) => panic!("expected a refusal"),
        }
    }

    fn approval_id(text: &str) -> String {
        let start = text.find("ap-").expect("an approval id");
        text[start..start + 19].to_string()
    }

    #[test]
    fn binding_prefers_the_token_over_the_session() {
        let stdio = binding(&Caller::stdio());
        assert!(stdio.starts_with("session:stdio@"), "{stdio}");
        assert_eq!(stdio.len(), "session:stdio@".len() + 12);
        assert_eq!(binding(&Caller::stdio()), stdio, "stable within a process");
        assert_eq!(binding(&caller_of("abc", Some("ci-bot"))), "token:ci-bot");
        assert_eq!(binding(&caller_of("abc", None)), "session:abc");
    }

    #[tokio::test]
    async fn pending_then_retry_runs_the_identical_call_once() {
        let (approvals, store) = approvals();
        let caller = Caller::stdio();
        let args = json!({"vmid": 100, "node": "pve1"})
            .as_object()
            .unwrap()
            .clone();
        let text = refused(
            approvals
                .authorize(None, &caller, "pve_get_vm_status", &args, None)
                .await,
        );
        assert!(text.contains("pve-mcp approvals approve ap-"), "{text}");
        let id = approval_id(&text);
        let again = refused(
            approvals
                .authorize(None, &caller, "pve_get_vm_status", &args, None)
                .await,
        );
        assert!(again.starts_with("Still waiting"), "{again}");
        assert_eq!(approval_id(&again), id);

        store.decide(&id, Verdict::Approve, now_ms()).await.unwrap();
        // Keys in another order are the same call.
        let reordered = json!({"node": "pve1", "vmid": 100})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(
            approvals
                .authorize(None, &caller, "pve_get_vm_status", &reordered, None)
                .await,
            Authorization::Run(Approver::Operator)
        );
        let after = refused(
            approvals
                .authorize(None, &caller, "pve_get_vm_status", &args, None)
                .await,
        );
        assert_ne!(approval_id(&after), id, "a second run needs a new approval");
    }

    #[tokio::test]
    async fn denied_and_changed_calls_are_not_run() {
        let (approvals, store) = approvals();
        let caller = Caller::stdio();
        let args = json!({"vmid": 100}).as_object().unwrap().clone();
        let id = approval_id(&refused(
            approvals
                .authorize(None, &caller, "pve_list_vms", &args, None)
                .await,
        ));
        store.decide(&id, Verdict::Approve, now_ms()).await.unwrap();
        let changed = json!({"vmid": 101}).as_object().unwrap().clone();
        let text = refused(
            approvals
                .authorize(None, &caller, "pve_list_vms", &changed, None)
                .await,
        );
        assert_ne!(approval_id(&text), id);
        let other_caller = caller_of("s2", None);
        let text = refused(
            approvals
                .authorize(None, &other_caller, "pve_list_vms", &args, None)
                .await,
        );
        assert_ne!(approval_id(&text), id, "approvals are per caller");

        store.decide(&id, Verdict::Deny, now_ms()).await.unwrap();
        let text = refused(
            approvals
                .authorize(None, &caller, "pve_list_vms", &args, None)
                .await,
        );
        assert!(text.starts_with("Not approved: a person denied"), "{text}");
    }

    #[tokio::test]
    async fn without_an_admin_endpoint_nothing_is_left_pending() {
        let (approvals, store) = approvals();
        let approvals = approvals.without_admin();
        let args = json!({"vmid": 100}).as_object().unwrap().clone();
        let text = refused(
            approvals
                .authorize(None, &Caller::stdio(), "pve_list_vms", &args, None)
                .await,
        );
        assert!(text.contains("PVE_MCP_ADMIN_TOKEN"), "{text}");
        assert!(store.list(now_ms()).await.unwrap().is_empty());
    }

    /// Issue 21 F4: the operator's record has every argument and the whole
    /// plan; a client's form folds them, saying what it folded.
    #[tokio::test]
    async fn the_operator_sees_the_whole_call_and_a_form_says_what_it_folded() {
        let (approvals, store) = approvals();
        let description = "d".repeat(1024);
        let args = json!({"vmid": 102, "config": {
            "description": description, "net0": "virtio,bridge=vmbr666,firewall=0"}})
        .as_object()
        .unwrap()
        .clone();
        let plan = format!(
            "PUT /api2/json/nodes/pve1/qemu/102/config {}",
            "p".repeat(3000)
        );
        refused(
            approvals
                .authorize(
                    None,
                    &Caller::stdio(),
                    "pve_set_vm_config",
                    &args,
                    Some(&plan),
                )
                .await,
        );
        let listed = store.list(now_ms()).await.unwrap();
        assert!(listed[0].arguments.contains(&description), "{listed:?}");
        assert!(
            listed[0].arguments.contains("bridge=vmbr666,firewall=0"),
            "{listed:?}"
        );
        assert_eq!(listed[0].plan.as_deref(), Some(plan.as_str()));

        let question = approvals.question("pve_set_vm_config", &args, Some(&plan), "token:a");
        assert!(question.contains("…[folded: 904 chars]"), "{question}");
        let plan_fold = format!("…[folded: {} chars]", plan.chars().count() - FORM_PLAN);
        assert!(question.contains(&plan_fold), "{question}");
        assert!(
            question.contains("approving runs the call with its complete arguments"),
            "{question}"
        );
        let short = json!({"vmid": 100}).as_object().unwrap().clone();
        assert!(
            !approvals
                .question("t", &short, None, "x")
                .contains("folded")
        );
    }

    /// A guest command's argv is named whole in the form, and the record's
    /// hash covers the exact arguments though the content is not shown.
    #[tokio::test]
    async fn a_guest_call_names_its_argv_and_hashes_the_exact_content() {
        let (approvals, store) = approvals();
        let argv: Vec<String> = (0..40)
            .map(|i| format!("--flag-{i}={}", "v".repeat(30)))
            .collect();
        let args = json!({"vmid": 100, "command": argv})
            .as_object()
            .unwrap()
            .clone();
        let question = approvals.question("pve_guest_exec", &args, None, "token:a");
        // The arguments fold past 1000 chars; the command line does not.
        assert!(
            question.contains("Command (40 arguments, exactly as run): [\"--flag-0="),
            "{question}"
        );
        assert!(
            question.contains(&format!("\"--flag-39={}\"]", "v".repeat(30))),
            "{question}"
        );
        let write = |content: &str| {
            json!({"vmid": 100, "path": "/etc/motd", "content": content})
                .as_object()
                .unwrap()
                .clone()
        };
        for content in ["hello", "hellO"] {
            refused(
                approvals
                    .authorize(
                        None,
                        &Caller::stdio(),
                        "pve_guest_file_write",
                        &write(content),
                        None,
                    )
                    .await,
            );
        }
        let listed = store.list(now_ms()).await.unwrap();
        assert_eq!(listed.len(), 2, "{listed:?}");
        assert_ne!(listed[0].arguments_hash, listed[1].arguments_hash);
        assert!(
            listed
                .iter()
                .all(|a| !a.arguments.contains("hello") && !a.arguments.contains("hellO"))
        );
        assert!(
            listed[0].arguments.contains("[not shown: 5 bytes, sha256 "),
            "{listed:?}"
        );
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(Duration::from_secs(45)), "45 s");
        assert_eq!(human_duration(Duration::from_secs(900)), "15 min");
        assert_eq!(human_duration(Duration::from_secs(3 * 3600)), "3 h");
        assert_eq!(human_duration(Duration::from_secs(3 * 86_400)), "3 d");
        assert_eq!(human_duration(Duration::from_secs(899)), "15 min");
        assert_eq!(remaining(10, 20), "0 s");
        assert_eq!(remaining(900_000, 1), "15 min");
        assert_eq!(remaining(1_500, 1_000), "1 s");
    }
}
