//! `pve-mcp tools --sizes`: what the tool list costs a client, in bytes of
//! compact JSON of the MCP definitions the server lists
//! ([`crate::server::mcp::to_mcp_tool`]), so a change that grows them
//! shows in review. docs/tools.md gives the budgets a test holds them to.

use serde_json::{Map, Value, json};

use crate::tier::Tier;
use crate::tools::ToolInfo;

/// The members of a definition a client hands the model; the rest
/// (`outputSchema`) only its code reads.
pub const MODEL_VISIBLE: &[&str] = &["name", "title", "description", "inputSchema", "annotations"];

/// One tool's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSize {
    /// Its name.
    pub name: String,
    /// Whether it is a read-tier tool.
    pub read: bool,
    /// Whether a server with the default policy and no toolsets named
    /// lists it: a read-tier tool of a toolset offered by default.
    pub listed_by_default: bool,
    /// Bytes of its [`MODEL_VISIBLE`] members.
    pub model_visible: usize,
    /// Bytes of its whole definition, `outputSchema` included.
    pub whole: usize,
}

/// Every tool's size, in list order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes {
    /// One per tool.
    pub tools: Vec<ToolSize>,
}

/// Totals over some of the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Total {
    /// How many tools.
    pub tools: usize,
    /// Their model-visible bytes.
    pub model_visible: usize,
    /// Their whole definitions' bytes.
    pub whole: usize,
}

impl Total {
    fn per_tool(bytes: usize, tools: usize) -> usize {
        bytes.checked_div(tools).unwrap_or(0)
    }

    fn to_json(self) -> Value {
        json!({
            "tools": self.tools,
            "model_visible": self.model_visible,
            "model_visible_per_tool": Self::per_tool(self.model_visible, self.tools),
            "whole": self.whole,
            "whole_per_tool": Self::per_tool(self.whole, self.tools),
        })
    }
}

/// The compact JSON length of `members` of a definition (all when `None`).
fn bytes(definition: &Map<String, Value>, members: Option<&[&str]>) -> usize {
    let picked: Map<String, Value> = definition
        .iter()
        .filter(|(k, _)| members.is_none_or(|m| m.contains(&k.as_str())))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    serde_json::to_vec(&Value::Object(picked)).map_or(0, |b| b.len())
}

impl Sizes {
    /// Measures `tools` as the server lists them.
    pub fn of(tools: &[ToolInfo]) -> Sizes {
        let tools = tools
            .iter()
            .map(|tool| {
                let definition =
                    match serde_json::to_value(crate::server::mcp::to_mcp_tool(tool, 1)) {
                        Ok(Value::Object(o)) => o,
                        _ => Map::new(),
                    };
                let read = Tier::of(tool) == Tier::Read;
                ToolSize {
                    name: tool.name.clone(),
                    read,
                    listed_by_default: read && crate::tools::offered_by_default(&tool.toolset),
                    model_visible: bytes(&definition, Some(MODEL_VISIBLE)),
                    whole: bytes(&definition, None),
                }
            })
            .collect();
        Sizes { tools }
    }

    /// The totals over every tool, or only those the default list holds.
    pub fn total(&self, default_list: bool) -> Total {
        let some = self
            .tools
            .iter()
            .filter(|t| !default_list || t.listed_by_default);
        some.fold(
            Total {
                tools: 0,
                model_visible: 0,
                whole: 0,
            },
            |t, s| Total {
                tools: t.tools + 1,
                model_visible: t.model_visible + s.model_visible,
                whole: t.whole + s.whole,
            },
        )
    }

    /// A plain-text table: each tool, then the totals and averages.
    pub fn table(&self) -> String {
        let width = self
            .tools
            .iter()
            .map(|t| t.name.len())
            .max()
            .unwrap_or(4)
            .max(16);
        let mut out = format!(
            "{:width$}  {:5}  {:>13}  {:>6}\n",
            "TOOL", "TIER", "MODEL-VISIBLE", "WHOLE"
        );
        for t in &self.tools {
            let tier = if t.read { "read" } else { "write" };
            out.push_str(&format!(
                "{:width$}  {tier:5}  {:>13}  {:>6}\n",
                t.name, t.model_visible, t.whole
            ));
        }
        for (label, total) in [
            ("every tool", self.total(false)),
            ("default list", self.total(true)),
        ] {
            out.push_str(&format!(
                "{:width$}  {:5}  {:>13}  {:>6}\n",
                format!("{label} ({})", total.tools),
                "total",
                total.model_visible,
                total.whole
            ));
            out.push_str(&format!(
                "{:width$}  {:5}  {:>13}  {:>6}\n",
                "",
                "avg",
                Total::per_tool(total.model_visible, total.tools),
                Total::per_tool(total.whole, total.tools)
            ));
        }
        out
    }

    /// The same as JSON: `tools` (name, tier, whether the default list
    /// holds it, bytes), `all` and `default` (count, bytes, bytes per
    /// tool).
    pub fn to_json(&self) -> Value {
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "tier": if t.read { "read" } else { "write" },
                    "default": t.listed_by_default,
                    "model_visible": t.model_visible,
                    "whole": t.whole,
                })
            })
            .collect();
        json!({
            "tools": tools,
            "all": self.total(false).to_json(),
            "default": self.total(true).to_json(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_count_the_members_asked_for() {
        let d = json!({"name": "t", "outputSchema": {"type": "object"}});
        let Value::Object(d) = d else { unreachable!() };
        assert_eq!(bytes(&d, Some(MODEL_VISIBLE)), r#"{"name":"t"}"#.len());
        assert_eq!(
            bytes(&d, None),
            r#"{"name":"t","outputSchema":{"type":"object"}}"#.len()
        );
        let sizes = Sizes {
            tools: vec![
                ToolSize {
                    name: "a".into(),
                    read: true,
                    listed_by_default: true,
                    model_visible: 10,
                    whole: 30,
                },
                ToolSize {
                    name: "b".into(),
                    read: false,
                    listed_by_default: false,
                    model_visible: 20,
                    whole: 50,
                },
            ],
        };
        assert_eq!(
            sizes.total(false),
            Total {
                tools: 2,
                model_visible: 30,
                whole: 80
            }
        );
        assert_eq!(
            sizes.total(true),
            Total {
                tools: 1,
                model_visible: 10,
                whole: 30
            }
        );
        assert_eq!(sizes.to_json()["all"]["whole_per_tool"], 40);
        assert!(sizes.table().contains("default list (1)"));
    }
}
