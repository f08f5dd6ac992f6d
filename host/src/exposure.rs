//! Which tools a caller is offered at all, before the policy judges a
//! call: the toolsets the server enables and its read-only switch
//! (`[tools]`, `--toolsets`, `--read-only`), narrowed by the caller's
//! bearer token (`[http.tokens.NAME] toolsets`, `read_only`). A toolset
//! only ever narrows what the policy allows: a tool outside them is not
//! listed, and a call of it is refused by name.
//!
//! The toolset `discover` changes how the rest is offered: the list holds
//! the discovery pair (`pve_search_tools`, `pve_call_tool`) instead of the
//! catalog, and the pair reaches the other toolsets named with it, or
//! every toolset when `discover` is named alone.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::error::ConfigError;
use crate::tier::Tier;
use crate::tools::{ALL_TOOLSETS, DEFAULT_TOOLSETS, DISCOVER, ToolInfo, offered_by_default};

/// One narrowing: the server's, or a token's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// The toolsets named; `None`: every one.
    toolsets: Option<BTreeSet<String>>,
    /// Only read-tier tools.
    read_only: bool,
}

impl Filter {
    /// A filter of these toolsets (`None`: every one) and read-only switch,
    /// named under `key` for errors; every name must be one of `known`,
    /// `discover`, `default` (the toolsets offered when none are named) or
    /// `all`.
    pub fn new(
        toolsets: Option<&[String]>,
        read_only: bool,
        key: &str,
        known: &BTreeSet<String>,
    ) -> Result<Filter, ConfigError> {
        let toolsets = match toolsets {
            None => None,
            Some(names) => {
                let mut named = BTreeSet::new();
                for name in names {
                    match name.as_str() {
                        ALL_TOOLSETS => named.extend(known.iter().cloned()),
                        DEFAULT_TOOLSETS => {
                            named.extend(known.iter().filter(|s| offered_by_default(s)).cloned())
                        }
                        DISCOVER => {
                            named.insert(name.clone());
                        }
                        _ if known.contains(name) => {
                            named.insert(name.clone());
                        }
                        unknown => {
                            let mut all: Vec<&str> = known.iter().map(String::as_str).collect();
                            all.extend([DISCOVER, DEFAULT_TOOLSETS, ALL_TOOLSETS]);
                            return Err(ConfigError::new(
                                key,
                                format!("{unknown:?} is not a toolset of this server"),
                                format!("name some of {}", all.join(", ")),
                            ));
                        }
                    }
                }
                Some(named)
            }
        };
        Ok(Filter {
            toolsets,
            read_only,
        })
    }

    /// The server's filter: as [`Filter::new`], but naming no toolsets
    /// offers the default ones rather than every one.
    pub fn server(
        toolsets: Option<&[String]>,
        read_only: bool,
        key: &str,
        known: &BTreeSet<String>,
    ) -> Result<Filter, ConfigError> {
        let default = [DEFAULT_TOOLSETS.to_string()];
        Filter::new(Some(toolsets.unwrap_or(&default)), read_only, key, known)
    }

    fn discover(&self) -> bool {
        self.toolsets.as_ref().is_some_and(|s| s.contains(DISCOVER))
    }

    /// Whether it reaches `toolset`: named, or everything when nothing but
    /// `discover` (or nothing at all) is named.
    fn reaches(&self, toolset: &str) -> bool {
        match &self.toolsets {
            None => true,
            Some(named) => named.contains(toolset) || named.iter().all(|n| n == DISCOVER),
        }
    }
}

/// The server's filter and each token's.
#[derive(Debug, Clone, Default)]
pub struct Exposure {
    server: Filter,
    tokens: HashMap<Arc<str>, Filter>,
}

impl Exposure {
    /// Every tool, for every caller.
    pub fn all() -> Exposure {
        Exposure::default()
    }

    /// The server's filter, and the tokens' by name.
    pub fn new(server: Filter, tokens: HashMap<Arc<str>, Filter>) -> Exposure {
        Exposure { server, tokens }
    }

    /// The toolsets of `tools`, for checking names against.
    pub fn known(tools: &[ToolInfo]) -> BTreeSet<String> {
        tools.iter().map(|t| t.toolset.clone()).collect()
    }

    /// What the caller with this bearer token (if any) is offered.
    pub fn view(&self, token: Option<&str>) -> View<'_> {
        View {
            server: &self.server,
            token: token.and_then(|t| self.tokens.get(t)),
        }
    }
}

/// What one caller is offered.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    server: &'a Filter,
    token: Option<&'a Filter>,
}

impl View<'_> {
    fn filters(&self) -> impl Iterator<Item = &Filter> {
        std::iter::once(self.server).chain(self.token)
    }

    /// Whether the catalog is offered through the discovery pair rather
    /// than listed.
    pub fn discover(&self) -> bool {
        self.filters().any(Filter::discover)
    }

    /// Whether the caller may call `tool` (by name, or through
    /// `pve_call_tool`); the error says why not, for the refusal.
    pub fn offers(&self, tool: &ToolInfo) -> Result<(), String> {
        if let Some(filter) = self.filters().find(|f| !f.reaches(&tool.toolset)) {
            let named: Vec<&str> = filter
                .toolsets
                .iter()
                .flatten()
                .map(String::as_str)
                .collect();
            let whose = if std::ptr::eq(filter, self.server) {
                "this server enables"
            } else {
                "your token is given"
            };
            let hint = if std::ptr::eq(filter, self.server) {
                format!(
                    "; a server offers it when started with --toolsets naming {} (e.g. \
                     default,{})",
                    tool.toolset, tool.toolset
                )
            } else {
                String::new()
            };
            return Err(format!(
                "{} is not offered here: its toolset {} is not among those {whose} ({}){hint}",
                tool.name,
                tool.toolset,
                named.join(", ")
            ));
        }
        if self.filters().any(|f| f.read_only) && Tier::of(tool) != Tier::Read {
            return Err(format!(
                "{} is not offered here: this server (or your token) is read-only, and {} may \
                 write (tier {})",
                tool.name,
                tool.name,
                Tier::of(tool)
            ));
        }
        Ok(())
    }

    /// Whether `tool` is in the list: offered, and not behind the pair.
    pub fn lists(&self, tool: &ToolInfo) -> bool {
        !self.discover() && self.offers(tool).is_ok()
    }

    /// The toolsets this caller reaches among `tools`', for the server's
    /// instructions.
    pub fn toolsets(&self, tools: &[ToolInfo]) -> Vec<String> {
        let mut sets: Vec<String> = Exposure::known(tools)
            .into_iter()
            .filter(|s| self.filters().all(|f| f.reaches(s)))
            .collect();
        if self.discover() {
            sets.insert(0, DISCOVER.to_string());
        }
        sets
    }

    /// The toolsets of `tools` this caller does not reach, for the
    /// server's instructions to name.
    pub fn others(&self, tools: &[ToolInfo]) -> Vec<String> {
        Exposure::known(tools)
            .into_iter()
            .filter(|s| !self.filters().all(|f| f.reaches(s)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, toolset: &str, writes: bool) -> ToolInfo {
        let start = [("POST", "/nodes/{node}/qemu/{vmid}/status/start")];
        ToolInfo {
            toolset: toolset.into(),
            ..ToolInfo::sample(name, if writes { &start } else { &[] })
        }
    }

    fn known() -> BTreeSet<String> {
        ["guests", "tasks", "api", "agent"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn filter(sets: Option<&[&str]>, read_only: bool) -> Filter {
        let sets: Option<Vec<String>> = sets.map(|s| s.iter().map(|n| n.to_string()).collect());
        Filter::new(sets.as_deref(), read_only, "tools.toolsets", &known()).unwrap()
    }

    #[test]
    fn toolsets_and_read_only_narrow_and_tokens_narrow_further() {
        let list = tool("pve_list_vms", "guests", false);
        let start = tool("pve_start_vm", "guests", true);
        let task = tool("pve_list_tasks", "tasks", false);
        let all = Exposure::all();
        assert!(all.view(None).offers(&start).is_ok());
        let guests = Exposure::new(filter(Some(&["guests"]), false), HashMap::new());
        assert!(guests.view(None).lists(&list));
        let e = guests.view(None).offers(&task).unwrap_err();
        assert!(
            e.contains("its toolset tasks is not among those this server enables (guests)"),
            "{e}"
        );
        let tokens = HashMap::from([(Arc::from("ro"), filter(None, true))]);
        let exposure = Exposure::new(Filter::default(), tokens);
        assert!(exposure.view(Some("ro")).offers(&list).is_ok());
        let e = exposure.view(Some("ro")).offers(&start).unwrap_err();
        assert!(e.contains("read-only"), "{e}");
        assert!(exposure.view(Some("other")).offers(&start).is_ok());
        assert!(exposure.view(None).offers(&start).is_ok());
    }

    #[test]
    fn discover_lists_the_pair_and_reaches_the_rest() {
        let list = tool("pve_list_vms", "guests", false);
        let task = tool("pve_list_tasks", "tasks", false);
        let alone = Exposure::new(filter(Some(&["discover"]), false), HashMap::new());
        let view = alone.view(None);
        assert!(view.discover());
        assert!(!view.lists(&list));
        assert!(view.offers(&list).is_ok() && view.offers(&task).is_ok());
        assert_eq!(
            view.toolsets(&[list.clone(), task.clone()]),
            ["discover", "guests", "tasks"]
        );
        let some = Exposure::new(filter(Some(&["discover", "guests"]), false), HashMap::new());
        assert!(some.view(None).offers(&list).is_ok());
        assert!(some.view(None).offers(&task).is_err());
    }

    #[test]
    fn a_server_naming_none_offers_the_default_toolsets_and_all_offers_every_one() {
        let list = tool("pve_list_vms", "guests", false);
        let info = tool("pve_guest_agent_info", "agent", false);
        let tools = [list.clone(), info.clone()];
        let server = Filter::server(None, false, "tools.toolsets", &known()).unwrap();
        let exposure = Exposure::new(server, HashMap::new());
        let view = exposure.view(None);
        assert!(view.lists(&list));
        let e = view.offers(&info).unwrap_err();
        assert!(
            e.contains(
                "its toolset agent is not among those this server enables (api, guests, \
                 tasks); a server offers it when started with --toolsets naming agent (e.g. \
                 default,agent)"
            ),
            "{e}"
        );
        assert_eq!(view.toolsets(&tools), ["guests"]);
        assert_eq!(view.others(&tools), ["agent"]);
        let named = |names: &[&str]| {
            let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            let f = Filter::server(Some(&names), false, "k", &known()).unwrap();
            Exposure::new(f, HashMap::new())
        };
        assert!(
            named(&["default", "agent"])
                .view(None)
                .offers(&info)
                .is_ok()
        );
        assert!(named(&["all"]).view(None).offers(&info).is_ok());
        assert!(named(&["discover"]).view(None).offers(&info).is_ok());
        assert!(named(&["default"]).view(None).offers(&info).is_err());
        // A token that names none narrows nothing further.
        let tokens = HashMap::from([(Arc::from("t"), filter(None, false))]);
        let all = Exposure::new(named(&["all"]).server, tokens);
        assert!(all.view(Some("t")).offers(&info).is_ok());
    }

    #[test]
    fn an_unknown_toolset_is_an_error_naming_the_known_ones() {
        let names = vec!["guests".to_string(), "gests".to_string()];
        let e = Filter::new(Some(&names), false, "tools.toolsets", &known()).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("\"gests\" is not a toolset"), "{text}");
        assert!(
            text.contains("agent, api, guests, tasks, discover, default, all"),
            "{text}"
        );
    }
}
