//! Asking the person at the client, when the client can show a form
//! (it declared the `elicitation` capability at initialize).

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer, ServiceError};

/// The one field of the form.
pub const APPROVE_FIELD: &str = "approve";

/// What the person answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Accepted the form with approve = true.
    Approved,
    /// Anything else: the call does not run.
    NotApproved(Refusal),
    /// The client could not ask (it failed the request); the caller falls
    /// back to pending-then-retry.
    Unavailable(String),
}

/// How a person said no.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Accepted the form with approve = false (or without approve).
    AnsweredNo,
    /// Declined the request.
    Declined,
    /// Dismissed the dialog.
    Cancelled,
    /// Did not answer in time.
    NoAnswer(Duration),
}

impl Refusal {
    /// The reason, worded for the agent.
    pub fn reason(&self) -> String {
        match self {
            Refusal::AnsweredNo => "the person answered no".into(),
            Refusal::Declined => "the person declined the request".into(),
            Refusal::Cancelled => "the person dismissed the approval request".into(),
            Refusal::NoAnswer(t) => format!("nobody answered within {} s", t.as_secs()),
        }
    }
}

/// Whether this client can show an approval form.
pub fn supported(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
}

/// The form: one required boolean, off unless the person turns it on.
pub fn form() -> ElicitationSchema {
    ElicitationSchema::builder()
        .required_bool_with(APPROVE_FIELD, |b| {
            b.title("Approve")
                .description("Run this call once")
                .with_default(false)
        })
        .build_unchecked()
}

/// Asks the person and waits at most `timeout` for the answer.
pub async fn ask(peer: &Peer<RoleServer>, message: String, timeout: Duration) -> Answer {
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: form(),
    };
    match peer
        .create_elicitation_with_timeout(params, Some(timeout))
        .await
    {
        Ok(result) => answer_of(&result),
        Err(ServiceError::Timeout { timeout }) => Answer::NotApproved(Refusal::NoAnswer(timeout)),
        Err(e) => Answer::Unavailable(e.to_string()),
    }
}

/// What an answered form says: yes only for an accepted form with
/// approve = true. Shared by the form sent in a session and the one sent
/// inside a 2026-07-28 call ([`super::round_trip`]).
pub fn answer_of(result: &ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept => {
            let approved = result
                .content
                .as_ref()
                .and_then(|c| c.get(APPROVE_FIELD))
                .and_then(|v| v.as_bool())
                == Some(true);
            if approved {
                Answer::Approved
            } else {
                Answer::NotApproved(Refusal::AnsweredNo)
            }
        }
        ElicitationAction::Decline => Answer::NotApproved(Refusal::Declined),
        ElicitationAction::Cancel => Answer::NotApproved(Refusal::Cancelled),
        // An action this version does not know is not a yes.
        _ => Answer::NotApproved(Refusal::Cancelled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_is_one_required_boolean_defaulting_to_no() {
        let schema = serde_json::to_value(form()).unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], serde_json::json!([APPROVE_FIELD]));
        assert_eq!(schema["properties"][APPROVE_FIELD]["type"], "boolean");
        assert_eq!(schema["properties"][APPROVE_FIELD]["default"], false);
        assert_eq!(schema["properties"].as_object().unwrap().len(), 1);
    }

    #[test]
    fn refusals_say_why() {
        assert!(Refusal::Declined.reason().contains("declined"));
        assert!(Refusal::Cancelled.reason().contains("dismissed"));
        assert!(Refusal::AnsweredNo.reason().contains("no"));
        assert!(
            Refusal::NoAnswer(Duration::from_secs(30))
                .reason()
                .contains("30 s")
        );
    }
}
