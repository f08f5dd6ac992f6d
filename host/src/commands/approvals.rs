//! `pve-mcp approvals list|show ID|approve ID|deny ID`: a person's side of
//! pending-then-retry, talking to the server's admin endpoint.
//!
//! `list` folds long values to fit a terminal and says at each fold how
//! much it left out and that `show ID` prints it all; `show` and `--json`
//! print the complete arguments and plan as the approval records them.

use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;

use super::exit::config_failure;
use super::global::Global;
use crate::approval::client::{AdminClient, ClientError};
use crate::approval::redact::fold;
use crate::approval::store::{Approval, Millis, State, Verdict};
use crate::approval::{human_duration, remaining};
use crate::config::approvals::ApprovalSettings;

/// What to do with approvals.
#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// List approvals: id, tool, state, age, expiry, caller, arguments
    /// and plan (long values folded, saying so; `show` prints them whole).
    List {
        /// Print them as JSON, complete.
        #[arg(long)]
        json: bool,
    },
    /// Show one approval complete: every argument and the whole plan.
    Show {
        /// The approval id the agent quoted, e.g. ap-0123456789abcdef.
        id: String,
    },
    /// Approve one: the agent's next identical call runs, once.
    Approve {
        /// The approval id the agent quoted, e.g. ap-0123456789abcdef.
        id: String,
    },
    /// Deny one: identical calls are refused until it expires.
    Deny {
        /// The approval id the agent quoted, e.g. ap-0123456789abcdef.
        id: String,
    },
}

/// Runs `pve-mcp approvals ...`. It reads only `[approvals]` and the admin
/// token from --config and the environment, so no Proxmox credentials are
/// needed to approve calls.
pub async fn run(global: &Global, command: &ApprovalsCommand) -> ExitCode {
    let settings =
        match ApprovalSettings::load_alone(global.config.as_deref(), &|k| std::env::var(k).ok()) {
            Ok(s) => s,
            Err(e) => return config_failure(&e),
        };
    let token = match settings.require_token("`pve-mcp approvals` sends it to the server") {
        Ok(t) => t.clone(),
        Err(e) => return config_failure(&e),
    };
    let client = AdminClient::new(settings.admin.clone(), token.secret, token.key);
    let result = match command {
        ApprovalsCommand::List { json } => client.list().await.map(|(now, all)| {
            if *json {
                serde_json::to_string_pretty(&all).unwrap_or_default()
            } else {
                table(&all, now)
            }
        }),
        ApprovalsCommand::Show { id } => client.get(id).await.map(|(now, a)| show(&a, now)),
        ApprovalsCommand::Approve { id } => client
            .decide(id, Verdict::Approve)
            .await
            .map(|(now, a)| decided(&a, now)),
        ApprovalsCommand::Deny { id } => client
            .decide(id, Verdict::Deny)
            .await
            .map(|(now, a)| decided(&a, now)),
    };
    match result {
        Ok(text) => {
            println!("{}", text.trim_end());
            ExitCode::SUCCESS
        }
        Err(e @ ClientError::BadId(_)) => super::exit::usage_failure(&e.to_string()),
        Err(e) => super::exit::failure(&e.into()),
    }
}

/// Longest string value `list` shows before folding it, in characters.
const TABLE_STRING: usize = 120;
/// Longest argument text (when it is not JSON) or plan `list` shows.
const TABLE_TEXT: usize = 300;

/// An approval's arguments and plan for one line of a terminal: each long
/// string value folded, saying how much it left out and where to see it.
/// Every other value stays, so a short change beside a long one shows.
fn folded(a: &Approval) -> String {
    let then = format!("; `pve-mcp approvals show {}` shows all", a.id);
    let arguments = match serde_json::from_str::<serde_json::Value>(&a.arguments) {
        Ok(value) => crate::canonical::canonical_json(&fold_strings(&value, &then)),
        // A record folded for its size is no longer JSON.
        Err(_) => fold(&a.arguments, TABLE_TEXT, &then),
    };
    match &a.plan {
        Some(plan) => format!("{arguments} -> plan: {}", fold(plan, TABLE_TEXT, &then)),
        None => arguments,
    }
}

fn fold_strings(value: &serde_json::Value, then: &str) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(fold(s, TABLE_STRING, then)),
        Value::Array(items) => Value::Array(items.iter().map(|v| fold_strings(v, then)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fold_strings(v, then)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// When an approval in `state` expires, or expired: `in 14 min`, `3 min
/// ago`, or `-` once used.
fn expiry(a: &Approval, state: State, now: Millis) -> String {
    match state {
        State::Used => "-".to_string(),
        State::Expired => format!(
            "{} ago",
            human_duration(Duration::from_millis(now.saturating_sub(a.expires_ms)))
        ),
        _ => format!("in {}", remaining(a.expires_ms, now)),
    }
}

/// What `show` prints: one approval, its arguments and plan complete.
fn show(a: &Approval, now: Millis) -> String {
    let state = a.state_at(now);
    let age = human_duration(Duration::from_millis(now.saturating_sub(a.created_ms)));
    let expiry = expiry(a, state, now);
    let plan = a
        .plan
        .as_deref()
        .unwrap_or("none (the tool declares no writes)");
    format!(
        "approval:  {}\ntool:      {}\nstate:     {state}\ncaller:    {}\nasked:     {age} ago\nexpires:   {expiry}\n\
         arguments ({}; complete, secrets redacted):\n{}\n\
         plan (the writes a dry run plans, checked by the gate; the approved call sends exactly these):\n{plan}\n",
        a.id, a.tool, a.caller, a.arguments_hash, a.arguments
    )
}

/// What `approve` and `deny` print.
fn decided(a: &Approval, now: Millis) -> String {
    let call = format!("{} {} for {}", a.tool, folded(a), a.caller);
    match a.state {
        State::Approved => format!(
            "approved {}: {call}\nThe agent's next identical call runs once (within {}).",
            a.id,
            remaining(a.expires_ms, now)
        ),
        _ => format!(
            "denied {}: {call}\nIdentical calls are refused for {}.",
            a.id,
            remaining(a.expires_ms, now)
        ),
    }
}

/// The `list` table, one approval per line, oldest first.
pub fn table(all: &[Approval], now: Millis) -> String {
    if all.is_empty() {
        return "no approvals\n".into();
    }
    let rows: Vec<[String; 7]> = all
        .iter()
        .map(|a| {
            let state = a.state_at(now);
            let expiry = expiry(a, state, now);
            [
                a.id.clone(),
                a.tool.clone(),
                state.to_string(),
                human_duration(Duration::from_millis(now.saturating_sub(a.created_ms))),
                expiry,
                a.caller.clone(),
                folded(a),
            ]
        })
        .collect();
    let header = [
        "ID",
        "TOOL",
        "STATE",
        "AGE",
        "EXPIRES",
        "CALLER",
        "ARGUMENTS",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(header.to_vec());
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(id: &str, state: State, created: Millis, expires: Millis) -> Approval {
        Approval {
            id: id.into(),
            tool: "pve_get_vm_status".into(),
            arguments_hash: "sha256:00".into(),
            arguments: r#"{"vmid":100}"#.into(),
            plan: None,
            caller: "session:stdio".into(),
            created_ms: created,
            decided_ms: None,
            expires_ms: expires,
            state,
        }
    }

    #[test]
    fn table_shows_every_column_and_computed_expiry() {
        let now = 10_000_000;
        let text = table(
            &[
                approval("ap-1", State::Pending, now - 5_000, now + 600_000),
                approval("ap-2", State::Approved, now - 9_000, now - 3_000),
                approval("ap-3", State::Used, now - 9_000, now + 1),
            ],
            now,
        );
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("ID"), "{text}");
        for column in ["TOOL", "STATE", "AGE", "EXPIRES", "CALLER", "ARGUMENTS"] {
            assert!(lines[0].contains(column), "{text}");
        }
        assert!(
            lines[1].contains("pending") && lines[1].contains("in 10 min"),
            "{text}"
        );
        assert!(
            lines[1].contains("5 s") && lines[1].contains(r#"{"vmid":100}"#),
            "{text}"
        );
        assert!(
            lines[2].contains("expired") && lines[2].contains("3 s ago"),
            "{text}"
        );
        assert!(lines[3].contains("used"), "{text}");
        assert_eq!(table(&[], now), "no approvals\n");
    }

    /// Issue 21 F4: the table folds a long value, saying so, and keeps the
    /// short change beside it; `show` prints everything.
    #[test]
    fn list_folds_saying_so_and_show_prints_all() {
        let now = 10_000_000;
        let description = "d".repeat(1024);
        let a = Approval {
            tool: "pve_set_vm_config".into(),
            arguments: format!(
                r#"{{"config":{{"description":"{description}","net0":"virtio,bridge=vmbr666,firewall=0"}},"vmid":102}}"#
            ),
            plan: Some(format!(
                "PUT /api2/json/nodes/pve1/qemu/102/config {}",
                "p".repeat(400)
            )),
            ..approval("ap-1", State::Pending, now - 5_000, now + 600_000)
        };
        let text = table(std::slice::from_ref(&a), now);
        assert!(
            text.contains("…[folded: 904 chars; `pve-mcp approvals show ap-1` shows all]"),
            "{text}"
        );
        assert!(text.contains("bridge=vmbr666,firewall=0"), "{text}");
        assert!(text.contains("-> plan: PUT /api2/json"), "{text}");
        assert!(!text.contains(&description), "{text}");
        assert_eq!(text.lines().count(), 2, "{text}");

        let whole = show(&a, now);
        assert!(whole.contains(&a.arguments), "{whole}");
        assert!(whole.contains(a.plan.as_deref().unwrap()), "{whole}");
        assert!(!whole.contains("folded"), "{whole}");
        assert!(whole.contains("state:     pending"), "{whole}");
        // Not JSON (a record folded for its size): folded as text.
        let big = Approval {
            arguments: format!(
                "{}…[folded: the whole is 70000 bytes, sha256 ab]",
                "x".repeat(500)
            ),
            ..a
        };
        assert!(folded(&big).contains("…[folded: "), "{}", folded(&big));
    }

    #[test]
    fn decisions_say_what_happens_next() {
        let now = 1_000;
        let text = decided(&approval("ap-1", State::Approved, 0, now + 900_000), now);
        assert!(
            text.starts_with("approved ap-1: pve_get_vm_status"),
            "{text}"
        );
        assert!(
            text.contains("runs once") && text.contains("15 min"),
            "{text}"
        );
        let text = decided(&approval("ap-1", State::Denied, 0, now + 60_000), now);
        assert!(text.starts_with("denied ap-1"), "{text}");
    }
}
