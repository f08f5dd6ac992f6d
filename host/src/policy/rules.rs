//! The policy as operators write it (`[policy]` in TOML) and its checked
//! form. Every problem is a [`ConfigError`] naming the key, its file and
//! line, and the fix: unknown keys (a typo never silently means "no
//! rule"), unknown tools, bad rates, bad regular expressions, bad ops.

use std::ops::Range;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;

use super::commands::CommandPatterns;
use super::conditions::{Condition, Op};
use super::paths::PathPatterns;
use super::rate_limit::{Rate, RateLimit, Scope};
// The policy reads the file itself (with spans, and again on reload),
// through the same reader as the configuration's sections.
use crate::config::file::{line_of, read_text as read};
use crate::error::ConfigError;
use crate::tools::ToolInfo;

/// The rule name of the default mode.
pub const DEFAULT_RULE: &str = "policy.default";
/// The rule name of a refusal because the state store is unreachable.
pub const STATE_FAILURE_RULE: &str = "policy.state_failure";

/// What happens to a tool no rule allows or denies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum DefaultMode {
    /// Tools that declare `readOnlyHint` run, GET-only; others are denied.
    #[serde(rename = "read-only", alias = "read_only", alias = "readonly")]
    ReadOnly,
    /// Only tools listed under `[policy.tools]` run.
    #[serde(rename = "deny")]
    Deny,
    /// Every tool runs; tools that do not declare `readOnlyHint` may write.
    #[serde(rename = "allow")]
    Allow,
}

impl DefaultMode {
    /// As written in the policy.
    pub fn as_str(self) -> &'static str {
        match self {
            DefaultMode::ReadOnly => "read-only",
            DefaultMode::Deny => "deny",
            DefaultMode::Allow => "allow",
        }
    }
}

/// What a rate-limited call gets when the state store is unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateFailure {
    /// Refuse the call (the default).
    Closed,
    /// Run the call without counting it.
    Open,
}

impl StateFailure {
    /// As written in the policy.
    pub fn as_str(self) -> &'static str {
        match self {
            StateFailure::Closed => "closed",
            StateFailure::Open => "open",
        }
    }
}

/// A rule's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run the call.
    Allow,
    /// Refuse it with the rule's `reason`.
    Deny,
    /// Run it once a person approves.
    RequireApproval,
}

impl Action {
    /// As written in the policy.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
            Action::RequireApproval => "require_approval",
        }
    }
}

/// Who may approve a call a rule marks `require_approval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approver {
    /// A person out of band: `pve-mcp approvals approve ID` or the admin
    /// endpoint. The agent's own client is never asked.
    Operator,
    /// The person at the MCP client, through its approval form when it can
    /// show one (else as [`Approver::Operator`]). Only as trustworthy as the
    /// client: an agent that answers its own forms approves itself.
    Client,
}

impl Approver {
    /// As written in the policy and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Approver::Operator => "operator",
            Approver::Client => "client",
        }
    }
}

/// The checked rules for one tool, or for every tool (`"*"`).
#[derive(Debug, Clone)]
pub struct Rule {
    /// `policy.tools.NAME` (`policy.tools."*"` for the wildcard).
    pub name: String,
    /// The verdict, when the rule gives one.
    pub action: Option<Action>,
    /// Shown to the agent on a denial.
    pub reason: Option<String>,
    /// Absent from `tools/list`, and denied when called.
    pub hide: Option<bool>,
    /// Whether an allowed call may send non-GET requests; by default, when
    /// the tool does not declare `readOnlyHint`.
    pub write: Option<bool>,
    /// Who approves, when the verdict is `require_approval`.
    pub approver: Option<Approver>,
    /// Every limit must have budget left.
    pub limits: Vec<RateLimit>,
    /// Every condition must hold.
    pub conditions: Vec<Condition>,
    /// The sensitive classes (`route::sensitive`) this tool's own rule
    /// opens to its calls' own requests; only a tool's own table has them.
    pub sensitive: Vec<&'static str>,
    /// The argv patterns a guest command must match (`commands`); only a
    /// tool's own table has them.
    pub commands: Option<CommandPatterns>,
    /// The path patterns a guest file must match (`paths`); only a tool's
    /// own table has them.
    pub paths: Option<PathPatterns>,
}

/// Where the rate-limit counters live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateSpec {
    /// In this process.
    Memory,
    /// In Redis at this URL (shared by every replica using it).
    Redis(String),
}

impl StateSpec {
    /// A connection to this state's Redis for a store kept beside the
    /// counters (approvals, tasks), or `None` when state is in memory.
    /// `origin` names where `state` was set, for the error. The connection
    /// is lazy, so an unreachable Redis refuses calls rather than the start.
    pub fn redis_connection(
        &self,
        origin: &str,
    ) -> Result<Option<redis::aio::ConnectionManager>, ConfigError> {
        let StateSpec::Redis(url) = self else {
            return Ok(None);
        };
        crate::state::redis_connection(url)
            .map(Some)
            .map_err(|e| ConfigError {
                key: format!("policy.state (in {origin})"),
                problem: e.to_string(),
                fix: "use \"memory\" or a reachable redis://HOST:PORT[/DB]".into(),
            })
    }
}

/// A checked policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// What unlisted tools get.
    pub default: DefaultMode,
    /// Where counters live.
    pub state: StateSpec,
    /// What to do when that store is unreachable.
    pub state_failure: StateFailure,
    /// Rules by tool name, `"*"` included, in file order.
    pub tools: IndexMap<String, Rule>,
    /// Where the policy came from, for messages.
    pub origin: String,
}

impl Default for Policy {
    /// Read-only with no rules: what runs without a `[policy]`.
    fn default() -> Self {
        Policy {
            default: DefaultMode::ReadOnly,
            state: StateSpec::Memory,
            state_failure: StateFailure::Closed,
            tools: IndexMap::new(),
            origin: "built-in default (read-only)".into(),
        }
    }
}

pub use super::shown::rule_name;

/// The policy line that enables `tool`, for the refusals that say how to
/// lift them: the one place this advice is written.
pub fn enabling_line(tool: &str) -> String {
    format!(
        "an operator can enable it with [{}] action = \"allow\"",
        rule_name(tool)
    )
}

/// Where the policy lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySource {
    /// No policy anywhere: the built-in read-only default.
    Builtin,
    /// A file of its own (`--policy`, `PVE_MCP_POLICY`, or `[policy] file`).
    File(PathBuf),
    /// The `[policy]` section of the configuration file.
    Config(PathBuf),
}

impl PolicySource {
    /// Finds the policy: `--policy` first, then the config file's
    /// `[policy] file = ...`, then its `[policy]` section.
    pub fn resolve(
        flag: Option<&Path>,
        config: Option<&Path>,
    ) -> Result<PolicySource, ConfigError> {
        if let Some(path) = flag {
            return Ok(PolicySource::File(path.to_path_buf()));
        }
        let Some(config) = config else {
            return Ok(PolicySource::Builtin);
        };
        let (text, name, file) = read_config(config)?;
        let Some(policy) = file.policy else {
            return Ok(PolicySource::Config(config.to_path_buf()));
        };
        match &policy.get_ref().file {
            None => Ok(PolicySource::Config(config.to_path_buf())),
            Some(path) => {
                let section = policy.get_ref();
                if section.default.is_some()
                    || section.state.is_some()
                    || section.state_failure.is_some()
                    || !section.tools.is_empty()
                {
                    return Err(at(
                        &text,
                        &name,
                        "policy.file",
                        path.span(),
                        "a policy file is named and rules are given here too",
                        "put every policy setting in the named file, or drop `file` and keep them here",
                    ));
                }
                let relative = Path::new(path.get_ref());
                let resolved = match config.parent() {
                    Some(dir) if relative.is_relative() => dir.join(relative),
                    _ => relative.to_path_buf(),
                };
                Ok(PolicySource::File(resolved))
            }
        }
    }

    /// The files whose change means "reload".
    pub fn path(&self) -> Option<&Path> {
        match self {
            PolicySource::Builtin => None,
            PolicySource::File(p) | PolicySource::Config(p) => Some(p),
        }
    }

    /// Reads and checks the policy against the component's tools.
    pub fn load(&self, tools: &[ToolInfo]) -> Result<Policy, ConfigError> {
        match self {
            PolicySource::Builtin => Ok(Policy::default()),
            PolicySource::File(path) => {
                let text = read(path, "policy file")?;
                Policy::parse(&text, &path.display().to_string(), tools)
            }
            PolicySource::Config(path) => {
                let (text, name, file) = read_config(path)?;
                match file.policy {
                    None => Ok(Policy {
                        origin: format!("{name} (no [policy] section: read-only)"),
                        ..Policy::default()
                    }),
                    Some(section) => check(section.into_inner(), &text, &name, tools),
                }
            }
        }
    }
}

impl Policy {
    /// Parses and checks the text of a policy file (a `[policy]` section
    /// and nothing else); `name` is how messages name the file.
    pub fn parse(text: &str, name: &str, tools: &[ToolInfo]) -> Result<Policy, ConfigError> {
        let file: PolicyFile = toml::from_str(text).map_err(|e| parse_error(&e, text, name))?;
        let Some(section) = file.policy else {
            return Err(ConfigError {
                key: format!("policy file {name}"),
                problem: "the file has no [policy] section".into(),
                fix: "start the file with [policy] (and rules as [policy.tools.NAME])".into(),
            });
        };
        if let Some(file) = &section.get_ref().file {
            return Err(at(
                text,
                name,
                "policy.file",
                file.span(),
                "`file` names a policy file from the main configuration; a policy file cannot name another",
                "remove `file` from this file",
            ));
        }
        check(section.into_inner(), text, name, tools)
    }
}

/// Reads the configuration file at `path`: its text, its name for
/// messages, and its `[policy]`. The whole file is first checked as
/// start-up checks it, so a misspelt section (`[Policy.tools.x]`) is an
/// unknown key, as at start, and never reads as "no `[policy]` section":
/// a reload would otherwise drop every rule of the running policy.
fn read_config(path: &Path) -> Result<(String, String, ConfigFile), ConfigError> {
    let text = read(path, "--config")?;
    crate::config::check_file_text(&text, path)?;
    let name = path.display().to_string();
    let file: ConfigFile = toml::from_str(&text).map_err(|e| parse_error(&e, &text, &name))?;
    Ok((text, name, file))
}

/// A file holding only a policy: nothing else may be in it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    policy: Option<Spanned<FilePolicy>>,
}

/// The configuration file: its other sections are config.rs's business.
#[derive(Debug, Deserialize)]
struct ConfigFile {
    policy: Option<Spanned<FilePolicy>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePolicy {
    file: Option<Spanned<String>>,
    default: Option<Spanned<DefaultMode>>,
    state: Option<Spanned<String>>,
    state_failure: Option<Spanned<StateFailure>>,
    #[serde(default)]
    tools: IndexMap<Spanned<String>, Spanned<FileRule>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRule {
    action: Option<Spanned<Action>>,
    reason: Option<Spanned<String>>,
    hide: Option<Spanned<bool>>,
    write: Option<Spanned<bool>>,
    approver: Option<Spanned<Approver>>,
    rate_limit: Option<Spanned<String>>,
    rate_limit_per_token: Option<Spanned<String>>,
    rate_limit_global: Option<Spanned<String>>,
    #[serde(default)]
    conditions: Vec<Spanned<FileCondition>>,
    sensitive: Option<Spanned<Vec<String>>>,
    // Read as any value so that a malformed list gets its own message.
    commands: Option<Spanned<toml::Value>>,
    paths: Option<Spanned<toml::Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCondition {
    arg: Spanned<String>,
    op: Spanned<Op>,
    value: Spanned<toml::Value>,
}

const RULE_KEYS: &str = "action (allow, deny, require_approval), reason, hide, write, approver (operator, client), rate_limit, rate_limit_per_token, rate_limit_global, conditions, sensitive, commands, paths";

fn at(
    text: &str,
    file: &str,
    key: &str,
    span: Range<usize>,
    problem: impl Into<String>,
    fix: impl Into<String>,
) -> ConfigError {
    ConfigError {
        key: format!("{key} ({file} line {})", line_of(text, span.start)),
        problem: problem.into(),
        fix: fix.into(),
    }
}

fn parse_error(e: &toml::de::Error, text: &str, file: &str) -> ConfigError {
    let line = e
        .span()
        .map(|s| format!(" line {}", line_of(text, s.start)))
        .unwrap_or_default();
    ConfigError {
        key: format!("{file}{line}"),
        problem: e.message().trim().to_string(),
        fix: format!(
            "[policy] takes default (read-only, deny, allow), state, state_failure (closed, open) and file; each [policy.tools.NAME] takes {RULE_KEYS}; a condition is {{ arg = \"vmid\", op = \"in\", value = [100, 101] }} with op eq, in, not_in, lt, gt or regex"
        ),
    }
}

fn check(
    section: FilePolicy,
    text: &str,
    file: &str,
    tools: &[ToolInfo],
) -> Result<Policy, ConfigError> {
    let state = match &section.state {
        None => StateSpec::Memory,
        Some(url) if url.get_ref() == "memory" => StateSpec::Memory,
        Some(url) => {
            crate::state::redis::check_url(url.get_ref()).map_err(|problem| {
                at(text, file, "policy.state", url.span(), problem, "use \"memory\" (the default) or redis://HOST:PORT[/DB], with the password as redis://:PASSWORD@HOST:PORT")
            })?;
            StateSpec::Redis(url.get_ref().clone())
        }
    };
    let mut rules = IndexMap::new();
    for (name, rule) in section.tools {
        let tool_name = name.get_ref().clone();
        let info = if tool_name == "*" {
            None
        } else {
            match tools.iter().find(|t| t.name == tool_name) {
                Some(info) => Some(info),
                None => {
                    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                    return Err(at(
                        text,
                        file,
                        &rule_name(&tool_name),
                        name.span(),
                        format!("there is no tool named {tool_name:?}"),
                        format!("use \"*\" for every tool, or one of: {}", names.join(", ")),
                    ));
                }
            }
        };
        let checked = check_rule(&tool_name, info, rule.into_inner(), text, file)?;
        rules.insert(tool_name, checked);
    }
    Ok(Policy {
        default: section
            .default
            .map(|d| d.into_inner())
            .unwrap_or(DefaultMode::ReadOnly),
        state,
        state_failure: section
            .state_failure
            .map(|s| s.into_inner())
            .unwrap_or(StateFailure::Closed),
        tools: rules,
        origin: file.to_string(),
    })
}

fn check_rule(
    tool: &str,
    info: Option<&ToolInfo>,
    rule: FileRule,
    text: &str,
    file: &str,
) -> Result<Rule, ConfigError> {
    let name = rule_name(tool);
    let key = |k: &str| format!("{name}.{k}");
    let action = rule.action.as_ref().map(|a| *a.get_ref());
    if let (Some(hide), Some(a)) = (&rule.hide, &rule.action)
        && *hide.get_ref()
    {
        return Err(at(
            text,
            file,
            &key("action"),
            a.span(),
            format!(
                "a hidden tool is always denied, so action = {:?} has no effect",
                a.get_ref().as_str()
            ),
            "keep hide = true alone (with an optional reason), or drop hide",
        ));
    }
    if let Some(reason) = &rule.reason
        && action != Some(Action::Deny)
        && !rule.hide.as_ref().is_some_and(|h| *h.get_ref())
    {
        return Err(at(
            text,
            file,
            &key("reason"),
            reason.span(),
            "a reason is shown only when the rule denies",
            "add action = \"deny\" (or hide = true), or drop the reason",
        ));
    }
    if let Some(write) = &rule.write
        && *write.get_ref()
        && !matches!(action, Some(Action::Allow | Action::RequireApproval))
    {
        return Err(at(
            text,
            file,
            &key("write"),
            write.span(),
            "write = true lets the tool send non-GET requests, which only an explicit allow may grant",
            "add action = \"allow\" (or \"require_approval\") to this rule",
        ));
    }
    if let Some(approver) = &rule.approver
        && matches!(action, Some(Action::Allow | Action::Deny))
    {
        return Err(at(
            text,
            file,
            &key("approver"),
            approver.span(),
            format!(
                "approver = {:?} only applies to require_approval, and this rule says action = {:?}",
                approver.get_ref().as_str(),
                action.map(Action::as_str).unwrap_or_default()
            ),
            "set action = \"require_approval\", or drop approver",
        ));
    }
    let mut limits = Vec::new();
    for (scope, spec) in [
        (Scope::Session, &rule.rate_limit),
        (Scope::Token, &rule.rate_limit_per_token),
        (Scope::Global, &rule.rate_limit_global),
    ] {
        if let Some(spec) = spec {
            let rate = Rate::parse(spec.get_ref()).map_err(|problem| {
                at(text, file, &key(scope.key()), spec.span(), problem, "e.g. rate_limit = \"30/minute\" (per session), rate_limit_per_token = \"100/hour\", rate_limit_global = \"1000/day\"")
            })?;
            limits.push(RateLimit {
                name: key(scope.key()),
                scope,
                rate,
            });
        }
    }
    let properties = info
        .and_then(|t| t.input_schema.get("properties"))
        .and_then(|p| p.as_object());
    let mut conditions = Vec::new();
    for (i, c) in rule.conditions.into_iter().enumerate() {
        let c = c.into_inner();
        let cname = format!("{name}.conditions[{i}]");
        let arg = c.arg.get_ref().clone();
        if let (Some(info), Some(props)) = (info, properties)
            && !props.contains_key(&arg)
        {
            let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
            names.sort_unstable();
            return Err(at(
                text,
                file,
                &format!("{cname}.arg"),
                c.arg.span(),
                format!("{} has no argument {arg:?}", info.name),
                format!("its arguments are: {}", names.join(", ")),
            ));
        }
        let condition = Condition::new(cname.clone(), arg, *c.op.get_ref(), c.value.get_ref())
            .map_err(|problem| {
                at(
                    text,
                    file,
                    &format!("{cname}.value"),
                    c.value.span(),
                    problem,
                    "see the condition examples in docs/policy.md",
                )
            })?;
        conditions.push(condition);
    }
    let sensitive = match &rule.sensitive {
        None => Vec::new(),
        Some(list) => check_sensitive(info, action, list.get_ref()).map_err(|(problem, fix)| {
            at(text, file, &key("sensitive"), list.span(), problem, fix)
        })?,
    };
    let commands = match &rule.commands {
        None => None,
        Some(list) => Some(super::inside::parse_commands(info, list.get_ref()).map_err(
            |(problem, fix)| at(text, file, &key("commands"), list.span(), problem, fix),
        )?),
    };
    let paths =
        match &rule.paths {
            None => None,
            Some(list) => Some(super::inside::parse_paths(info, list.get_ref()).map_err(
                |(problem, fix)| at(text, file, &key("paths"), list.span(), problem, fix),
            )?),
        };
    Ok(Rule {
        name,
        action,
        sensitive,
        commands,
        paths,
        reason: rule.reason.map(|r| r.into_inner()),
        hide: rule.hide.map(|h| h.into_inner()),
        write: rule.write.map(|w| w.into_inner()),
        approver: rule.approver.map(|a| a.into_inner()),
        limits,
        conditions,
    })
}

/// The classes a rule's `sensitive` list opens, or the problem and fix:
/// only a tool's own rule that lets it run can open a class, only a tool
/// whose route is its call's own request reaches one, and every name must
/// be a class.
fn check_sensitive(
    info: Option<&ToolInfo>,
    action: Option<Action>,
    names: &[String],
) -> Result<Vec<&'static str>, (String, String)> {
    let Some(info) = info else {
        return Err((
            "the \"*\" table never opens a sensitive class".into(),
            "name the classes in the table of the tool that reaches them, [policy.tools.pve_api_request]".into(),
        ));
    };
    if !info.routes.iter().any(crate::route::Route::is_call_request) {
        return Err((
            format!("{} sends only the requests it declares, none in a sensitive class", info.name),
            "drop sensitive here; it applies to a tool that sends the request its call names (pve_api_request)".into(),
        ));
    }
    if !matches!(action, Some(Action::Allow | Action::RequireApproval)) {
        return Err((
            "sensitive opens classes to calls this rule lets run, and it names no action that does"
                .into(),
            "add action = \"allow\" (or \"require_approval\") to this rule".into(),
        ));
    }
    names
        .iter()
        .map(|name| {
            crate::route::sensitive::class(name)
                .map(|c| c.name)
                .ok_or_else(|| {
                    (
                        format!("{name:?} is not a sensitive class"),
                        format!("the classes are: {}", crate::route::sensitive::names()),
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::effective::tests::tools;
    use super::*;

    fn error(text: &str) -> ConfigError {
        Policy::parse(text, "p.toml", &tools()).unwrap_err()
    }

    #[test]
    fn contradictions_are_refused_with_their_line() {
        let e = error("[policy.tools.look]\nhide = true\naction = \"allow\"\n");
        assert!(
            e.key.contains("policy.tools.look.action (p.toml line 3)"),
            "{e}"
        );
        let e = error("[policy.tools.look]\nreason = \"why\"\n");
        assert!(
            e.key.contains("policy.tools.look.reason (p.toml line 2)"),
            "{e}"
        );
        let e = error("[policy]\nfile = \"other.toml\"\n");
        assert!(e.problem.contains("cannot name another"), "{e}");
        let e = error("[pve]\nbase_url = \"https://x\"\n");
        assert!(e.problem.contains("unknown field `pve`"), "{e}");
        let e = error("");
        assert!(e.problem.contains("no [policy] section"), "{e}");
        let e = error("[policy.tools.look]\nrate_limit_global = \"0/day\"\n");
        assert!(e.problem.contains("allows no calls"), "{e}");
    }

    #[test]
    fn the_config_file_holds_or_names_the_policy() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("c.toml");
        std::fs::write(&config, "[sandbox]\nmemory_mib = 64\n").unwrap();
        assert_eq!(
            PolicySource::resolve(None, Some(&config)).unwrap(),
            PolicySource::Config(config.clone())
        );
        assert_eq!(
            PolicySource::resolve(None, None).unwrap(),
            PolicySource::Builtin
        );
        std::fs::write(&config, "[policy]\nfile = \"p.toml\"\n").unwrap();
        assert_eq!(
            PolicySource::resolve(None, Some(&config)).unwrap(),
            PolicySource::File(dir.path().join("p.toml"))
        );
        let flag = dir.path().join("flag.toml");
        assert_eq!(
            PolicySource::resolve(Some(&flag), Some(&config)).unwrap(),
            PolicySource::File(flag)
        );
        std::fs::write(&config, "[policy]\nfile = \"p.toml\"\ndefault = \"deny\"\n").unwrap();
        let e = PolicySource::resolve(None, Some(&config)).unwrap_err();
        assert!(
            e.key.contains("policy.file") && e.key.contains("line 2"),
            "{e}"
        );
    }

    /// A misspelt section is an unknown key, as at start: never "no
    /// `[policy]`", which would drop every rule on a reload.
    #[test]
    fn the_config_file_is_checked_as_strictly_as_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("c.toml");
        std::fs::write(
            &config,
            "[Policy.tools.pve_get_version]\naction = \"deny\"\n",
        )
        .unwrap();
        let e = PolicySource::resolve(None, Some(&config)).unwrap_err();
        assert!(e.problem.contains("unknown field `Policy`"), "{e}");
        assert!(e.key.contains("line 1"), "{e}");
        let e = PolicySource::Config(config.clone()).load(&[]).unwrap_err();
        assert!(e.problem.contains("unknown field `Policy`"), "{e}");
        // The same message as start-up's file check.
        assert_eq!(
            crate::config::check_file_text(&std::fs::read_to_string(&config).unwrap(), &config)
                .unwrap_err(),
            e
        );
        std::fs::write(&config, "[policy]\ndefualt = \"deny\"\n").unwrap();
        let e = PolicySource::Config(config).load(&[]).unwrap_err();
        assert!(e.problem.contains("unknown field `defualt`"), "{e}");
    }
}
