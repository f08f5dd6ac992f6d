//! MCP resources: read-only views of each cluster, each read being the
//! matching read tool's call (see [`Reads`]), so a resource is listed and
//! read only where its tools are, and every read is decided, rate-limited
//! and audited as that tool's call.
//!
//! No subscriptions: Proxmox does not tell anyone when a guest or task
//! changes, so the only way to notice would be polling on a timer, and a
//! `notifications/resources/updated` sent from a poll would claim a change
//! we did not observe when it happened. Clients re-read instead.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use serde_json::{Value, json};

use crate::server::reads::Reads;
use crate::tools::JsonObject;

/// The scheme every resource of this server has.
pub const SCHEME: &str = "pve://";

/// The MIME type of every resource's contents.
pub const MIME_JSON: &str = "application/json";

/// The guests, nodes and storages a cluster's resource lists at most (one
/// page of `pve_list_resources`; the tool pages on).
pub const RESOURCES_LIMIT: u64 = 200;

/// The forms a resource URI takes, for errors.
const VALID_FORMS: &str = "pve://{cluster}/resources, pve://{cluster}/guests/{vmid}, \
     pve://{cluster}/nodes/{node}, pve://{cluster}/tasks/{upid}/log (the UPID percent-encoded: \
     UPID%3Apve1%3A...)";

/// How much of a client's URI an error repeats.
const SHOWN_URI_CHARS: usize = 200;

/// What a segment keeps unencoded: RFC 3986's unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The tools a cluster's resource list reads with.
const RESOURCES_TOOLS: &[&str] = &["pve_list_resources"];
/// The tools a guest's resource reads with.
const GUEST_TOOLS: &[&str] = &["pve_get_vm_status", "pve_get_vm_config"];
/// The tools a node's resource reads with.
const NODE_TOOLS: &[&str] = &["pve_get_node_metrics"];
/// The tools a task log's resource reads with.
const TASK_LOG_TOOLS: &[&str] = &["pve_get_task_log"];

/// One resource, as its URI names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceUri {
    /// `pve://{cluster}/resources`: the cluster's guests, nodes, storages.
    Resources { cluster: String },
    /// `pve://{cluster}/guests/{vmid}`: a guest's status and config.
    Guest { cluster: String, vmid: u64 },
    /// `pve://{cluster}/nodes/{node}`: a node's status and metrics.
    Node { cluster: String, node: String },
    /// `pve://{cluster}/tasks/{upid}/log`: the tail of a task's log.
    TaskLog { cluster: String, upid: String },
}

/// `text` percent-encoded as one URI path segment.
pub fn encode(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

impl ResourceUri {
    /// Parses a URI of this server's; the error says what is wrong and
    /// which forms are valid.
    pub fn parse(uri: &str) -> Result<ResourceUri, String> {
        let Some(rest) = uri.strip_prefix(SCHEME) else {
            return Err("it does not start with pve://".into());
        };
        let segments: Vec<&str> = rest.split('/').collect();
        let decoded = |i: usize, what: &str| -> Result<String, String> {
            let text = percent_decode_str(segments[i])
                .decode_utf8()
                .map_err(|_| format!("its {what} is not UTF-8 once percent-decoded"))?
                .into_owned();
            if text.is_empty() {
                return Err(format!("its {what} is empty"));
            }
            Ok(text)
        };
        let cluster = decoded(0, "cluster")?;
        match segments[1..] {
            ["resources"] => Ok(ResourceUri::Resources { cluster }),
            ["guests", _] => {
                let vmid = decoded(2, "vmid")?;
                match vmid.parse::<u64>() {
                    Ok(n) if (100..=999_999_999).contains(&n) => {
                        Ok(ResourceUri::Guest { cluster, vmid: n })
                    }
                    _ => Err(format!(
                        "its vmid {:?} is not a number from 100 to 999999999",
                        shorten(&vmid)
                    )),
                }
            }
            ["nodes", _] => {
                let node = decoded(2, "node")?;
                if !node
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
                {
                    return Err(format!(
                        "its node {:?} is not a node name (letters, digits, '-' and '.')",
                        shorten(&node)
                    ));
                }
                Ok(ResourceUri::Node { cluster, node })
            }
            ["tasks", _, "log"] => {
                let upid = decoded(2, "UPID")?;
                if !upid.starts_with("UPID:") {
                    return Err(format!(
                        "its UPID {:?} does not start with UPID: (percent-encoded UPID%3A)",
                        shorten(&upid)
                    ));
                }
                Ok(ResourceUri::TaskLog { cluster, upid })
            }
            _ => Err("its path names no resource of this server".into()),
        }
    }

    /// The URI, each variable percent-encoded.
    pub fn uri(&self) -> String {
        match self {
            ResourceUri::Resources { cluster } => format!("{SCHEME}{}/resources", encode(cluster)),
            ResourceUri::Guest { cluster, vmid } => {
                format!("{SCHEME}{}/guests/{vmid}", encode(cluster))
            }
            ResourceUri::Node { cluster, node } => {
                format!("{SCHEME}{}/nodes/{}", encode(cluster), encode(node))
            }
            ResourceUri::TaskLog { cluster, upid } => {
                format!("{SCHEME}{}/tasks/{}/log", encode(cluster), encode(upid))
            }
        }
    }

    /// The cluster it names.
    pub fn cluster(&self) -> &str {
        match self {
            ResourceUri::Resources { cluster }
            | ResourceUri::Guest { cluster, .. }
            | ResourceUri::Node { cluster, .. }
            | ResourceUri::TaskLog { cluster, .. } => cluster,
        }
    }

    /// The read tools it is read with.
    pub fn tools(&self) -> &'static [&'static str] {
        match self {
            ResourceUri::Resources { .. } => RESOURCES_TOOLS,
            ResourceUri::Guest { .. } => GUEST_TOOLS,
            ResourceUri::Node { .. } => NODE_TOOLS,
            ResourceUri::TaskLog { .. } => TASK_LOG_TOOLS,
        }
    }
}

/// At most [`SHOWN_URI_CHARS`] of a client's text, for an error.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(SHOWN_URI_CHARS) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// The invalid-params error for a URI that names no resource.
fn bad_uri(uri: &str, why: &str) -> ErrorData {
    naming(
        ErrorData::invalid_params(
            format!(
                "Invalid resource URI {:?}: {why}. Valid forms: {VALID_FORMS}.",
                shorten(uri)
            ),
            None,
        ),
        uri,
    )
}

/// `error` with the URI asked for in its data (SEP-2164), for a client
/// to match the error to its request.
fn naming(mut error: ErrorData, uri: &str) -> ErrorData {
    error.data = Some(json!({ "uri": shorten(uri) }));
    error
}

/// The names of the clusters this server serves.
pub fn clusters(reads: &Reads<'_>) -> Vec<String> {
    reads
        .app()
        .gate()
        .endpoints()
        .iter()
        .map(|e| e.cluster.clone())
        .collect()
}

/// The resources this caller may read: each cluster's resource list,
/// when `pve_list_resources` is usable.
pub fn list(reads: &Reads<'_>) -> Vec<Resource> {
    if !reads.all_usable(RESOURCES_TOOLS) {
        return Vec::new();
    }
    clusters(reads)
        .into_iter()
        .map(|cluster| {
            let uri = ResourceUri::Resources {
                cluster: cluster.clone(),
            };
            Resource::new(uri.uri(), format!("{cluster}-resources"))
                .with_title(format!("Cluster {cluster}: guests, nodes and storages"))
                .with_description(format!(
                    "The first {RESOURCES_LIMIT} of cluster {cluster}'s guests, nodes and \
                     storages with their state and usage (pve_list_resources; it pages on)."
                ))
                .with_mime_type(MIME_JSON)
        })
        .collect()
}

/// The resource templates this caller may read: each whose tools are all
/// usable.
pub fn templates(reads: &Reads<'_>) -> Vec<ResourceTemplate> {
    let all = [
        (
            "pve://{cluster}/guests/{vmid}",
            "guest",
            "A guest: status and config",
            "A VM's or container's status (state, usage, HA, agent) and its config, secrets \
             masked (pve_get_vm_status and pve_get_vm_config).",
            GUEST_TOOLS,
        ),
        (
            "pve://{cluster}/nodes/{node}",
            "node",
            "A node: status and metrics",
            "A node's CPU, memory, disk, load and versions, with the last hour's averages \
             (pve_get_node_metrics).",
            NODE_TOOLS,
        ),
        (
            "pve://{cluster}/tasks/{upid}/log",
            "task-log",
            "A task's log",
            "The last 50 lines of a task's log and its result (pve_get_task_log); the UPID \
             percent-encoded (UPID%3Apve1%3A...).",
            TASK_LOG_TOOLS,
        ),
    ];
    all.into_iter()
        .filter(|(.., tools)| reads.all_usable(tools))
        .map(|(template, name, title, description, _)| {
            ResourceTemplate::new(template, name)
                .with_title(title)
                .with_description(description)
                .with_mime_type(MIME_JSON)
        })
        .collect()
}

/// Reads one resource as this caller: its tools' calls, each decided,
/// rate-limited and audited as a `tools/call` would be.
pub async fn read(reads: &Reads<'_>, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let parsed = ResourceUri::parse(uri).map_err(|why| bad_uri(uri, &why))?;
    let known = clusters(reads);
    if !known.iter().any(|c| c == parsed.cluster()) {
        let why = if known.is_empty() {
            "this server serves no cluster".to_string()
        } else {
            format!(
                "it names cluster {:?}, which this server does not serve (it serves {})",
                shorten(parsed.cluster()),
                known.join(", ")
            )
        };
        return Err(bad_uri(uri, &why));
    }
    let with = |pairs: &[(&str, Value)]| -> JsonObject {
        let mut arguments = JsonObject::new();
        arguments.insert(
            crate::egress::CLUSTER_ARG.into(),
            Value::String(parsed.cluster().into()),
        );
        for (k, v) in pairs {
            arguments.insert((*k).into(), v.clone());
        }
        arguments
    };
    let run = |tool: &'static str, arguments: JsonObject| async move {
        reads
            .run(tool, arguments)
            .await
            .map_err(|failure| naming(failure.into_error(tool), uri))
    };
    let contents = match &parsed {
        ResourceUri::Resources { .. } => {
            run(
                "pve_list_resources",
                with(&[("limit", json!(RESOURCES_LIMIT))]),
            )
            .await?
        }
        ResourceUri::Guest { vmid, .. } => {
            // Status first: a guest that does not exist fails there, and
            // the config is not asked for.
            let status = run("pve_get_vm_status", with(&[("vmid", json!(vmid))])).await?;
            let config = run("pve_get_vm_config", with(&[("vmid", json!(vmid))])).await?;
            json!({ "status": status, "config": config })
        }
        ResourceUri::Node { node, .. } => {
            run("pve_get_node_metrics", with(&[("node", json!(node))])).await?
        }
        ResourceUri::TaskLog { upid, .. } => {
            run("pve_get_task_log", with(&[("upid", json!(upid))])).await?
        }
    };
    // Each part is bounded as a tool's output is (`[sandbox]
    // max_output_mib`, and the tools' own page and tail sizes).
    let text = contents.to_string();
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, parsed.uri()).with_mime_type(MIME_JSON),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_with_the_upid_percent_encoded() {
        let upid = "UPID:pve1:000A3F1C:14497B40:6B0A2790:vzdump::root@pam:";
        let log = ResourceUri::TaskLog {
            cluster: "demo".into(),
            upid: upid.into(),
        };
        let uri = log.uri();
        assert_eq!(
            uri,
            "pve://demo/tasks/UPID%3Apve1%3A000A3F1C%3A14497B40%3A6B0A2790%3Avzdump%3A%3Aroot%40pam%3A/log"
        );
        assert_eq!(ResourceUri::parse(&uri), Ok(log));
        for uri in [
            "pve://demo/resources",
            "pve://demo/guests/100",
            "pve://demo/nodes/pve1",
            "pve://my%20lab/resources",
        ] {
            assert_eq!(ResourceUri::parse(uri).unwrap().uri(), uri);
        }
    }

    #[test]
    fn bad_uris_say_what_is_wrong() {
        for (uri, why) in [
            ("http://demo/resources", "does not start with pve://"),
            ("pve://demo/guests/abc", "vmid \"abc\" is not a number"),
            ("pve://demo/guests/99", "vmid \"99\" is not a number"),
            ("pve://demo/nodes/a%2Fb", "is not a node name"),
            ("pve://demo/tasks/x/log", "does not start with UPID:"),
            ("pve://demo/tasks/UPID:a/logs", "names no resource"),
            ("pve:///resources", "cluster is empty"),
            ("pve://demo/guests/%FF", "not UTF-8"),
            ("pve://demo", "names no resource"),
        ] {
            let err = ResourceUri::parse(uri).unwrap_err();
            assert!(err.contains(why), "{uri}: {err}");
        }
    }
}
