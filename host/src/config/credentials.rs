//! Proxmox credentials per tier and per agent: `[pve.credentials.read]`,
//! `.write` and `.destructive` (and `[clusters.NAME.credentials.*]`), each
//! an API token, so a read call reaches Proxmox as a token that can only
//! read; and the named sets `[pve.credential_sets.SET.*]` that an HTTP
//! bearer token picks with `[http.tokens.NAME] pve_credentials = "SET"`,
//! so each agent acts in Proxmox as its own token.
//!
//! `fallback = true` in `[….credentials]` lets a tier without a token use
//! the next one down (destructive uses write's, write uses read's), never
//! a higher one; without it that tier has no credential, and its tools are
//! not offered. The read token is required: every tool reads.

use std::path::PathBuf;

use indexmap::IndexMap;
use serde::Deserialize;

use super::layered::{Layers, Sourced};
use crate::error::ConfigError;
use crate::secret::Secret;
use crate::tier::Tier;

/// One Proxmox API token.
#[derive(Debug, Clone)]
pub struct ApiToken {
    /// `user@realm!tokenname`.
    pub id: String,
    /// The token's UUID secret.
    pub secret: Secret,
}

/// A token per tier; `None` where the tier has none (after `fallback`).
#[derive(Debug, Clone, Default)]
pub struct TierTokens {
    /// For read calls (and an approval's dry run).
    pub read: Option<ApiToken>,
    /// For write calls.
    pub write: Option<ApiToken>,
    /// For destructive calls.
    pub destructive: Option<ApiToken>,
}

impl TierTokens {
    /// One token for every tier (today's single credential).
    pub fn single(token: ApiToken) -> TierTokens {
        TierTokens {
            read: Some(token.clone()),
            write: Some(token.clone()),
            destructive: Some(token),
        }
    }

    /// The token of a tier, if it has one.
    pub fn get(&self, tier: Tier) -> Option<&ApiToken> {
        match tier {
            Tier::Read => self.read.as_ref(),
            Tier::Write => self.write.as_ref(),
            Tier::Destructive => self.destructive.as_ref(),
        }
    }

    /// The secrets to scrub from any text that leaves the host.
    pub fn secrets(&self) -> Vec<Secret> {
        [&self.read, &self.write, &self.destructive]
            .into_iter()
            .flatten()
            .map(|t| t.secret.clone())
            .collect()
    }
}

/// `[….credentials]` or `[….credential_sets.SET]`: a token per tier.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileCredentials {
    fallback: Option<bool>,
    read: Option<FileApiToken>,
    write: Option<FileApiToken>,
    destructive: Option<FileApiToken>,
}

/// `[….credentials.TIER]`: one token, as the single credential takes it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileApiToken {
    token_id: Option<String>,
    token_secret: Option<String>,
    token_secret_file: Option<PathBuf>,
}

/// Reads `[SECTION.credentials]` (`section`: `pve` or `clusters.NAME`).
pub fn load_tiers(
    section: &str,
    file_name: &str,
    f: &FileCredentials,
) -> Result<TierTokens, ConfigError> {
    load_set(&format!("{section}.credentials"), file_name, f)
}

/// Reads `[SECTION.credential_sets.*]`, each set by name, in file order.
pub fn load_sets(
    section: &str,
    file_name: &str,
    sets: &IndexMap<String, FileCredentials>,
) -> Result<Vec<(String, TierTokens)>, ConfigError> {
    let mut out = Vec::with_capacity(sets.len());
    for (name, f) in sets {
        let table = format!("{section}.credential_sets.{name}");
        if !valid_set_name(name) {
            return Err(ConfigError::new(
                format!("[{table}] (in {file_name})"),
                format!("{name:?} is not a valid credential set name"),
                "use letters, digits, '-' and '_' (a bearer token names it in pve_credentials)",
            ));
        }
        out.push((name.clone(), load_set(&table, file_name, f)?));
    }
    Ok(out)
}

/// A credential set's name: what `[http.tokens.NAME] pve_credentials` takes.
pub fn valid_set_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

fn load_set(table: &str, file_name: &str, f: &FileCredentials) -> Result<TierTokens, ConfigError> {
    let one = |tier: &str, token: &Option<FileApiToken>| {
        token
            .as_ref()
            .map(|t| load_token(&Layers::file_only(format!("{table}.{tier}"), file_name), t))
            .transpose()
    };
    let read = one("read", &f.read)?;
    let write = one("write", &f.write)?;
    let destructive = one("destructive", &f.destructive)?;
    if read.is_none() {
        return Err(ConfigError::new(
            format!("[{table}.read] (in {file_name})"),
            "not set: every tool reads, so a credential set needs a read token",
            format!(
                "add [{table}.read] with token_id and token_secret_file (a token with the \
                 PVEAuditor role on / is enough)"
            ),
        ));
    }
    let mut tokens = TierTokens {
        read,
        write,
        destructive,
    };
    // Down, never up: a missing tier may use a LOWER tier's token.
    if f.fallback == Some(true) {
        if tokens.write.is_none() {
            tokens.write = tokens.read.clone();
        }
        if tokens.destructive.is_none() {
            tokens.destructive = tokens.write.clone();
        }
    }
    Ok(tokens)
}

fn load_token(src: &Layers<'_>, f: &FileApiToken) -> Result<ApiToken, ConfigError> {
    let id = src.file("token_id", f.token_id.clone()).ok_or_else(|| {
        ConfigError::new(
            src.file_key("token_id"),
            "not set: a credential needs its token id",
            "add token_id = \"user@realm!tokenname\" (as `pveum user token list` shows it)",
        )
    })?;
    validate_token_id(&id.value).map_err(|problem| {
        ConfigError::new(
            &id.key,
            problem,
            "use the full token id as Proxmox shows it, e.g. mcp@pve!read",
        )
    })?;
    let secret = src
        .secret(
            src.file("token_secret", f.token_secret.clone()),
            src.file("token_secret_file", f.token_secret_file.clone()),
            "secret",
        )?
        .ok_or_else(|| {
            ConfigError::new(
                src.file_key("token_secret"),
                "not set: the token id is there but its secret is not",
                "add token_secret_file = \"/run/secrets/...\" (a file holding the UUID Proxmox \
                 showed once when the token was made), or token_secret",
            )
        })?;
    check_header_safe(
        &secret,
        "use the UUID exactly as Proxmox showed it, with no quotes or line breaks",
    )?;
    Ok(ApiToken {
        id: id.value,
        secret: Secret::new(secret.value),
    })
}

/// The error for a section that has both the single credential (`single`:
/// the key that gives it) and `[….credentials.*]`.
pub fn both_given(single: &str, section: &str, file_name: &str) -> ConfigError {
    ConfigError::new(
        format!("[{section}.credentials] (in {file_name})"),
        format!(
            "set together with {single}: a cluster takes either one credential for every tier \
             or a token per tier, not both"
        ),
        format!(
            "keep one: remove {single} (and its secret), or remove the [{section}.credentials.*] \
             tables"
        ),
    )
}

/// Every credential set a bearer token names (`[http.tokens.NAME]
/// pve_credentials`) must be defined by some cluster: a name no cluster
/// knows is a typo, and its agent could reach nothing.
pub fn check_agents(
    defined: &[&str],
    tokens: &[super::http::NamedToken],
    file_name: &str,
) -> Result<(), ConfigError> {
    for token in tokens {
        let Some(set) = &token.pve_credentials else {
            continue;
        };
        if !defined.contains(&set.as_str()) {
            return Err(ConfigError::new(
                format!(
                    "http.tokens.{}.pve_credentials (in {file_name})",
                    token.name
                ),
                format!("names the credential set {set:?}, which no cluster defines"),
                format!(
                    "add [clusters.NAME.credential_sets.{set}.read] (or [pve.credential_sets.{set}.read]) \
                     with the agent's own Proxmox token, or correct the name"
                ),
            ));
        }
    }
    Ok(())
}

pub fn check_header_safe(secret: &Sourced<String>, fix: &str) -> Result<(), ConfigError> {
    if secret.value.is_empty()
        || secret
            .value
            .chars()
            .any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(ConfigError::new(
            &secret.key,
            "the secret is empty or contains spaces or control characters",
            fix,
        ));
    }
    Ok(())
}

/// PVE's own rule: `user@realm!token`, user without whitespace, `:` or `/`,
/// realm and token name starting with a letter.
pub fn validate_token_id(id: &str) -> Result<(), String> {
    let name_ok = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    };
    let Some((user_realm, token)) = id.rsplit_once('!') else {
        return Err(format!("{id:?} has no '!tokenname' part"));
    };
    let Some((user, realm)) = user_realm.rsplit_once('@') else {
        return Err(format!("{id:?} has no '@realm' part"));
    };
    if user.is_empty()
        || user
            .chars()
            .any(|c| c.is_whitespace() || c == ':' || c == '/')
    {
        return Err(format!("{id:?} has an invalid user name"));
    }
    if !name_ok(realm) {
        return Err(format!("{id:?} has an invalid realm {realm:?}"));
    }
    if !name_ok(token) {
        return Err(format!("{id:?} has an invalid token name {token:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::config::layered::test_env::env;
    use crate::error::ConfigError;
    use crate::tier::Tier;

    const S1: &str = "11111111-2222-4333-8444-555555555555";
    const S2: &str = "22222222-2222-4333-8444-555555555555";
    const S3: &str = "33333333-2222-4333-8444-555555555555";

    fn load(text: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, text).unwrap();
        std::fs::write(dir.path().join("secret"), format!("{S3}\n")).unwrap();
        let text = text.replace(
            "SECRET_FILE",
            &dir.path().join("secret").display().to_string(),
        );
        std::fs::write(&path, text).unwrap();
        Config::load(Some(&path), &env(vars))
    }

    fn tiers(read: bool, write: bool, destructive: bool, fallback: &str) -> String {
        let mut s = format!(
            "[clusters.lab]\nbase_url = \"https://lab:8006\"\n[clusters.lab.credentials]\n{fallback}\n"
        );
        if read {
            s += &format!(
                "[clusters.lab.credentials.read]\ntoken_id = \"ro@pve!read\"\ntoken_secret = \"{S1}\"\n"
            );
        }
        if write {
            s += &format!(
                "[clusters.lab.credentials.write]\ntoken_id = \"ops@pve!write\"\ntoken_secret = \"{S2}\"\n"
            );
        }
        if destructive {
            s += "[clusters.lab.credentials.destructive]\ntoken_id = \"root@pam!all\"\ntoken_secret_file = \"SECRET_FILE\"\n";
        }
        s
    }

    fn ids(c: &Config) -> [Option<String>; 3] {
        let tokens = c.clusters[0].tier_tokens().expect("tokens");
        [Tier::Read, Tier::Write, Tier::Destructive].map(|t| tokens.get(t).map(|t| t.id.clone()))
    }

    #[test]
    fn a_token_per_tier_and_fallback_only_downwards() {
        let c = load(&tiers(true, true, true, ""), &[]).unwrap();
        assert_eq!(
            ids(&c),
            [
                Some("ro@pve!read".into()),
                Some("ops@pve!write".into()),
                Some("root@pam!all".into())
            ]
        );
        assert_eq!(
            c.clusters[0]
                .tier_tokens()
                .unwrap()
                .destructive
                .as_ref()
                .unwrap()
                .secret
                .expose(),
            S3
        );
        // Without fallback a missing tier has no token.
        let c = load(&tiers(true, false, false, ""), &[]).unwrap();
        assert_eq!(ids(&c), [Some("ro@pve!read".into()), None, None]);
        // With it, write uses read's and destructive write's: lower ones.
        let c = load(&tiers(true, false, false, "fallback = true"), &[]).unwrap();
        assert_eq!(
            ids(&c),
            [
                Some("ro@pve!read".into()),
                Some("ro@pve!read".into()),
                Some("ro@pve!read".into())
            ]
        );
        let c = load(&tiers(true, true, false, "fallback = true"), &[]).unwrap();
        assert_eq!(ids(&c)[2].as_deref(), Some("ops@pve!write"));
        // A missing write never takes the destructive token.
        let c = load(&tiers(true, false, true, "fallback = true"), &[]).unwrap();
        assert_eq!(ids(&c)[1].as_deref(), Some("ro@pve!read"));
    }

    #[test]
    fn every_credential_error_names_its_key_and_fix() {
        // No read token.
        let e = load(&tiers(false, true, true, ""), &[]).unwrap_err();
        assert!(e.key.starts_with("[clusters.lab.credentials.read]"), "{e}");
        assert!(e.fix.contains("PVEAuditor"), "{e}");
        // Both the single credential and per-tier tokens.
        let mixed = tiers(true, false, false, "").replace(
            "base_url = \"https://lab:8006\"\n",
            &format!(
                "base_url = \"https://lab:8006\"\ntoken_id = \"a@pve!t\"\ntoken_secret = \"{S1}\"\n"
            ),
        );
        let e = load(&mixed, &[]).unwrap_err();
        assert!(e.key.starts_with("[clusters.lab.credentials]"), "{e}");
        assert!(e.problem.contains("clusters.lab.token_id"), "{e}");
        assert!(e.fix.contains("remove"), "{e}");
        // The environment's single credential and [pve.credentials].
        let pve = format!(
            "[pve.credentials.read]\ntoken_id = \"ro@pve!read\"\ntoken_secret = \"{S1}\"\n"
        );
        let e = load(
            &pve,
            &[
                ("PVE_BASE_URL", "https://pve:8006"),
                ("PVE_API_TOKEN_ID", "root@pam!mcp"),
                ("PVE_API_TOKEN_SECRET", S2),
            ],
        )
        .unwrap_err();
        assert!(
            e.key.starts_with("[pve.credentials]") && e.problem.contains("PVE_API_TOKEN_ID"),
            "{e}"
        );
        let c = load(&pve, &[("PVE_BASE_URL", "https://pve:8006")]).unwrap();
        assert_eq!(ids(&c)[0].as_deref(), Some("ro@pve!read"));
        // A tier table without its id, with a bad id, without a secret,
        // with a secret both ways, with an unknown key.
        let base =
            "[clusters.lab]\nbase_url = \"https://lab:8006\"\n[clusters.lab.credentials.read]\n";
        for (body, key, what) in [
            (
                format!("token_secret = \"{S1}\"\n"),
                "clusters.lab.credentials.read.token_id",
                "not set",
            ),
            (
                format!("token_id = \"nobang@pve\"\ntoken_secret = \"{S1}\"\n"),
                "clusters.lab.credentials.read.token_id",
                "tokenname",
            ),
            (
                "token_id = \"a@pve!t\"\n".to_string(),
                "clusters.lab.credentials.read.token_secret",
                "not set",
            ),
            (
                "token_id = \"a@pve!t\"\ntoken_secret = \"has space\"\n".to_string(),
                "clusters.lab.credentials.read.token_secret",
                "spaces",
            ),
            (
                format!(
                    "token_id = \"a@pve!t\"\ntoken_secret = \"{S1}\"\ntoken_secret_file = \"SECRET_FILE\"\n"
                ),
                "clusters.lab.credentials.read.token_secret_file",
                "both",
            ),
        ] {
            let e = load(&format!("{base}{body}"), &[]).unwrap_err();
            assert!(e.key.starts_with(key), "{key}: {e}");
            assert!(e.problem.contains(what), "{what}: {e}");
            assert!(!e.fix.is_empty());
        }
        let e = load(
            &format!("{base}token_id = \"a@pve!t\"\ntoken_secret = \"{S1}\"\nrole = \"x\"\n"),
            &[],
        )
        .unwrap_err();
        assert!(e.problem.contains("role"), "{e}");
    }

    #[test]
    fn credential_sets_are_named_and_checked() {
        let sets = format!(
            "[clusters.lab]\nbase_url = \"https://lab:8006\"\ntoken_id = \"a@pve!t\"\ntoken_secret = \"{S1}\"\n\
             [clusters.lab.credential_sets.alice.read]\ntoken_id = \"alice@pve!mcp\"\ntoken_secret = \"{S2}\"\n"
        );
        let c = load(&sets, &[]).unwrap();
        let (name, set) = &c.clusters[0].credential_sets[0];
        assert_eq!(name, "alice");
        assert_eq!(set.read.as_ref().unwrap().id, "alice@pve!mcp");
        assert!(set.write.is_none());
        // The set's secrets are scrubbed like the cluster's own.
        assert!(c.clusters[0].secrets().iter().any(|s| s.expose() == S2));
        let bad = sets.replace("credential_sets.alice.read", "credential_sets.\"a b\".read");
        let e = load(&bad, &[]).unwrap_err();
        assert!(
            e.key.contains("credential_sets.a b") && e.problem.contains("not a valid"),
            "{e}"
        );
        let no_read = sets.replace("credential_sets.alice.read", "credential_sets.alice.write");
        let e = load(&no_read, &[]).unwrap_err();
        assert!(
            e.key
                .starts_with("[clusters.lab.credential_sets.alice.read]"),
            "{e}"
        );
        // A bearer token naming a set: one some cluster defines, or an
        // error naming the token's key and the table to add.
        let agent = |set: &str| {
            format!(
                "{sets}[http.tokens.alice]\ntoken = \"0123456789abcdef0123\"\npve_credentials = \"{set}\"\n"
            )
        };
        let c = load(&agent("alice"), &[]).unwrap();
        assert_eq!(c.http.tokens[0].pve_credentials.as_deref(), Some("alice"));
        let e = load(&agent("bob"), &[]).unwrap_err();
        assert!(e.key.contains("http.tokens.alice.pve_credentials"), "{e}");
        assert!(
            e.fix.contains("[clusters.NAME.credential_sets.bob.read]"),
            "{e}"
        );
    }
}
