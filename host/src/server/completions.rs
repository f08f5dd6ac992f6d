//! `completion/complete` for the prompts' arguments and the resource
//! templates' variables: node names, vmids, storages and recent tasks'
//! UPIDs, each fetched by its list tool's call (see [`Reads`]) under that
//! tool's policy, so a caller is offered only what it could list itself;
//! cluster and tool names come from the server's own configuration.

use rmcp::ErrorData;
use rmcp::model::{CompleteRequestParams, CompletionInfo, Reference};
use serde_json::{Value, json};

use crate::server::prompts;
use crate::server::reads::Reads;
use crate::server::resources;
use crate::tools::JsonObject;

/// The most values one answer holds (the protocol's own bound).
pub const MAX_VALUES: usize = CompletionInfo::MAX_VALUES;

/// What an argument names, and so where its values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A configured cluster.
    Cluster,
    /// A guest, by vmid (its name filters too).
    Vmid,
    /// A node.
    Node,
    /// A storage.
    Storage,
    /// A recent task's UPID.
    Upid,
    /// A comma-separated list of tool names.
    Tools,
}

impl Kind {
    /// The kind of a variable or argument called `name`.
    pub fn of(name: &str) -> Option<Kind> {
        Some(match name {
            "cluster" => Kind::Cluster,
            "vmid" => Kind::Vmid,
            "node" => Kind::Node,
            "storage" => Kind::Storage,
            "upid" => Kind::Upid,
            "tools" => Kind::Tools,
            _ => return None,
        })
    }
}

/// The variables each resource template has.
fn template_variables(uri: &str) -> Option<&'static [&'static str]> {
    Some(match uri {
        "pve://{cluster}/guests/{vmid}" => &["cluster", "vmid"],
        "pve://{cluster}/nodes/{node}" => &["cluster", "node"],
        "pve://{cluster}/tasks/{upid}/log" => &["cluster", "upid"],
        _ => return None,
    })
}

/// The values for one request; an unknown prompt, template or argument is
/// an invalid-params error naming it.
pub async fn complete(
    reads: &Reads<'_>,
    request: &CompleteRequestParams,
) -> Result<CompletionInfo, ErrorData> {
    let argument = request.argument.name.as_str();
    let names: Vec<&str> = match &request.r#ref {
        Reference::Prompt(prompt) => prompts::argument_names(&prompt.name).ok_or_else(|| {
            ErrorData::invalid_params(
                format!(
                    "Unknown prompt {:?}: this server's prompts are {}",
                    prompt.name,
                    prompts::NAMES.join(", ")
                ),
                None,
            )
        })?,
        Reference::Resource(template) => template_variables(&template.uri)
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!(
                        "Unknown resource template {:?}: this server's are \
                         pve://{{cluster}}/guests/{{vmid}}, pve://{{cluster}}/nodes/{{node}} and \
                         pve://{{cluster}}/tasks/{{upid}}/log",
                        template.uri
                    ),
                    None,
                )
            })?
            .to_vec(),
        _ => return Ok(empty()),
    };
    let Some(kind) = names
        .contains(&argument)
        .then(|| Kind::of(argument))
        .flatten()
    else {
        return Err(ErrorData::invalid_params(
            format!(
                "Unknown argument {argument:?}: this one takes {}",
                names.join(", ")
            ),
            None,
        ));
    };
    let cluster = request
        .context
        .as_ref()
        .and_then(|c| c.get_argument("cluster"))
        .filter(|c| !c.is_empty())
        .cloned();
    Ok(values(reads, kind, &request.argument.value, cluster).await)
}

/// No values.
fn empty() -> CompletionInfo {
    CompletionInfo::with_all_values(Vec::new()).unwrap_or_default()
}

/// The values of `kind` that `typed` begins, in `cluster` (else the
/// first), as this caller may list them.
pub async fn values(
    reads: &Reads<'_>,
    kind: Kind,
    typed: &str,
    cluster: Option<String>,
) -> CompletionInfo {
    let prefix = typed.trim().to_lowercase();
    let starts = |text: &str| text.to_lowercase().starts_with(&prefix);
    match kind {
        Kind::Cluster => {
            let names = resources::clusters(reads);
            bounded(names.into_iter().filter(|n| starts(n)).collect(), true)
        }
        Kind::Tools => {
            // The last name of the list is the one being typed.
            let (head, last) = match typed.rfind(',') {
                Some(at) => (&typed[..=at], typed[at + 1..].trim()),
                None => ("", typed.trim()),
            };
            let last = last.to_lowercase();
            let chosen: Vec<&str> = head.split(',').map(str::trim).collect();
            let names = reads
                .app()
                .tools()
                .iter()
                .map(|t| t.name.as_str())
                .filter(|n| n.starts_with(&last) && !chosen.contains(n))
                .map(|n| format!("{head}{n}"))
                .collect();
            bounded(names, true)
        }
        Kind::Vmid => {
            let Some((guests, complete)) =
                listed(reads, "pve_list_vms", "vms", cluster, 1000).await
            else {
                return empty();
            };
            let mut found: Vec<(u64, String)> = guests
                .iter()
                .filter_map(|g| Some((g["vmid"].as_u64()?, g["name"].as_str().unwrap_or(""))))
                .filter(|(vmid, name)| starts(&vmid.to_string()) || starts(name))
                .map(|(vmid, name)| (vmid, name.to_string()))
                .collect();
            found.sort();
            found.dedup_by_key(|(vmid, _)| *vmid);
            bounded(
                found.into_iter().map(|(v, _)| v.to_string()).collect(),
                complete,
            )
        }
        Kind::Node => {
            named(
                reads,
                "pve_list_nodes",
                "nodes",
                "node",
                cluster,
                1000,
                &starts,
            )
            .await
        }
        Kind::Storage => {
            named(
                reads,
                "pve_list_storage",
                "storages",
                "storage",
                cluster,
                1000,
                &starts,
            )
            .await
        }
        Kind::Upid => {
            let Some((tasks, complete)) =
                listed(reads, "pve_list_tasks", "tasks", cluster, 500).await
            else {
                return empty();
            };
            // Typed as the template's percent-encoded text, or raw.
            let decoded = percent_encoding::percent_decode_str(typed.trim())
                .decode_utf8_lossy()
                .to_lowercase();
            let upids = tasks
                .iter()
                .filter_map(|t| t["upid"].as_str())
                .filter(|u| u.to_lowercase().starts_with(&decoded))
                .map(str::to_string)
                .collect();
            bounded(upids, complete)
        }
    }
}

/// The `field` of each item a list tool returns, those `starts` keeps,
/// sorted and without repeats.
async fn named(
    reads: &Reads<'_>,
    tool: &'static str,
    items: &str,
    field: &str,
    cluster: Option<String>,
    limit: u64,
    starts: &(dyn Fn(&str) -> bool + Sync),
) -> CompletionInfo {
    let Some((listed, complete)) = listed(reads, tool, items, cluster, limit).await else {
        return empty();
    };
    let mut names: Vec<String> = listed
        .iter()
        .filter_map(|item| item[field].as_str())
        .filter(|n| starts(n))
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    bounded(names, complete)
}

/// The first page (of `limit`) of a list tool's `items`, and whether it
/// was the whole list; `None` when the caller may not run the tool or it
/// failed (a completion is a hint, not worth an error).
async fn listed(
    reads: &Reads<'_>,
    tool: &'static str,
    items: &str,
    cluster: Option<String>,
    limit: u64,
) -> Option<(Vec<Value>, bool)> {
    reads.usable(tool)?;
    let mut arguments = JsonObject::new();
    arguments.insert("limit".into(), json!(limit));
    if let Some(cluster) = cluster {
        arguments.insert(crate::egress::CLUSTER_ARG.into(), Value::String(cluster));
    }
    match reads.run(tool, arguments).await {
        Ok(mut out) => {
            let complete = out["next_offset"].is_null();
            match out.get_mut(items).map(Value::take) {
                Some(Value::Array(list)) => Some((list, complete)),
                _ => None,
            }
        }
        Err(why) => {
            tracing::debug!(tool, ?why, "no completion values");
            None
        }
    }
}

/// At most [`MAX_VALUES`] of `values`, with the total when `complete`
/// says the source list was read whole (otherwise it is not known, and
/// there may be more).
fn bounded(mut values: Vec<String>, complete: bool) -> CompletionInfo {
    let matched = values.len();
    values.truncate(MAX_VALUES);
    let total = complete.then_some(matched.min(u32::MAX as usize) as u32);
    // Never more than MAX_VALUES, so this cannot fail.
    CompletionInfo::with_pagination(values, total, matched > MAX_VALUES || !complete)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_a_hundred_values_with_an_honest_total() {
        let many: Vec<String> = (0..250).map(|n| n.to_string()).collect();
        let info = bounded(many.clone(), true);
        assert_eq!(info.values.len(), 100);
        assert_eq!((info.total, info.has_more), (Some(250), Some(true)));
        let info = bounded(many[..3].to_vec(), true);
        assert_eq!((info.total, info.has_more), (Some(3), Some(false)));
        // A list read in part: the total is not known.
        let info = bounded(many[..3].to_vec(), false);
        assert_eq!((info.total, info.has_more), (None, Some(true)));
    }
}
