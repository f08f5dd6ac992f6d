//! What the host grants the component through its environment
//! (`wasmtime serve --env NAME=VALUE`), read at every request: a host makes
//! a fresh instance per request anyway.
//!
//! - `PVE_MCP_PROXY_URL`: the base URL of `pve-mcp egress-proxy`, with the
//!   proxy's path token when it requires one, e.g.
//!   `http://127.0.0.1:8007/token/TOKEN`. Without it tools are listed but
//!   every call fails, saying so. It is never the Proxmox token: the proxy
//!   adds that to what its gate lets through.
//! - `PVE_MCP_CLUSTERS`: the proxy's cluster names, comma-separated, the
//!   default first (`default` when unset); a call naming another reaches
//!   the proxy under `/cluster/NAME`.
//! - `PVE_MCP_TOOLSETS`: the toolsets offered, as `pve-mcp serve` reads
//!   them (`default`, `all` or names, comma-separated; `default` when unset).
//! - `PVE_MCP_WRITES`: `1` or `true` lists the tools that write too. Unset,
//!   only read tools are listed and callable, as under `pve-mcp serve`'s
//!   default read-only policy; either way the proxy's policy decides what
//!   reaches Proxmox.
//! - `PVE_MCP_MAX_WAIT_SECS`: the longest a call may wait for a Proxmox
//!   task (1 to 3600, default 600, as `pve-mcp serve`).
//! - `PVE_MCP_HTTP_TOKEN`: a bearer token (16 or more characters) every
//!   request must carry in `Authorization`; unset, none is asked for, so
//!   listen on loopback only.
//! - `PVE_MCP_ALLOWED_HOSTS`: host names the `Host` and `Origin` headers
//!   may name besides `localhost`, `127.0.0.1` and `[::1]`
//!   (comma-separated), against DNS rebinding.

/// The toolsets a server offers only when named (pve-mcp's
/// `OPT_IN_TOOLSETS`, host/src/tools.rs).
pub const OPT_IN_TOOLSETS: &[&str] = &[
    "agent",
    "provisioning",
    "nodes",
    "replication",
    "pools",
    "firewall",
    "ha",
];

/// The component's settings, from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `(name, base URL)` per cluster, the default first; empty without
    /// `PVE_MCP_PROXY_URL`.
    pub endpoints: Vec<(String, String)>,
    /// What is wrong with the settings, told to every call.
    pub problem: Option<String>,
    /// The toolset words and names, as given.
    pub toolsets: Vec<String>,
    /// Whether tools that write are offered.
    pub writes: bool,
    /// `wait-limit-secs` of every call.
    pub wait_limit_secs: u32,
    /// The bearer token requests must carry, if any.
    pub token: Option<String>,
    /// Host names allowed in `Host` and `Origin`.
    pub allowed_hosts: Vec<String>,
}

/// The environment variable that names the egress proxy.
pub const PROXY_URL: &str = "PVE_MCP_PROXY_URL";

impl Config {
    /// The settings from environment variables (`std::env::vars()`).
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Config {
        let mut url = None;
        let mut clusters = None;
        let mut toolsets = None;
        let mut writes = false;
        let mut wait = None;
        let mut token = None;
        let mut hosts = None;
        for (key, value) in vars {
            match key.as_str() {
                PROXY_URL => url = Some(value),
                "PVE_MCP_CLUSTERS" => clusters = Some(value),
                "PVE_MCP_TOOLSETS" => toolsets = Some(value),
                "PVE_MCP_WRITES" => writes = matches!(value.trim(), "1" | "true" | "yes"),
                "PVE_MCP_MAX_WAIT_SECS" => wait = Some(value),
                "PVE_MCP_HTTP_TOKEN" => token = Some(value),
                "PVE_MCP_ALLOWED_HOSTS" => hosts = Some(value),
                _ => {}
            }
        }
        let mut problems = Vec::new();
        let names = list(clusters.as_deref().unwrap_or("default"));
        let names = if names.is_empty() {
            vec!["default".to_owned()]
        } else {
            names
        };
        let mut endpoints = Vec::new();
        match url.as_deref().map(|u| u.trim().trim_end_matches('/')) {
            None | Some("") => problems.push(format!(
                "{PROXY_URL} is not set: start the component with `--env \
                 {PROXY_URL}=http://127.0.0.1:8007/token/TOKEN`, the URL `pve-mcp egress-proxy` \
                 announces"
            )),
            Some(u) if !(u.starts_with("http://") || u.starts_with("https://")) => problems.push(
                format!("{PROXY_URL} must be an http:// or https:// URL of pve-mcp egress-proxy"),
            ),
            Some(u) => {
                for (i, name) in names.iter().enumerate() {
                    let base = if i == 0 {
                        u.to_owned()
                    } else {
                        format!("{u}/cluster/{name}")
                    };
                    endpoints.push((name.clone(), base));
                }
            }
        }
        let wait_limit_secs = match wait.as_deref().map(str::trim) {
            None | Some("") => 600,
            Some(w) => match w.parse::<u32>() {
                Ok(n @ 1..=3600) => n,
                _ => {
                    problems.push("PVE_MCP_MAX_WAIT_SECS must be 1 to 3600".into());
                    600
                }
            },
        };
        let token = token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        if token.as_ref().is_some_and(|t| t.len() < 16) {
            problems.push("PVE_MCP_HTTP_TOKEN must have 16 or more characters".into());
        }
        let mut allowed_hosts: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        allowed_hosts.extend(list(hosts.as_deref().unwrap_or("")));
        let toolsets = list(toolsets.as_deref().unwrap_or("default"));
        Config {
            endpoints,
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
            toolsets: if toolsets.is_empty() {
                vec!["default".into()]
            } else {
                toolsets
            },
            writes,
            wait_limit_secs,
            token,
            allowed_hosts,
        }
    }

    /// The egress proxy's path token in the base URL, which answers must
    /// not show (`pve_list_clusters` names each base URL, an error the URL it
    /// could not reach).
    pub fn proxy_token(&self) -> Option<&str> {
        let url = &self.endpoints.first()?.1;
        let token = url.split_once("/token/")?.1.split('/').next()?;
        (!token.is_empty()).then_some(token)
    }

    /// Whether a tool of `toolset` is offered.
    pub fn offers_toolset(&self, toolset: &str) -> bool {
        self.toolsets.iter().any(|t| match t.as_str() {
            "all" => true,
            "default" => !OPT_IN_TOOLSETS.contains(&toolset),
            name => name == toolset,
        })
    }
}

/// The non-empty, trimmed items of a comma-separated list.
fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Config {
        Config::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn the_proxy_url_makes_one_endpoint_per_cluster() {
        let c = config(&[
            (PROXY_URL, "http://127.0.0.1:8007/token/abcdefabcdefabcdef/"),
            ("PVE_MCP_CLUSTERS", "prod, lab"),
        ]);
        assert_eq!(c.problem, None);
        assert_eq!(
            c.endpoints,
            [
                (
                    "prod".to_owned(),
                    "http://127.0.0.1:8007/token/abcdefabcdefabcdef".to_owned()
                ),
                (
                    "lab".to_owned(),
                    "http://127.0.0.1:8007/token/abcdefabcdefabcdef/cluster/lab".to_owned()
                ),
            ]
        );
        assert_eq!(c.proxy_token(), Some("abcdefabcdefabcdef"));
        assert_eq!(c.wait_limit_secs, 600);
        assert!(!c.writes);
    }

    #[test]
    fn missing_or_bad_settings_are_told_not_guessed() {
        let c = config(&[]);
        assert!(c.endpoints.is_empty());
        assert!(c.problem.unwrap().contains(PROXY_URL));
        let c = config(&[(PROXY_URL, "ftp://x"), ("PVE_MCP_MAX_WAIT_SECS", "0")]);
        let problem = c.problem.unwrap();
        assert!(problem.contains("http://"), "{problem}");
        assert!(problem.contains("MAX_WAIT"), "{problem}");
        let c = config(&[(PROXY_URL, "http://h"), ("PVE_MCP_HTTP_TOKEN", "short")]);
        assert!(c.problem.unwrap().contains("16"));
    }

    #[test]
    fn toolsets_read_as_pve_mcp_serve_reads_them() {
        let c = config(&[]);
        assert!(c.offers_toolset("guests") && !c.offers_toolset("firewall"));
        let c = config(&[("PVE_MCP_TOOLSETS", "default,ha")]);
        assert!(c.offers_toolset("guests") && c.offers_toolset("ha"));
        assert!(!c.offers_toolset("firewall"));
        let c = config(&[("PVE_MCP_TOOLSETS", "tasks")]);
        assert!(c.offers_toolset("tasks") && !c.offers_toolset("guests"));
        assert!(config(&[("PVE_MCP_TOOLSETS", "all")]).offers_toolset("agent"));
    }
}
