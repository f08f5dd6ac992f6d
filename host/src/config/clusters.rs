//! The Proxmox clusters: the default one (`[pve]`, or the reference
//! server's `PVE_*` variables) and the named `[clusters.NAME]` sections,
//! which the environment never touches. Each is checked once into a
//! [`Cluster`]: its endpoint, credentials and TLS.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::credentials::{
    FileCredentials, TierTokens, both_given, check_header_safe, load_sets, load_tiers,
    validate_token_id,
};
use super::layered::{Env, Layers};
use crate::endpoint::{Endpoint, EndpointError};
use crate::error::ConfigError;
use crate::secret::Secret;
use crate::tls::client::{Fingerprint, TlsMode};

/// One Proxmox VE cluster (or single node) and how to reach it.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// The name tools and logs use for it.
    pub name: String,
    /// Where its API lives.
    pub endpoint: Endpoint,
    /// How the host authenticates; the guest never sees this.
    pub auth: Auth,
    /// How the host verifies the cluster's certificate.
    pub tls: TlsMode,
    /// How long one upstream request may take.
    pub timeout: Duration,
    /// The credential sets agents' bearer tokens may name
    /// (`[….credential_sets.SET]`), in file order.
    pub credential_sets: Vec<(String, TierTokens)>,
}

impl Cluster {
    /// Its API tokens per tier: one for every tier with a single token,
    /// each tier's own with `[….credentials.*]`; `None` with a password.
    pub fn tier_tokens(&self) -> Option<TierTokens> {
        match &self.auth {
            Auth::Token { id, secret } => Some(TierTokens::single(super::credentials::ApiToken {
                id: id.clone(),
                secret: secret.clone(),
            })),
            Auth::Tiers(tokens) => Some(tokens.clone()),
            Auth::Password { .. } => None,
        }
    }

    /// Every secret it holds, its credential sets' too: what to scrub
    /// from any text that leaves the host.
    pub fn secrets(&self) -> Vec<Secret> {
        let mut secrets = self.auth.secrets();
        for (_, set) in &self.credential_sets {
            secrets.extend(set.secrets());
        }
        secrets
    }
}

/// Proxmox credentials.
#[derive(Debug, Clone)]
pub enum Auth {
    /// An API token, sent as `Authorization: PVEAPIToken=ID=SECRET`.
    Token {
        /// `user@realm!tokenname`.
        id: String,
        /// The token's UUID secret.
        secret: Secret,
    },
    /// A user and password: the host logs in (`POST /access/ticket`) and
    /// sends the ticket as a cookie, renewing it before it expires.
    Password {
        /// `user@realm`.
        username: String,
        /// The password.
        password: Secret,
        /// How long Proxmox tickets live (2 h); renewed at three quarters.
        ticket_lifetime: Duration,
    },
    /// An API token per tier (`[….credentials.read]`, `.write`,
    /// `.destructive`): each call carries its granted tier's.
    Tiers(TierTokens),
}

impl Auth {
    /// The secrets to scrub from any text that leaves the host.
    pub fn secrets(&self) -> Vec<Secret> {
        match self {
            Auth::Token { secret, .. } => vec![secret.clone()],
            Auth::Password { password, .. } => vec![password.clone()],
            Auth::Tiers(tokens) => tokens.secrets(),
        }
    }
}

/// Proxmox tickets are valid for two hours.
pub const TICKET_LIFETIME: Duration = Duration::from_secs(2 * 3600);

/// One cluster's section, `[pve]` or `[clusters.NAME]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileCluster {
    base_url: Option<String>,
    token_id: Option<String>,
    token_secret: Option<String>,
    token_secret_file: Option<PathBuf>,
    username: Option<String>,
    password: Option<String>,
    password_file: Option<PathBuf>,
    ticket_lifetime_secs: Option<u64>,
    verify_ssl: Option<bool>,
    ca_file: Option<PathBuf>,
    fingerprint: Option<String>,
    timeout_secs: Option<u64>,
    allow_insecure_http: Option<bool>,
    credentials: Option<FileCredentials>,
    credential_sets: Option<indexmap::IndexMap<String, FileCredentials>>,
}

fn parse_seconds(raw: &str, key: &str, max: u64) -> Result<Duration, ConfigError> {
    // The reference server accepts fractional seconds ("2.5").
    let secs: f64 = raw.trim().parse().map_err(|_| {
        ConfigError::new(
            key,
            format!("{raw:?} is not a number of seconds"),
            "use a number of seconds, e.g. 30",
        )
    })?;
    if !(secs > 0.0 && secs <= max as f64) {
        return Err(ConfigError::new(
            key,
            format!("{raw} is out of range"),
            format!("use between 1 and {max} seconds"),
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The variables that describe the default cluster.
const DEFAULT_CLUSTER_ENV: &[&str] = &[
    "PVE_BASE_URL",
    "PVE_API_TOKEN_ID",
    "PVE_API_TOKEN_SECRET",
    "PVE_API_TOKEN_SECRET_FILE",
    "PVE_USERNAME",
    "PVE_PASSWORD",
    "PVE_PASSWORD_FILE",
];

/// Reads every cluster: the default one first (from `[pve]` and the
/// environment) when either names one or no named section exists, then the
/// named sections in file order.
pub fn load(
    pve: Option<&FileCluster>,
    named: &indexmap::IndexMap<String, FileCluster>,
    file_name: &str,
    env: Env,
) -> Result<Vec<Cluster>, ConfigError> {
    let mut clusters = Vec::new();
    let layers = Layers::new(env, "pve", file_name);
    let env_names_default = DEFAULT_CLUSTER_ENV.iter().any(|k| layers.env(k).is_some());
    let empty = FileCluster::default();
    if pve.is_some() || env_names_default || named.is_empty() {
        let section = pve.unwrap_or(&empty);
        clusters.push(load_cluster(&layers, section, "default")?);
    }
    for (name, section) in named {
        let key = format!("[clusters.{name}] (in {file_name})");
        if !valid_cluster_name(name) {
            return Err(ConfigError::new(
                key,
                format!("{name:?} is not a valid cluster name"),
                "use letters, digits, '-' and '_' (agents pass it as the `cluster` argument)",
            ));
        }
        if clusters.iter().any(|c: &Cluster| c.name == *name) {
            return Err(ConfigError::new(
                key,
                format!("cluster {name:?} is defined twice"),
                "give every cluster its own name ([pve] is named \"default\")",
            ));
        }
        let layers = Layers::file_only(format!("clusters.{name}"), file_name);
        clusters.push(load_cluster(&layers, section, name)?);
    }
    Ok(clusters)
}

fn valid_cluster_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

fn load_cluster(src: &Layers<'_>, f: &FileCluster, name: &str) -> Result<Cluster, ConfigError> {
    let base = src.text("PVE_BASE_URL", "base_url", f.base_url.as_ref()).ok_or_else(|| {
        if src.reads_env() {
            ConfigError::new(
                "PVE_BASE_URL",
                "not set: pve-mcp needs to know where your Proxmox VE API is",
                "set PVE_BASE_URL=https://your-pve-host:8006 (or base_url in the [pve] section of --config); to try pve-mcp without Proxmox, run `pve-mcp demo`",
            )
        } else {
            ConfigError::new(src.file_key("base_url"), "not set", "add base_url = \"https://HOST:8006\" to the section")
        }
    })?;
    let allow_http = src
        .boolean(
            "PVE_ALLOW_INSECURE_HTTP",
            "allow_insecure_http",
            f.allow_insecure_http,
        )?
        .is_some_and(|s| s.value);
    let endpoint = Endpoint::parse(&base.value, allow_http)
        .map_err(|e| endpoint_error(&base.key, &base.value, e))?;
    let auth = load_auth(src, f)?;
    let tls = load_tls(src, f)?;
    let timeout = match src.text("PVE_TIMEOUT", "timeout_secs", f.timeout_secs) {
        Some(t) => parse_seconds(&t.value, &t.key, 3600)?,
        None => Duration::from_secs(30),
    };
    let credential_sets = match &f.credential_sets {
        Some(sets) => load_sets(src.section(), src.file_name(), sets)?,
        None => Vec::new(),
    };
    Ok(Cluster {
        name: name.into(),
        endpoint,
        auth,
        tls,
        timeout,
        credential_sets,
    })
}

fn endpoint_error(key: &str, value: &str, e: EndpointError) -> ConfigError {
    let fix = match e {
        EndpointError::InsecureHttp => {
            "use https:// (Proxmox serves HTTPS on port 8006); if you really need plain HTTP, also set PVE_ALLOW_INSECURE_HTTP=true"
        }
        _ => {
            "use the form https://HOST:8006 (a trailing /api2/json is fine; nothing else after the port)"
        }
    };
    ConfigError::new(key, format!("{value:?}: {e}"), fix)
}

fn load_auth(src: &Layers<'_>, f: &FileCluster) -> Result<Auth, ConfigError> {
    let id = src.text("PVE_API_TOKEN_ID", "token_id", f.token_id.as_ref());
    let user = src.text("PVE_USERNAME", "username", f.username.as_ref());
    if let Some(tiers) = &f.credentials {
        if let Some(single) = id.as_ref().or(user.as_ref()) {
            return Err(both_given(&single.key, src.section(), src.file_name()));
        }
        return Ok(Auth::Tiers(load_tiers(
            src.section(),
            src.file_name(),
            tiers,
        )?));
    }
    // A token wins over a password, as in the reference server.
    if let Some(id) = id {
        validate_token_id(&id.value).map_err(|problem| {
            ConfigError::new(&id.key, problem, "use the full token id as Proxmox shows it, e.g. root@pam!mcp or monitor@pve!readonly")
        })?;
        let secret = src
            .secret(
                src.text("PVE_API_TOKEN_SECRET", "token_secret", f.token_secret.as_ref()),
                src.path("PVE_API_TOKEN_SECRET_FILE", "token_secret_file", &f.token_secret_file),
                "secret",
            )?
            .ok_or_else(|| {
                ConfigError::new(
                    if src.reads_env() { "PVE_API_TOKEN_SECRET".to_string() } else { src.file_key("token_secret") },
                    "not set: the token id is there but its secret is not",
                    "set PVE_API_TOKEN_SECRET (the UUID Proxmox showed once when the token was made), or token_secret_file",
                )
            })?;
        check_header_safe(
            &secret,
            "use the UUID exactly as Proxmox showed it, with no quotes or line breaks",
        )?;
        return Ok(Auth::Token {
            id: id.value,
            secret: Secret::new(secret.value),
        });
    }
    if let Some(user) = user {
        if !user.value.contains('@')
            || user
                .value
                .chars()
                .any(|c| c.is_whitespace() || c == ':' || c == '/')
        {
            return Err(ConfigError::new(
                &user.key,
                format!("{:?} is not a Proxmox user id", user.value),
                "use user@realm, e.g. root@pam or mcp@pve",
            ));
        }
        let password = src
            .secret(
                src.text("PVE_PASSWORD", "password", f.password.as_ref()),
                src.path("PVE_PASSWORD_FILE", "password_file", &f.password_file),
                "secret",
            )?
            .ok_or_else(|| {
                ConfigError::new(
                    if src.reads_env() { "PVE_PASSWORD".to_string() } else { src.file_key("password") },
                    "not set: the user name is there but its password is not",
                    "set PVE_PASSWORD or PVE_PASSWORD_FILE (password_file in the file); an API token is the better choice",
                )
            })?;
        if password.value.is_empty() {
            return Err(ConfigError::new(
                password.key,
                "the password is empty",
                "set the user's password",
            ));
        }
        let ticket_lifetime = match src.file("ticket_lifetime_secs", f.ticket_lifetime_secs) {
            Some(secs) => parse_seconds(&secs.value.to_string(), &secs.key, 7200)?,
            None => TICKET_LIFETIME,
        };
        return Ok(Auth::Password {
            username: user.value,
            password: Secret::new(password.value),
            ticket_lifetime,
        });
    }
    Err(ConfigError::new(
        if src.reads_env() {
            "PVE_API_TOKEN_ID".to_string()
        } else {
            src.file_key("token_id")
        },
        "no credentials: pve-mcp needs an API token (or a user and password)",
        "set PVE_API_TOKEN_ID=user@realm!tokenname and PVE_API_TOKEN_SECRET (or token_id / token_secret_file in the config, or a token per tier in [pve or clusters.NAME.credentials.read], .write and .destructive); PVE_USERNAME and PVE_PASSWORD also work",
    ))
}

fn load_tls(src: &Layers<'_>, f: &FileCluster) -> Result<TlsMode, ConfigError> {
    let verify = src.boolean("PVE_VERIFY_SSL", "verify_ssl", f.verify_ssl)?;
    let ca = src.path("PVE_CA_FILE", "ca_file", &f.ca_file);
    let pin = src.text("PVE_TLS_FINGERPRINT", "fingerprint", f.fingerprint.as_ref());
    if let Some(pin) = pin {
        let fp = Fingerprint::parse(&pin.value).map_err(|problem| {
            ConfigError::new(
                &pin.key,
                problem,
                "use the SHA-256 fingerprint as Proxmox shows it (Node > System > Certificates, or `pvenode cert info`): 32 hex pairs separated by ':'",
            )
        })?;
        return Ok(TlsMode::Fingerprint(fp));
    }
    if let Some(ca) = ca {
        let pem = std::fs::read(&ca.value).map_err(|e| {
            ConfigError::new(
                &ca.key,
                format!("cannot read {}: {e}", ca.value.display()),
                "copy the cluster CA from /etc/pve/pve-root-ca.pem on any node and point to it",
            )
        })?;
        crate::tls::client::parse_ca_pem(&pem).map_err(|problem| {
            ConfigError::new(
                &ca.key,
                format!("{}: {problem}", ca.value.display()),
                "use the PEM file /etc/pve/pve-root-ca.pem from a cluster node",
            )
        })?;
        return Ok(TlsMode::CaPem(pem));
    }
    if verify.as_ref().is_some_and(|v| !v.value) {
        return Ok(TlsMode::Insecure);
    }
    Ok(TlsMode::WebPki)
}
