//! The bearer tokens of `[http]`: named ones in `[http.tokens]` and the
//! reference server's `MCP_AUTH_TOKEN`. The audit log knows each caller by
//! its token's name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;

use crate::config::layered::{Layers, MIN_TOKEN_LEN, is_bearer_token, read_secret_file};
use crate::error::ConfigError;
use crate::secret::Secret;

/// The name of the token given by `MCP_AUTH_TOKEN`.
pub const DEFAULT_TOKEN_NAME: &str = "default";

/// A bearer token and the name the audit log knows its holder by.
#[derive(Debug, Clone)]
pub struct NamedToken {
    /// The name (`default` for `MCP_AUTH_TOKEN`).
    pub name: Arc<str>,
    /// The token itself.
    pub secret: Secret,
    /// The toolsets its holder is offered (within the server's); `None`:
    /// the server's.
    pub toolsets: Option<Vec<String>>,
    /// Its holder is offered only tools that read.
    pub read_only: bool,
    /// The credential set its holder's calls carry to Proxmox
    /// (`pve_credentials`); `None`: each cluster's own.
    pub pve_credentials: Option<String>,
}

/// One entry of `[http.tokens]`: the token itself (`NAME = "..."`, or
/// `NAME_file = "/path"`), or a table `[http.tokens.NAME]` with `token` or
/// `token_file`, and the `toolsets` and `read_only` its holder gets.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
pub enum FileToken {
    /// The token, or (for a `_file` key) the file holding it.
    Plain(String),
    /// A token with what its holder is offered.
    Table(TokenTable),
}

/// `[http.tokens.NAME]`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenTable {
    /// The token.
    token: Option<String>,
    /// A file holding it.
    token_file: Option<String>,
    /// The toolsets its holder is offered.
    toolsets: Option<Vec<String>>,
    /// Only tools that read.
    #[serde(default)]
    read_only: bool,
    /// The credential set (`[clusters.NAME.credential_sets.SET]`) its
    /// holder acts in Proxmox with.
    pve_credentials: Option<String>,
}

/// What a table gives its token's holder: toolsets, read-only, and the
/// credential set.
type Offered = (Option<Vec<String>>, bool, Option<String>);

fn valid_token_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The tokens of `[http.tokens]` (inline, or `NAME_file` naming a file that
/// holds one) and `MCP_AUTH_TOKEN`(`_FILE`), which replaces the file's
/// `default` and comes first. Every token must be strong and unique.
pub fn load(
    tokens: &IndexMap<String, FileToken>,
    layers: &Layers<'_>,
) -> Result<Vec<NamedToken>, ConfigError> {
    let section = layers.file_key("tokens");
    // (name, token, where it came from), in file order.
    let mut found: Vec<(String, String, String)> = Vec::new();
    // What a table gives its token's holder, by name.
    let mut offered: Vec<(String, Offered)> = Vec::new();
    for (key, entry) in tokens {
        let (name, from_file, value) = match entry {
            FileToken::Plain(value) => match key.strip_suffix("_file") {
                Some(name) => (name, true, value.clone()),
                None => (key.as_str(), false, value.clone()),
            },
            FileToken::Table(table) => {
                let where_ = format!("{section}.{key}");
                let (from_file, value) = match (&table.token, &table.token_file) {
                    (Some(token), None) => (false, token.clone()),
                    (None, Some(path)) => (true, path.clone()),
                    _ => {
                        return Err(ConfigError::new(
                            where_,
                            "needs exactly one of token and token_file",
                            "give the token inline (token = \"...\") or in a file (token_file = \"/path\")",
                        ));
                    }
                };
                let toolsets = match &table.toolsets {
                    Some(names) => Some(crate::config::tools::parse_list(
                        names.clone(),
                        &format!("{where_}.toolsets"),
                    )?),
                    None => None,
                };
                offered.push((
                    key.clone(),
                    (toolsets, table.read_only, table.pve_credentials.clone()),
                ));
                (key.as_str(), from_file, value)
            }
        };
        let value = &value;
        let where_ = format!("{section}.{key}");
        if !valid_token_name(name) {
            return Err(ConfigError::new(
                where_,
                format!("{name:?} is not a valid token name"),
                "name tokens with letters, digits, '-', '_' and '.'; the audit log shows the name",
            ));
        }
        if found.iter().any(|(n, _, _)| n == name) {
            return Err(ConfigError::new(
                where_,
                format!("token {name:?} is given twice (inline and as a file)"),
                format!("keep one of {name} and {name}_file"),
            ));
        }
        let token = if from_file {
            read_secret_file(Path::new(value), &where_, "token")?
        } else {
            value.clone()
        };
        found.push((name.to_string(), token, where_));
    }
    let env_token = layers.secret(
        layers
            .env_sourced("MCP_AUTH_TOKEN")
            .map(|t| t.map(|t| t.trim().to_string())),
        layers
            .env_sourced("MCP_AUTH_TOKEN_FILE")
            .map(|p| p.map(|p| PathBuf::from(p.trim()))),
        "token",
    )?;
    if let Some(token) = env_token {
        found.retain(|(n, _, _)| n != DEFAULT_TOKEN_NAME);
        found.insert(0, (DEFAULT_TOKEN_NAME.to_string(), token.value, token.key));
    }
    let mut tokens: Vec<NamedToken> = Vec::with_capacity(found.len());
    for (name, token, key) in found {
        if !is_bearer_token(&token) {
            return Err(ConfigError::new(
                key,
                format!(
                    "the token for {name:?} is shorter than {MIN_TOKEN_LEN} characters or has characters a bearer token cannot carry"
                ),
                format!(
                    "use a random token of at least {MIN_TOKEN_LEN} characters, e.g. the output of `openssl rand -hex 32`"
                ),
            ));
        }
        if tokens.iter().any(|t| t.secret.expose() == token) {
            return Err(ConfigError::new(
                key,
                format!("the token for {name:?} is the same as another token"),
                "give every agent its own token, so the audit log can tell them apart",
            ));
        }
        let (toolsets, read_only, pve_credentials) = offered
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, o)| o.clone())
            .unwrap_or((None, false, None));
        tokens.push(NamedToken {
            name: Arc::from(name),
            secret: Secret::new(token),
            toolsets,
            read_only,
            pve_credentials,
        });
    }
    Ok(tokens)
}
