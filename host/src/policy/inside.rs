//! Commands and files inside guests: which tools run a command or name a
//! file in a guest, the rule keys `commands` and `paths` that bound them,
//! and the per-call check [`super::Engine::decide`] makes before anything
//! runs.
//!
//! A tool runs guest commands when its input schema has a `command`
//! argument of type array (an argv list); it names a guest file when its
//! schema has a `path` argument of type string and it reaches the guest
//! agent's `file-read` or `file-write` (a declared route). Both are read
//! from what the component declares, never from a tool's name.

use serde_json::Value;

use super::commands::{self, ArgvPattern, CommandPatterns};
use super::paths::{GuestPath, PathPattern, PathPatterns};
use super::shown::{rule_name, show_list, show_value};
use crate::tools::{JsonObject, ToolInfo};

/// The argument holding a guest command's argv.
pub const COMMAND_ARG: &str = "command";
/// The argument holding a guest file's path.
pub const PATH_ARG: &str = "path";

/// Whether the tool's argument `name` is declared of JSON type `ty`, alone
/// or among others (`"type": ["array", "null"]`).
fn has_type(tool: &ToolInfo, name: &str, ty: &str) -> bool {
    let declared = tool
        .input_schema
        .get("properties")
        .and_then(|p| p.get(name))
        .and_then(|a| a.get("type"));
    match declared {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(types)) => types.iter().any(|t| t.as_str() == Some(ty)),
        _ => false,
    }
}

/// Whether the tool takes an argv to run in a guest: a `command`
/// argument of type array.
pub fn runs_commands(tool: &ToolInfo) -> bool {
    has_type(tool, COMMAND_ARG, "array")
}

/// Whether the tool takes a `path` argument the policy can bound: a
/// string, and not a tool whose route is its call's own request (whose
/// `path` is a Proxmox API path, judged by its sensitive classes).
pub fn takes_path(tool: &ToolInfo) -> bool {
    has_type(tool, PATH_ARG, "string")
        && !tool.routes.iter().any(crate::route::Route::is_call_request)
}

/// Whether the tool names a file inside a guest: it takes a `path` and
/// declares the guest agent's `file-read` or `file-write`.
pub fn names_guest_files(tool: &ToolInfo) -> bool {
    takes_path(tool)
        && tool.routes.iter().any(|r| {
            r.could_send(&http::Method::GET, &["agent", "file-read"])
                || r.could_send(&http::Method::POST, &["agent", "file-write"])
        })
}

/// What a rule's `commands` or `paths` must be, for config errors.
const COMMANDS_SHAPE: &str = "commands = [[\"systemctl\", \"status\", \"*\"], [\"df\", \"-h\"]]: a list of argv patterns, each a list of strings, where \"*\" is one argument and a last \"**\" the rest";
const PATHS_SHAPE: &str = "paths = [\"/var/log/*\", \"/srv/app/**\"]: a list of absolute path patterns, where \"*\" is within one segment and a segment \"**\" any number of segments";

/// Checks a rule's `commands` for `tool` (`None`: the `"*"` table); the
/// error is the problem and the fix.
pub fn parse_commands(
    tool: Option<&ToolInfo>,
    value: &toml::Value,
) -> Result<CommandPatterns, (String, String)> {
    let tool = own_table_only(tool, "commands", "pve_guest_exec")?;
    if !runs_commands(tool) {
        return Err((
            format!(
                "{} takes no command to run in a guest (no `command` argument of type array)",
                tool.name
            ),
            "drop commands here; it applies to tools such as pve_guest_exec".into(),
        ));
    }
    let shape = || COMMANDS_SHAPE.to_string();
    let toml::Value::Array(items) = value else {
        return Err((format!("commands is a {}", value.type_str()), shape()));
    };
    if items.is_empty() {
        return Err((
            "an empty commands list allows no command".into(),
            format!(
                "to refuse every call, set action = \"deny\" in [{}]; otherwise list the commands",
                rule_name(&tool.name)
            ),
        ));
    }
    let mut patterns = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = |problem: String| format!("commands[{i}]: {problem}");
        let toml::Value::Array(elements) = item else {
            return Err((
                at(format!("is a {}, not a list of strings", item.type_str())),
                shape(),
            ));
        };
        let written = elements
            .iter()
            .map(|e| match e {
                toml::Value::String(s) => Ok(s.clone()),
                other => Err((
                    at(format!("holds a {}, not a string", other.type_str())),
                    "quote every element, numbers too: [\"journalctl\", \"-n\", \"50\"]".into(),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        patterns.push(ArgvPattern::parse(&written).map_err(|(p, f)| (at(p), f))?);
    }
    Ok(CommandPatterns::new(patterns))
}

/// Checks a rule's `paths` for `tool` (`None`: the `"*"` table).
pub fn parse_paths(
    tool: Option<&ToolInfo>,
    value: &toml::Value,
) -> Result<PathPatterns, (String, String)> {
    let tool = own_table_only(tool, "paths", "pve_guest_file_read")?;
    if !takes_path(tool) {
        return Err((
            format!(
                "{} takes no file path (no `path` argument of type string)",
                tool.name
            ),
            "drop paths here; it applies to tools such as pve_guest_file_read".into(),
        ));
    }
    let shape = || PATHS_SHAPE.to_string();
    let toml::Value::Array(items) = value else {
        return Err((format!("paths is a {}", value.type_str()), shape()));
    };
    if items.is_empty() {
        return Err((
            "an empty paths list allows no file".into(),
            format!(
                "to refuse every call, set action = \"deny\" in [{}]; otherwise list the paths",
                rule_name(&tool.name)
            ),
        ));
    }
    let patterns = items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            toml::Value::String(s) => {
                PathPattern::parse(s).map_err(|(p, f)| (format!("paths[{i}]: {p}"), f))
            }
            other => Err((
                format!("paths[{i}]: is a {}, not a string", other.type_str()),
                shape(),
            )),
        })
        .collect::<Result<_, _>>()?;
    Ok(PathPatterns::new(patterns))
}

/// The tool of a tool's own table; the `"*"` table never bounds commands
/// or files: one list for every tool would be wrong for all but one, and
/// it would read as a bound on tools it does not reach.
fn own_table_only<'t>(
    tool: Option<&'t ToolInfo>,
    key: &str,
    example: &str,
) -> Result<&'t ToolInfo, (String, String)> {
    tool.ok_or_else(|| {
        (
            format!("{key} applies only in a tool's own table, and this is the \"*\" table"),
            format!(
                "move {key} to the table of each tool it bounds, e.g. [policy.tools.{example}]"
            ),
        )
    })
}

/// Why this call may not run for its command or path, with the rule that
/// says so, or `None`. `commands` and `paths` are the tool's own rule's.
pub fn refusal(
    tool: &ToolInfo,
    commands: Option<&CommandPatterns>,
    paths: Option<&PathPatterns>,
    arguments: &JsonObject,
) -> Option<(String, String)> {
    let own = rule_name(&tool.name);
    if runs_commands(tool)
        && let Some(why) = command_refusal(&own, commands, arguments.get(COMMAND_ARG))
    {
        return Some((format!("{own}.commands"), why));
    }
    if (paths.is_some() || names_guest_files(tool))
        && let Some(why) = path_refusal(&own, paths, arguments.get(PATH_ARG))
    {
        return Some((format!("{own}.paths"), why));
    }
    None
}

fn command_refusal(
    own: &str,
    commands: Option<&CommandPatterns>,
    value: Option<&Value>,
) -> Option<String> {
    let argv: Vec<String> = match value {
        Some(Value::Array(items)) if !items.is_empty() => {
            match items.iter().map(|v| v.as_str().map(str::to_string)).collect() {
                Some(argv) => argv,
                None => return Some("argument `command` must be a list of strings (the program, then its arguments); nothing was run".into()),
            }
        }
        Some(Value::Array(_)) => {
            return Some("argument `command` is empty: give the program, then its arguments; nothing was run".into());
        }
        _ => {
            return Some("argument `command` must be a list of strings (the program, then its arguments); nothing was run".into());
        }
    };
    if let Some(why) = commands::shell_refusal(&argv, commands) {
        return Some(why);
    }
    let m = commands?.mismatch(&argv)?;
    Some(format!(
        "command {} matches no pattern in [{own}] commands; the closest is {}, which {}",
        show_list(&argv),
        m.closest,
        m.differs
    ))
}

fn path_refusal(own: &str, paths: Option<&PathPatterns>, value: Option<&Value>) -> Option<String> {
    let Some(Value::String(path)) = value else {
        return Some("argument `path` must be a string, an absolute path in the guest; nothing was read or written".into());
    };
    let parsed = match GuestPath::parse(path) {
        Ok(parsed) => parsed,
        Err(why) => {
            return Some(format!(
                "path {} is refused: {why}. Give the file's absolute path without . or .. segments (e.g. /var/log/syslog or C:\\Logs\\app.log)",
                show_value(path)
            ));
        }
    };
    let paths = paths?;
    if paths.allows(&parsed) {
        return None;
    }
    let written: Vec<String> = paths
        .patterns()
        .iter()
        .map(|p| p.written().to_string())
        .collect();
    Some(format!(
        "path {} matches no pattern in [{own}] paths: {}",
        show_value(path),
        show_list(&written)
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::policy::rules::Policy;
    use crate::policy::unbounded::warnings;
    use serde_json::json;

    /// `pve_guest_exec`: a `command` argv.
    pub(crate) fn exec_tool() -> ToolInfo {
        let mut t = crate::policy::effective::tests::writer(
            "pve_guest_exec",
            ("POST", "/nodes/{node}/qemu/{vmid}/agent/exec"),
        );
        t.input_schema = json!({"type": "object", "properties": {
            "vmid": {"type": "integer"}, "node": {"type": "string"},
            "command": {"type": "array", "items": {"type": "string"}},
            "input": {"type": "string"}}})
        .as_object()
        .cloned()
        .unwrap();
        t
    }

    /// `pve_guest_file_read`: a `path`, through the guarded read.
    pub(crate) fn read_tool() -> ToolInfo {
        let mut t = crate::policy::effective::tests::tool("pve_guest_file_read", true);
        t.routes = vec![
            crate::route::Route::parse("GET", "/nodes/{node}/qemu/{vmid}/agent/file-read").unwrap(),
        ];
        t.input_schema = json!({"type": "object", "properties": {
            "vmid": {"type": "integer"}, "node": {"type": "string"},
            "path": {"type": "string"}}})
        .as_object()
        .cloned()
        .unwrap();
        t
    }

    fn all() -> Vec<ToolInfo> {
        let mut all = crate::policy::effective::tests::tools();
        all.push(exec_tool());
        all.push(read_tool());
        all
    }

    fn parse(text: &str) -> Result<Policy, crate::error::ConfigError> {
        Policy::parse(text, "p.toml", &all())
    }

    fn refused(text: &str, tool: &ToolInfo, args: Value) -> Option<(String, String)> {
        let policy = parse(text).unwrap_or_else(|e| panic!("{e}"));
        let e = policy.effective(tool);
        refusal(tool, e.commands, e.paths, args.as_object().unwrap())
    }

    const EXEC: &str = "[policy.tools.pve_guest_exec]\naction = \"allow\"\n\
        commands = [[\"systemctl\", \"status\", \"*\"], [\"df\", \"-h\"], [\"journalctl\", \"-u\", \"*\", \"-n\", \"*\", \"--no-pager\"]]\n";
    const READ: &str = "[policy.tools.pve_guest_file_read]\n\
        paths = [\"/var/log/*\", \"/etc/hostname\", \"/srv/app/**\"]\n";

    #[test]
    fn tools_are_known_by_their_schema_and_routes() {
        assert!(runs_commands(&exec_tool()));
        let mut nullable = exec_tool();
        nullable.input_schema["properties"]["command"]["type"] = json!(["array", "null"]);
        assert!(runs_commands(&nullable));
        assert!(!runs_commands(&read_tool()));
        assert!(names_guest_files(&read_tool()));
        // A `path` that is not a guest file: a Proxmox ACL path.
        let mut acl = read_tool();
        acl.routes.clear();
        assert!(takes_path(&acl) && !names_guest_files(&acl));
        // The call's own request: its `path` is an API path.
        let mut api = read_tool();
        api.routes = vec![
            crate::route::Route::parse(crate::route::CALL_REQUEST.0, crate::route::CALL_REQUEST.1)
                .unwrap(),
        ];
        assert!(!takes_path(&api));
    }

    #[test]
    fn a_command_no_pattern_matches_is_refused_naming_the_closest() {
        let exec = exec_tool();
        assert_eq!(
            refused(
                EXEC,
                &exec,
                json!({"command": ["systemctl", "status", "nginx"]})
            ),
            None
        );
        let (rule, why) = refused(
            EXEC,
            &exec,
            json!({"command": ["systemctl", "restart", "nginx"]}),
        )
        .unwrap();
        assert_eq!(rule, "policy.tools.pve_guest_exec.commands");
        assert_eq!(
            why,
            r#"command ["systemctl","restart","nginx"] matches no pattern in [policy.tools.pve_guest_exec] commands; the closest is ["systemctl","status","*"], which wants "status" at argument 2, not "restart""#
        );
        for bad in [json!(null), json!("df -h"), json!([]), json!(["df", 1])] {
            let args = if bad.is_null() {
                json!({})
            } else {
                json!({ "command": bad })
            };
            let (_, why) = refused(EXEC, &exec, args).unwrap();
            assert!(why.contains("argument `command`"), "{why}");
        }
    }

    #[test]
    fn without_commands_anything_but_a_shell_runs() {
        let open = "[policy.tools.pve_guest_exec]\naction = \"allow\"\n";
        let exec = exec_tool();
        assert_eq!(
            refused(open, &exec, json!({"command": ["rm", "-rf", "/tmp/x"]})),
            None
        );
        let (rule, why) =
            refused(open, &exec, json!({"command": ["/bin/sh", "-c", "id"]})).unwrap();
        assert_eq!(rule, "policy.tools.pve_guest_exec.commands");
        assert!(why.contains("is a shell"), "{why}");
        let (_, why) = refused(EXEC, &exec, json!({"command": ["sudo", "bash"]})).unwrap();
        assert!(why.contains("through the launcher \"sudo\""), "{why}");
    }

    #[test]
    fn a_path_must_be_normalised_and_match() {
        let read = read_tool();
        assert_eq!(
            refused(READ, &read, json!({"path": "/var/log/syslog"})),
            None
        );
        assert_eq!(refused(READ, &read, json!({"path": "/srv/app/a/b"})), None);
        let (rule, why) = refused(READ, &read, json!({"path": "/etc/shadow"})).unwrap();
        assert_eq!(rule, "policy.tools.pve_guest_file_read.paths");
        assert_eq!(
            why,
            r#"path "/etc/shadow" matches no pattern in [policy.tools.pve_guest_file_read] paths: ["/var/log/*","/etc/hostname","/srv/app/**"]"#
        );
        let (_, why) = refused(READ, &read, json!({"path": "/var/log/../../etc/shadow"})).unwrap();
        assert!(
            why.starts_with(
                r#"path "/var/log/../../etc/shadow" is refused: it has a ".." segment"#
            ),
            "{why}"
        );
        // Without paths the path is still normalised: the policy does not
        // trust the component to refuse it.
        let open = "[policy.tools.pve_guest_file_read]\naction = \"allow\"\n";
        assert_eq!(refused(open, &read, json!({"path": "/etc/shadow"})), None);
        assert!(refused(open, &read, json!({"path": "etc/shadow"})).is_some());
        assert!(refused(open, &read, json!({"path": 7})).is_some());
        assert!(refused(open, &read, json!({})).is_some());
    }

    fn config_error(text: &str) -> crate::error::ConfigError {
        parse(text).unwrap_err()
    }

    #[test]
    fn malformed_lists_are_config_errors() {
        let t = "[policy.tools.pve_guest_exec]\naction = \"allow\"\n";
        for (list, says) in [
            ("commands = \"df -h\"", "commands is a string"),
            (
                "commands = [\"df\", \"-h\"]",
                "commands[0]: is a string, not a list of strings",
            ),
            (
                "commands = [[\"journalctl\", \"-n\", 50]]",
                "commands[0]: holds a integer",
            ),
            ("commands = [[]]", "commands[0]: an empty pattern"),
            ("commands = []", "an empty commands list"),
            (
                "commands = [[\"df\"], [\"ls\", \"**\", \"-l\"]]",
                "commands[1]: \"**\" stands for the rest",
            ),
        ] {
            let e = config_error(&format!("{t}{list}\n"));
            assert!(
                e.key
                    .contains("policy.tools.pve_guest_exec.commands (p.toml line 3)")
                    && e.problem.contains(says)
                    && !e.fix.is_empty(),
                "{list}: {e}"
            );
        }
        let long: Vec<String> = (0..65).map(|i| format!("\"a{i}\"")).collect();
        let e = config_error(&format!("{t}commands = [[{}]]\n", long.join(",")));
        assert!(e.problem.contains("more than 64"), "{e}");
        let r = "[policy.tools.pve_guest_file_read]\n";
        for (list, says) in [
            ("paths = \"/var/log/*\"", "paths is a string"),
            ("paths = [[\"/var\"]]", "paths[0]: is a array"),
            ("paths = []", "an empty paths list"),
            ("paths = [\"var/log/*\"]", "not a normalised absolute path"),
            ("paths = [\"/var/log/**.log\"]", "whole segments only"),
            ("paths = [\"\"]", "not absolute"),
        ] {
            let e = config_error(&format!("{r}{list}\n"));
            assert!(
                e.key
                    .contains("policy.tools.pve_guest_file_read.paths (p.toml line 2)")
                    && e.problem.contains(says),
                "{list}: {e}"
            );
        }
        let e = config_error(&format!("{r}paths = [\"{}\"]\n", "/a".repeat(65)));
        assert!(e.problem.contains("more than 64"), "{e}");
    }

    #[test]
    fn the_keys_belong_to_the_tool_they_bound() {
        let e = config_error("[policy.tools.\"*\"]\ncommands = [[\"df\"]]\n");
        assert!(
            e.key.contains("policy.tools.\"*\".commands")
                && e.problem.contains("only in a tool's own table")
                && e.fix.contains("[policy.tools.pve_guest_exec]"),
            "{e}"
        );
        let e = config_error("[policy.tools.\"*\"]\npaths = [\"/var/log/*\"]\n");
        assert!(e.problem.contains("only in a tool's own table"), "{e}");
        let e = config_error("[policy.tools.look]\ncommands = [[\"df\"]]\n");
        assert!(e.problem.contains("look takes no command"), "{e}");
        let e = config_error("[policy.tools.look]\npaths = [\"/x\"]\n");
        assert!(e.problem.contains("look takes no file path"), "{e}");
    }

    /// A reload puts new lists in force, and a malformed one is rejected
    /// with the old lists kept.
    #[tokio::test]
    async fn the_lists_reload_with_the_policy() {
        use crate::policy::reload::{Origin, reload};
        use crate::policy::{Decision, Engine};
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        let write = |commands: &str| {
            std::fs::write(
                &file,
                format!(
                    "[policy.tools.pve_guest_exec]\naction = \"allow\"\ncommands = {commands}\n"
                ),
            )
            .unwrap()
        };
        let origin = Origin {
            flag: Some(file.clone()),
            config: None,
        };
        let tools = all();
        let exec = exec_tool();
        let engine = Engine::default();
        let caller = crate::caller::Caller::stdio();
        let df = json!({"command": ["df", "-h"]})
            .as_object()
            .cloned()
            .unwrap();
        let runs = |d: Decision| matches!(d, Decision::Allow(_));
        write("[[\"df\", \"-h\"]]");
        assert!(reload(&engine, &origin, &tools, "test"));
        assert!(runs(engine.decide(&caller, &exec, &df).await));
        write("[[\"uptime\"]]");
        assert!(reload(&engine, &origin, &tools, "test"));
        assert!(!runs(engine.decide(&caller, &exec, &df).await));
        write("[[\"**\", \"x\"]]");
        assert!(!reload(&engine, &origin, &tools, "test"));
        let kept = engine.decide(&caller, &exec, &df).await;
        assert_eq!(kept.rule(), "policy.tools.pve_guest_exec.commands");
    }

    #[test]
    fn policy_check_warns_about_unbounded_tools() {
        let tools = all();
        let warned = |text: &str| warnings(&parse(text).unwrap(), &tools);
        let open = warned(
            "[policy.tools.pve_guest_exec]\naction = \"allow\"\n[policy.tools.pve_guest_file_read]\naction = \"allow\"\n",
        );
        assert_eq!(open.len(), 2, "{open:?}");
        assert!(
            open[0].starts_with("pve_guest_exec may run any command"),
            "{open:?}"
        );
        assert!(
            open[1].starts_with("pve_guest_file_read may touch any file"),
            "{open:?}"
        );
        assert!(warned(&format!("{EXEC}{READ}")).is_empty());
        // A denied tool runs nothing: no warning.
        let denied = warned(
            "[policy.tools.pve_guest_exec]\naction = \"deny\"\n[policy.tools.pve_guest_file_read]\naction = \"deny\"\n",
        );
        assert!(denied.is_empty(), "{denied:?}");
    }
}
