//! Approval inside the request, for MCP 2026-07-28 clients (multi
//! round-trip requests, SEP-2322).
//!
//! A client on 2026-07-28 has no session the server could send an
//! `elicitation/create` through, so the call is answered with an
//! `InputRequiredResult`: one elicitation form (the same one-field `approve`
//! form and question as [`super::elicit`]) and a sealed `requestState`. The
//! client shows the form and retries the call with the person's answer and
//! the state echoed back; the retry runs if the state opens, matches the
//! call and has not been used.
//!
//! The state is sealed with rmcp's [`RequestStateCodec`] (HMAC-SHA256) and
//! names the tool, the canonical hash of the arguments and plan
//! ([`super::approval_hash`]), the caller ([`super::binding`]), its expiry
//! and a random nonce. Nothing in it is secret (it is signed, not
//! encrypted), and nothing in it is trusted before the seal is checked. The
//! nonce is what makes it single-use: the store records it when the call
//! runs ([`super::store::ApprovalStore::use_once`]), in Redis when
//! replicas share approvals, so a retry replayed on any replica is refused.

use std::time::Duration;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, ProtocolVersion, RequestStateCodec, RequestStateError,
    SealOptions,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, model::ClientCapabilities};
use serde::{Deserialize, Serialize};

use super::elicit::{self, Answer, Refusal};
use super::store::Millis;

/// The key of the one input request (and of its answer).
pub const INPUT_KEY: &str = "approval";

/// Mixed into every seal, so that a state sealed with the same key for any
/// other purpose never opens as an approval.
const PURPOSE: &[u8] = b"pve-mcp/approval/tools-call/v1";

/// The label the key is derived under from the admin token, so the derived
/// key is good for nothing else (and says nothing about the token).
const DERIVE_LABEL: &[u8] = b"pve-mcp/approvals/request-state-key/v1";

/// Where the sealing key came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `[approvals] state_key_file`, named by the setting it came from.
    File(String),
    /// Derived from the admin token: replicas sharing it share the key.
    AdminToken,
    /// Random for this process: no other replica can open its states.
    Random,
}

/// Seals and opens the `requestState` of approval round trips.
pub struct StateSeal {
    codec: RequestStateCodec,
    source: KeySource,
}

impl std::fmt::Debug for StateSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The codec redacts its key too; say only where it came from.
        f.debug_struct("StateSeal")
            .field("source", &self.source)
            .finish()
    }
}

/// What a sealed state binds: the call a person was asked about.
#[derive(Debug, Clone, Copy)]
pub struct Bound<'a> {
    /// The tool.
    pub tool: &'a str,
    /// [`super::approval_hash`] of the arguments and plan.
    pub hash: &'a str,
    /// [`super::binding`] of the caller.
    pub caller: &'a str,
}

/// The sealed payload (readable by the client, trusted only once opened).
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    tool: String,
    hash: String,
    caller: String,
    nonce: String,
    /// When it expires, ms since the epoch (the codec checks the same
    /// expiry; this one tells the store how long to remember the nonce).
    exp: Millis,
}

/// A state that opened and matches the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// Its single-use nonce.
    pub nonce: String,
    /// When it expires, ms since the epoch.
    pub expires_ms: Millis,
}

/// Why a retry's state does not let the call run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Not sealed by this server's key (forged, damaged, or from a replica
    /// with another key).
    NotOurs,
    /// Sealed by us, but past its expiry.
    Expired,
    /// Sealed for another caller.
    OtherCaller,
    /// Sealed for another call: the tool, the arguments or the plan differ.
    Altered,
    /// Its approval already ran its call once.
    Replayed,
}

impl Problem {
    /// A short name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Problem::NotOurs => "not-ours",
            Problem::Expired => "expired",
            Problem::OtherCaller => "other-caller",
            Problem::Altered => "altered",
            Problem::Replayed => "replayed",
        }
    }

    /// The tool error the agent gets: what was wrong, that nothing was
    /// sent, and what to do.
    pub fn text(&self, tool: &str) -> String {
        let why = match self {
            Problem::NotOurs => {
                "its requestState was not issued by this server (it is damaged, changed, or sealed with another key)"
            }
            Problem::Expired => "its approval expired before the retry came",
            Problem::OtherCaller => "its requestState was issued to another caller",
            Problem::Altered => {
                "it is not the call the person was asked about (the tool, its arguments, or the requests its dry run plans now differ)"
            }
            Problem::Replayed => "its approval was already used: an approval runs its call once",
        };
        format!(
            "Not approved: this retry of {tool} was refused because {why}. {tool} was not run and nothing was sent. \
             To run it, call {tool} again without requestState: a person is asked anew."
        )
    }
}

impl StateSeal {
    /// Seals with the key of `[approvals] state_key_file` (`setting` names
    /// where it came from); `None` if it is shorter than the codec accepts
    /// (the configuration already refused that).
    pub fn from_file(bytes: &[u8], setting: &str) -> Option<StateSeal> {
        RequestStateCodec::try_new(bytes.to_vec())
            .ok()
            .map(|codec| StateSeal {
                codec,
                source: KeySource::File(setting.to_string()),
            })
    }

    /// Seals with a key derived from the admin token: HMAC-SHA256 keyed
    /// by the token over a label of this use, so replicas sharing the token
    /// share the key and the key reveals nothing of the token.
    pub fn from_admin_token(token: &str) -> StateSeal {
        StateSeal {
            codec: RequestStateCodec::new_unchecked(hmac_sha256(token.as_bytes(), DERIVE_LABEL)),
            source: KeySource::AdminToken,
        }
    }

    /// Seals with a random key of this process.
    pub fn random() -> StateSeal {
        let mut key = Vec::with_capacity(32);
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        StateSeal {
            codec: RequestStateCodec::new_unchecked(key),
            source: KeySource::Random,
        }
    }

    /// Where the key came from.
    pub fn source(&self) -> &KeySource {
        &self.source
    }

    /// A fresh state for this call, counting for `ttl` from `now`.
    pub fn seal(&self, bound: Bound<'_>, ttl: Duration, now: Millis) -> String {
        let payload = Payload {
            tool: bound.tool.to_string(),
            hash: bound.hash.to_string(),
            caller: bound.caller.to_string(),
            nonce: uuid::Uuid::new_v4().simple().to_string(),
            exp: now.saturating_add(ttl.as_millis() as Millis),
        };
        let options = SealOptions::new().associated_data(PURPOSE).ttl(ttl);
        // A struct of strings and a number always serialises.
        self.codec
            .seal_json_with(&payload, &options)
            .unwrap_or_default()
    }

    /// Opens a retry's state and checks it against the call retried: the
    /// seal first (nothing in it counts before), then its expiry, caller and
    /// call. Whether it was used already is the store's to say.
    pub fn open(&self, sealed: &str, call: Bound<'_>) -> Result<Opened, Problem> {
        let payload: Payload = self
            .codec
            .open_json_with(sealed, PURPOSE)
            .map_err(|e| match e {
                RequestStateError::Expired => Problem::Expired,
                _ => Problem::NotOurs,
            })?;
        if payload.caller != call.caller {
            return Err(Problem::OtherCaller);
        }
        if payload.tool != call.tool || payload.hash != call.hash {
            return Err(Problem::Altered);
        }
        Ok(Opened {
            nonce: payload.nonce,
            expires_ms: payload.exp,
        })
    }
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`, by ring (which the
/// TLS stack already brings).
fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    ring::hmac::sign(&key, message).as_ref().to_vec()
}

/// Whether this request's client can be asked inside the call: it speaks
/// 2026-07-28 or later (its session negotiated it, or the request's `_meta`
/// declares it) and declared form elicitation.
pub fn speaks(context: &RequestContext<RoleServer>) -> bool {
    let recent = context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    recent
        && context
            .client_capabilities()
            .is_some_and(|c| shows_forms(&c))
}

/// Whether these capabilities include form elicitation (an `elicitation`
/// capability naming neither mode means forms, as in 2025-06-18).
fn shows_forms(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The answer: the approval form, and the state to echo back.
pub fn input_required(question: String, state: String) -> InputRequiredResult {
    let form = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question,
        requested_schema: elicit::form(),
    });
    let mut requests = InputRequests::new();
    requests.insert(INPUT_KEY.to_string(), InputRequest::Elicitation(form));
    InputRequiredResult::new(Some(requests), Some(state))
}

/// What the person answered, from a retry's `inputResponses`; anything but
/// an accepted form with approve = true is not a yes.
pub fn answer(responses: Option<&InputResponses>) -> Answer {
    let Some(response) = responses.and_then(|r| r.get(INPUT_KEY)) else {
        return Answer::Unavailable(format!(
            "the retry carried no answer to the approval form (inputResponses.{INPUT_KEY})"
        ));
    };
    match serde_json::from_value::<ElicitResult>(response.clone()) {
        Ok(result) => elicit::answer_of(&result),
        Err(_) => Answer::NotApproved(Refusal::Cancelled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: Millis = 1_800_000_000_000;
    const TTL: Duration = Duration::from_secs(600);

    fn call<'a>(hash: &'a str, caller: &'a str) -> Bound<'a> {
        Bound {
            tool: "pve_stop_vm",
            hash,
            caller,
        }
    }

    #[test]
    fn a_sealed_state_opens_only_for_the_same_call_and_caller() {
        let seal = StateSeal::random();
        let state = seal.seal(call("sha256:a", "token:alice"), TTL, crate::state::now_ms());
        let opened = seal.open(&state, call("sha256:a", "token:alice")).unwrap();
        assert_eq!(opened.nonce.len(), 32);
        assert!(opened.expires_ms > crate::state::now_ms());
        assert_eq!(
            seal.open(&state, call("sha256:b", "token:alice")),
            Err(Problem::Altered)
        );
        let other_tool = Bound {
            tool: "pve_delete_vm",
            ..call("sha256:a", "token:alice")
        };
        assert_eq!(seal.open(&state, other_tool), Err(Problem::Altered));
        assert_eq!(
            seal.open(&state, call("sha256:a", "token:bob")),
            Err(Problem::OtherCaller)
        );
        // Each state has its own nonce.
        let again = seal.seal(call("sha256:a", "token:alice"), TTL, NOW);
        assert_ne!(
            seal.open(&again, call("sha256:a", "token:alice"))
                .unwrap()
                .nonce,
            opened.nonce
        );
    }

    #[test]
    fn a_changed_forged_or_foreign_state_is_not_ours() {
        let seal = StateSeal::random();
        let bound = call("sha256:a", "token:alice");
        let state = seal.seal(bound, TTL, NOW);
        // The payload is readable (signed, not encrypted): change one
        // character of it and keep the tag.
        let mut parts: Vec<String> = state.split('.').map(str::to_string).collect();
        let mut body: Vec<char> = parts[1].chars().collect();
        let middle = body.len() / 2;
        body[middle] = if body[middle] == 'A' { 'B' } else { 'A' };
        parts[1] = body.into_iter().collect();
        let forged = parts.join(".");
        assert_eq!(seal.open(&forged, bound), Err(Problem::NotOurs));
        assert_eq!(seal.open("", bound), Err(Problem::NotOurs));
        assert_eq!(seal.open("rs1.x.y", bound), Err(Problem::NotOurs));
        // Another process's random key.
        assert_eq!(
            StateSeal::random().open(&state, bound),
            Err(Problem::NotOurs)
        );
    }

    #[test]
    fn replicas_sharing_a_key_file_or_admin_token_open_each_others_states() {
        let key = [7u8; 32];
        let a = StateSeal::from_file(&key, "approvals.state_key_file").unwrap();
        let b = StateSeal::from_file(&key, "approvals.state_key_file").unwrap();
        let bound = call("sha256:a", "token:alice");
        assert!(b.open(&a.seal(bound, TTL, NOW), bound).is_ok());
        assert!(StateSeal::from_file(&key[..31], "k").is_none());

        let a = StateSeal::from_admin_token("admin-token-0123456789");
        let b = StateSeal::from_admin_token("admin-token-0123456789");
        let c = StateSeal::from_admin_token("admin-token-9876543210");
        let state = a.seal(bound, TTL, NOW);
        assert!(b.open(&state, bound).is_ok());
        assert_eq!(c.open(&state, bound), Err(Problem::NotOurs));
        assert_eq!(a.source(), &KeySource::AdminToken);
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2 of RFC 4231.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        let mac = hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn an_expired_state_says_so() {
        let seal = StateSeal::random();
        let bound = call("sha256:a", "token:alice");
        let state = seal.seal(bound, Duration::from_millis(1), crate::state::now_ms());
        // The codec reads the clock itself: let a millisecond pass.
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(seal.open(&state, bound), Err(Problem::Expired));
        // The seal is checked first: a changed expired state is not ours.
        let changed = format!("{state}x");
        assert_eq!(seal.open(&changed, bound), Err(Problem::NotOurs));
    }

    #[test]
    fn the_answer_is_yes_only_for_an_accepted_form_with_approve_true() {
        let of = |v: serde_json::Value| {
            let mut responses = InputResponses::new();
            responses.insert(INPUT_KEY.into(), v);
            answer(Some(&responses))
        };
        assert_eq!(
            of(json!({"action": "accept", "content": {"approve": true}})),
            Answer::Approved
        );
        assert_eq!(
            of(json!({"action": "accept", "content": {"approve": false}})),
            Answer::NotApproved(Refusal::AnsweredNo)
        );
        assert_eq!(
            of(json!({"action": "accept", "content": {"approve": "yes"}})),
            Answer::NotApproved(Refusal::AnsweredNo)
        );
        assert_eq!(
            of(json!({"action": "decline"})),
            Answer::NotApproved(Refusal::Declined)
        );
        assert_eq!(
            of(json!({"action": "cancel"})),
            Answer::NotApproved(Refusal::Cancelled)
        );
        assert_eq!(of(json!("yes")), Answer::NotApproved(Refusal::Cancelled));
        assert!(matches!(answer(None), Answer::Unavailable(_)));
        let mut elsewhere = InputResponses::new();
        elsewhere.insert("other".into(), json!({"action": "accept"}));
        assert!(matches!(answer(Some(&elsewhere)), Answer::Unavailable(_)));
    }

    #[test]
    fn the_input_request_is_the_approval_form() {
        let result = input_required("Approve a call to pve_stop_vm?".into(), "rs1.a.b".into());
        let v = serde_json::to_value(&result).unwrap();
        assert_eq!(v["resultType"], "input_required");
        assert_eq!(v["requestState"], "rs1.a.b");
        let form = &v["inputRequests"][INPUT_KEY];
        assert_eq!(form["method"], "elicitation/create");
        assert_eq!(form["params"]["message"], "Approve a call to pve_stop_vm?");
        assert_eq!(
            form["params"]["requestedSchema"]["required"],
            json!([elicit::APPROVE_FIELD])
        );
    }

    #[test]
    fn refusals_say_which_and_that_nothing_was_sent() {
        for problem in [
            Problem::NotOurs,
            Problem::Expired,
            Problem::OtherCaller,
            Problem::Altered,
            Problem::Replayed,
        ] {
            let text = problem.text("pve_stop_vm");
            assert!(text.contains("nothing was sent"), "{text}");
            assert!(text.contains("without requestState"), "{text}");
        }
        assert!(Problem::Replayed.text("t").contains("already used"));
        assert!(Problem::Expired.text("t").contains("expired"));
        assert!(Problem::OtherCaller.text("t").contains("another caller"));
        assert!(Problem::Altered.text("t").contains("arguments"));
    }
}
