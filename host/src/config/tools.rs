//! The `[tools]` section: which tools the server offers at all, whatever
//! the policy allows. `toolsets` (`PVE_MCP_TOOLSETS`, `--toolsets`) names
//! the toolsets enabled (`default`: those offered when it is unset, every
//! one but [`crate::tools::OPT_IN_TOOLSETS`]; `all`: every one); `read_only`
//! (`PVE_MCP_READ_ONLY`, `--read-only`) keeps only read-tier tools. Names
//! are checked against the component's toolsets once it is loaded
//! ([`crate::exposure`]), since only it knows them.

use super::layered::Layers;
use super::section::section;
use crate::error::ConfigError;

/// The variable that overrides `[tools] toolsets`: names, comma-separated.
pub const TOOLSETS_ENV: &str = "PVE_MCP_TOOLSETS";
/// The variable that overrides `[tools] read_only`.
pub const READ_ONLY_ENV: &str = "PVE_MCP_READ_ONLY";

section! {
    /// `[tools]` as written in the file.
    file FileTools;
    /// Which tools the server offers.
    #[derive(Debug, Clone, PartialEq, Eq)]
    settings ToolSettings in "tools";

    /// The toolsets enabled, as given (checked at start-up against the
    /// component's); `None`: the default ones.
    toolsets: Option<Vec<String>> = custom(read_toolsets, None)
        from toolsets: Option<Vec<String>>;
    /// Only read-tier tools are listed and run.
    read_only: bool = flag(default false, env READ_ONLY_ENV) from read_only;
}

/// `toolsets` from the variable (comma-separated) or the file (a list).
fn read_toolsets(
    file: &FileTools,
    layers: &Layers<'_>,
) -> Result<Option<Vec<String>>, ConfigError> {
    let (names, key) = match layers.env_sourced(TOOLSETS_ENV) {
        Some(env) => (split(&env.value), env.key),
        None => match &file.toolsets {
            Some(list) => (list.clone(), layers.file_key("toolsets")),
            None => return Ok(None),
        },
    };
    parse_list(names, &key).map(Some)
}

/// `a,b` as names, trimmed, empty ones dropped.
pub fn split(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Checks a list of toolset names given under `key`: at least one, each a
/// toolset name. Whether the component has them is checked once it loads.
pub fn parse_list(names: Vec<String>, key: &str) -> Result<Vec<String>, ConfigError> {
    if names.is_empty() {
        return Err(ConfigError::new(
            key,
            "names no toolset",
            "name one or more, e.g. guests,snapshots or default,agent (all: every toolset), or \
             leave it out for the default ones",
        ));
    }
    if let Some(bad) = names.iter().find(|n| !crate::tools::valid_toolset(n)) {
        return Err(ConfigError::new(
            key,
            format!("{bad:?} is not a toolset name"),
            "toolsets are lower-case names such as guests, snapshots, backups, tasks, storage, \
             cluster, access, api, agent, provisioning, nodes, replication, pools, firewall, ha and \
             discover, or the words default and all (`pve-mcp tools` shows each tool's)",
        ));
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::layered::test_env::env;

    #[test]
    fn toolsets_come_from_the_variable_over_the_file_and_are_checked() {
        let file = FileTools {
            toolsets: Some(vec!["guests".into()]),
            read_only: Some(true),
        };
        let s = ToolSettings::load(&file, "f.toml", &env(&[])).unwrap();
        assert_eq!(s.toolsets, Some(vec!["guests".to_string()]));
        assert!(s.read_only);
        let s = ToolSettings::load(
            &file,
            "f.toml",
            &env(&[(TOOLSETS_ENV, "guests, tasks,"), (READ_ONLY_ENV, "0")]),
        )
        .unwrap();
        assert_eq!(s.toolsets, Some(vec!["guests".into(), "tasks".into()]));
        assert!(!s.read_only);
        let e = ToolSettings::load(&file, "f.toml", &env(&[(TOOLSETS_ENV, " , ")])).unwrap_err();
        assert!(e.to_string().contains("names no toolset"), "{e}");
        let e = ToolSettings::load(&file, "f.toml", &env(&[(TOOLSETS_ENV, "Guests")])).unwrap_err();
        assert!(e.to_string().contains(TOOLSETS_ENV), "{e}");
        assert_eq!(
            ToolSettings::load(&FileTools::default(), "f.toml", &env(&[])).unwrap(),
            ToolSettings::default()
        );
    }
}
