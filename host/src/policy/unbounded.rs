//! What `pve-mcp policy check` warns about inside guests: a tool that may
//! run any command or touch any file because its rule lists none.

use super::inside::{names_guest_files, runs_commands};
use super::rules::{Action, Policy, rule_name};
use crate::tools::ToolInfo;

/// What `pve-mcp policy check` warns about: a tool that runs guest
/// commands with no `commands` list, or names guest files with no
/// `paths` list, and is not denied outright.
pub fn warnings(policy: &Policy, tools: &[ToolInfo]) -> Vec<String> {
    let mut out = Vec::new();
    for tool in tools {
        let e = policy.effective(tool);
        if e.action == Action::Deny {
            continue;
        }
        let table = rule_name(&tool.name);
        if runs_commands(tool) && e.commands.is_none() {
            out.push(format!(
                "{} may run any command in a guest (every program but a shell): [{table}] has no commands list; add one, e.g. commands = [[\"systemctl\", \"status\", \"*\"]]",
                tool.name
            ));
        }
        if names_guest_files(tool) && e.paths.is_none() {
            out.push(format!(
                "{} may touch any file in a guest: [{table}] has no paths list; add one, e.g. paths = [\"/var/log/*\"]",
                tool.name
            ));
        }
    }
    out
}
