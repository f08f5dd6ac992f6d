//! The `[approvals]` section: how long approvals count, where the admin
//! endpoint listens, and its token. The server and `pve-mcp approvals` read
//! the same settings, so the command finds the endpoint without flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::layered::{Layers, MIN_TOKEN_LEN, is_bearer_token};
use super::listen::ListenAddr;
use super::section::section;
use crate::error::ConfigError;
use crate::secret::Secret;

/// The admin token from the environment (overrides the file).
pub const TOKEN_ENV: &str = "PVE_MCP_ADMIN_TOKEN";
/// A file holding the admin token, from the environment.
pub const TOKEN_FILE_ENV: &str = "PVE_MCP_ADMIN_TOKEN_FILE";

/// [`DEFAULT_TTL`] in seconds, as the file gives it.
const DEFAULT_TTL_SECS: u64 = 900;
/// Approvals count for 15 minutes unless configured.
pub const DEFAULT_TTL: Duration = Duration::from_secs(DEFAULT_TTL_SECS);
/// At most a week: an approval is for a call someone is waiting on.
const MAX_TTL_SECS: u64 = 7 * 24 * 3600;
/// Open (pending) approvals one caller may have unless configured.
pub const DEFAULT_MAX_PENDING_PER_CALLER: usize = 20;
/// `[approvals] max_pending_per_caller` from the environment.
pub const MAX_PENDING_PER_CALLER_ENV: &str = "PVE_MCP_APPROVALS_MAX_PENDING_PER_CALLER";
/// `[approvals] state_key_file` from the environment.
pub const STATE_KEY_FILE_ENV: &str = "PVE_MCP_APPROVALS_STATE_KEY_FILE";
/// The fewest bytes a `state_key_file` may hold: HMAC-SHA256's block of
/// security, and what rmcp's `RequestStateCodec` requires.
pub const MIN_STATE_KEY_LEN: usize = 32;
/// The admin endpoint's address unless configured.
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:7391";

/// Where the admin endpoint listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminAddress {
    /// HTTP on a loopback address.
    Tcp(SocketAddr),
    /// HTTP on a unix socket (created with mode 0600).
    Unix(PathBuf),
}

impl std::fmt::Display for AdminAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AdminAddress::Tcp(addr) => write!(f, "http://{addr}"),
            AdminAddress::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

impl Default for AdminAddress {
    /// [`DEFAULT_ADMIN_LISTEN`].
    fn default() -> Self {
        AdminAddress::Tcp(
            DEFAULT_ADMIN_LISTEN
                .parse()
                .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 7391))),
        )
    }
}

/// The key that seals MCP 2026-07-28 approval round trips
/// (`requestState`), read from `state_key_file`, and the setting it came
/// from.
#[derive(Clone)]
pub struct StateKey {
    /// The key's bytes (the file's contents without surrounding whitespace).
    pub bytes: std::sync::Arc<[u8]>,
    /// `PVE_MCP_APPROVALS_STATE_KEY_FILE` or `approvals.state_key_file (in FILE)`.
    pub key: String,
}

impl std::fmt::Debug for StateKey {
    /// Never the key: only where it came from.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKey")
            .field("bytes", &"[REDACTED]")
            .field("key", &self.key)
            .finish()
    }
}

/// The admin token and the setting it came from.
#[derive(Debug, Clone)]
pub struct AdminToken {
    /// The token; prints as `[REDACTED]`.
    pub secret: Secret,
    /// `PVE_MCP_ADMIN_TOKEN`, `approvals.admin_token_file (in FILE)`, ...
    pub key: String,
}

section! {
    /// `[approvals]` as written in the file.
    file FileApprovals;
    /// The `[approvals]` settings.
    #[derive(Debug, Clone)]
    settings ApprovalSettings in "approvals";

    /// How long a pending, approved or denied approval counts.
    ttl: Duration = number(
        1..=MAX_TTL_SECS,
        default DEFAULT_TTL_SECS,
        secs,
        hint " seconds (default 900)"
    ) from ttl_secs;
    /// How many pending approvals one caller (bearer token, or session
    /// without one) may have open at once; a further call that needs a new
    /// approval is refused, so one agent cannot fill the store for all.
    // At most the store-wide cap (crate::approval::store::MAX_RECORDS): a
    // higher one would never be reached.
    max_pending_per_caller: usize = number(
        1..=10_000,
        default DEFAULT_MAX_PENDING_PER_CALLER,
        count,
        env MAX_PENDING_PER_CALLER_ENV
    ) from max_pending_per_caller;
    /// Whether clients that declare elicitation are asked with a form.
    /// Off when the client cannot be trusted to put the question to a
    /// person (a harness that answers forms itself): then every approval
    /// goes through the admin endpoint.
    elicitation: bool = flag(default true) from elicitation;
    /// Where the admin endpoint listens.
    admin: AdminAddress = custom(read_admin, AdminAddress::default())
        from admin_listen: Option<String>, admin_socket: Option<PathBuf>;
    /// The admin token; required once any tool needs approval.
    admin_token: Option<AdminToken> = custom(read_admin_token, None)
        from admin_token: Option<String>, admin_token_file: Option<PathBuf>;
    /// The key that seals a 2026-07-28 client's approval round trip; when
    /// unset it is derived from the admin token, else random per process.
    state_key: Option<StateKey> = custom(read_state_key, None)
        from state_key_file: Option<PathBuf>;
}

fn read_admin(file: &FileApprovals, layers: &Layers<'_>) -> Result<AdminAddress, ConfigError> {
    let key = |name: &str| layers.file_key(name);
    match (&file.admin_listen, &file.admin_socket) {
        (Some(_), Some(_)) => Err(ConfigError::new(
            key("admin_socket"),
            "both admin_listen and admin_socket are set",
            "keep one: admin_listen = \"127.0.0.1:PORT\" or admin_socket = \"/path/admin.sock\"",
        )),
        (Some(listen), None) => Ok(AdminAddress::Tcp(admin_listen(
            listen,
            &key("admin_listen"),
        )?)),
        (None, Some(path)) => {
            if path.as_os_str().is_empty() || path.is_dir() {
                return Err(ConfigError::new(
                    key("admin_socket"),
                    format!("{:?} is not a socket path", path.display().to_string()),
                    "give the path of the socket file to create, e.g. /run/pve-mcp/admin.sock",
                ));
            }
            Ok(AdminAddress::Unix(path.clone()))
        }
        (None, None) => Ok(AdminAddress::default()),
    }
}

impl ApprovalSettings {
    /// Reads only `[approvals]` from the file (and the environment), for
    /// `pve-mcp approvals`: a person approving calls needs no Proxmox
    /// credentials, so the rest of the file is not checked here.
    pub fn load_alone(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ApprovalSettings, ConfigError> {
        let Some(path) = file else {
            return ApprovalSettings::load(&FileApprovals::default(), "config file", env);
        };
        let only: ApprovalsOnly = super::file::read(path)?;
        let section = match only.approvals {
            None => FileApprovals::default(),
            Some(value) => FileApprovals::deserialize(value).map_err(|e| {
                ConfigError::new(
                    format!("[approvals] (in {})", path.display()),
                    e.message().to_string(),
                    "the problem lists the keys [approvals] takes; see docs/approvals.md",
                )
            })?,
        };
        ApprovalSettings::load(&section, &path.display().to_string(), env)
    }

    /// The admin token, or the error that says how to set one.
    pub fn require_token(&self, why: &str) -> Result<&AdminToken, ConfigError> {
        self.admin_token.as_ref().ok_or_else(|| missing_token(why))
    }
}

/// The error for a missing admin token, saying why it is needed.
pub fn missing_token(why: &str) -> ConfigError {
    ConfigError::new(
        TOKEN_ENV,
        format!("no admin token: {why}"),
        "set PVE_MCP_ADMIN_TOKEN (or admin_token_file / admin_token in [approvals]) to a random string of at least 16 characters, e.g. `openssl rand -hex 24`; the server and `pve-mcp approvals` must use the same one",
    )
}

/// The configuration file as `pve-mcp approvals` reads it: only
/// `[approvals]`, since a person approving calls needs no Proxmox
/// credentials and must not be stopped by a problem in another section.
/// Other keys are therefore ignored here rather than denied; the server
/// reads the whole file, strictly, when it starts.
#[derive(Deserialize)]
struct ApprovalsOnly {
    approvals: Option<toml::Value>,
}

/// `admin_listen`: an IP address and port, on loopback only.
fn admin_listen(raw: &str, key: &str) -> Result<SocketAddr, ConfigError> {
    let addr = ListenAddr::parse(raw)
        .ok()
        .and_then(|a| a.socket_addr())
        .ok_or_else(|| {
            ConfigError::new(
                key,
                format!("{raw:?} is not an IP address and port"),
                "use a loopback address and port, e.g. 127.0.0.1:7391 or [::1]:7391",
            )
        })?;
    if !addr.ip().is_loopback() {
        return Err(ConfigError::new(
            key,
            format!(
                "{addr} is not a loopback address; the admin endpoint approves calls and must not be reachable from the network"
            ),
            "use 127.0.0.1:PORT or [::1]:PORT (or admin_socket), and reach it over SSH if you approve from elsewhere",
        ));
    }
    Ok(addr)
}

fn read_admin_token(
    file: &FileApprovals,
    layers: &Layers<'_>,
) -> Result<Option<AdminToken>, ConfigError> {
    let token = layers.secret(
        layers.text(TOKEN_ENV, "admin_token", file.admin_token.as_ref()),
        layers.path(TOKEN_FILE_ENV, "admin_token_file", &file.admin_token_file),
        "admin token",
    )?;
    let Some(token) = token else {
        return Ok(None);
    };
    let value = token.value.trim().to_string();
    if !is_bearer_token(&value) {
        return Err(ConfigError::new(
            token.key,
            format!(
                "the admin token must be at least {MIN_TOKEN_LEN} characters without spaces or characters a bearer token cannot carry"
            ),
            "generate one, e.g. `openssl rand -hex 24`",
        ));
    }
    Ok(Some(AdminToken {
        secret: Secret::new(value),
        key: token.key,
    }))
}

/// `state_key_file`: a file of at least [`MIN_STATE_KEY_LEN`] bytes
/// (surrounding whitespace, such as the line break after `openssl rand
/// -hex 32`, is not counted).
fn read_state_key(
    file: &FileApprovals,
    layers: &Layers<'_>,
) -> Result<Option<StateKey>, ConfigError> {
    let Some(path) = layers.path(STATE_KEY_FILE_ENV, "state_key_file", &file.state_key_file) else {
        return Ok(None);
    };
    let fix = "point it at a readable file of at least 32 random bytes, e.g. made with `openssl rand -hex 32 > FILE`, the same file on every replica";
    let bytes = std::fs::read(&path.value).map_err(|e| {
        ConfigError::new(
            &path.key,
            format!("cannot read {}: {e}", path.value.display()),
            fix,
        )
    })?;
    let bytes = bytes.trim_ascii();
    if bytes.len() < MIN_STATE_KEY_LEN {
        return Err(ConfigError::new(
            &path.key,
            format!(
                "{} holds {} bytes; the key that seals approval round trips needs at least {MIN_STATE_KEY_LEN}",
                path.value.display(),
                bytes.len()
            ),
            fix,
        ));
    }
    Ok(Some(StateKey {
        bytes: std::sync::Arc::from(bytes),
        key: path.key,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::layered::test_env::env;

    fn load(toml_text: &str, pairs: &[(&str, &str)]) -> Result<ApprovalSettings, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, toml_text).unwrap();
        ApprovalSettings::load_alone(Some(&path), &env(pairs))
    }

    const TOKEN: &str = "0123456789abcdef0123";

    #[test]
    fn defaults_without_a_section() {
        let s = load("[pve]\nbase_url = \"x\"\n", &[]).unwrap();
        assert_eq!(s.ttl, DEFAULT_TTL);
        assert_eq!(s.max_pending_per_caller, DEFAULT_MAX_PENDING_PER_CALLER);
        assert!(s.elicitation);
        assert_eq!(
            s.admin,
            AdminAddress::Tcp("127.0.0.1:7391".parse().unwrap())
        );
        assert!(s.admin_token.is_none());
        let err = s.require_token("pve_list_vms needs approval").unwrap_err();
        assert_eq!(err.key, TOKEN_ENV);
        assert!(err.fix.contains("openssl rand"), "{err}");
    }

    #[test]
    fn section_is_read_and_env_token_overrides() {
        let s = load(
            &format!("[approvals]\nttl_secs = 60\nmax_pending_per_caller = 5\nelicitation = false\nadmin_listen = \"[::1]:9000\"\nadmin_token = \"{TOKEN}\"\n"),
            &[],
        )
        .unwrap();
        assert_eq!(s.ttl, Duration::from_secs(60));
        assert_eq!(s.max_pending_per_caller, 5);
        assert!(!s.elicitation);
        assert_eq!(s.admin, AdminAddress::Tcp("[::1]:9000".parse().unwrap()));
        let token = s.admin_token.unwrap();
        assert_eq!(token.secret.expose(), TOKEN);
        assert!(token.key.starts_with("approvals.admin_token"));
        assert_eq!(format!("{:?}", token.secret), "[REDACTED]");

        let s = load(
            &format!("[approvals]\nadmin_token = \"{TOKEN}\"\n"),
            &[(TOKEN_ENV, "from-the-environment-xyz")],
        )
        .unwrap();
        let token = s.admin_token.unwrap();
        assert_eq!(token.secret.expose(), "from-the-environment-xyz");
        assert_eq!(token.key, TOKEN_ENV);
        let s = load(
            "[approvals]\nmax_pending_per_caller = 5\n",
            &[(MAX_PENDING_PER_CALLER_ENV, "7")],
        )
        .unwrap();
        assert_eq!(s.max_pending_per_caller, 7);
    }

    #[test]
    fn token_file_is_read_and_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let token_path = dir.path().join("token");
        std::fs::write(&token_path, format!("{TOKEN}\n")).unwrap();
        let s = load(
            &format!(
                "[approvals]\nadmin_socket = \"/tmp/x.sock\"\nadmin_token_file = \"{}\"\n",
                token_path.display()
            ),
            &[],
        )
        .unwrap();
        assert_eq!(s.admin, AdminAddress::Unix("/tmp/x.sock".into()));
        assert_eq!(s.admin_token.unwrap().secret.expose(), TOKEN);
        let s = load("", &[(TOKEN_FILE_ENV, token_path.to_str().unwrap())]).unwrap();
        assert_eq!(s.admin_token.unwrap().key, TOKEN_FILE_ENV);
    }

    #[test]
    fn a_state_key_file_needs_32_bytes_and_never_prints_them() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good");
        let key = "9f".repeat(32);
        std::fs::write(&good, format!("{key}\n")).unwrap();
        let s = load(
            &format!("[approvals]\nstate_key_file = \"{}\"\n", good.display()),
            &[],
        )
        .unwrap();
        let state = s.state_key.unwrap();
        assert_eq!(&*state.bytes, key.as_bytes(), "the line break is not key");
        assert!(state.key.starts_with("approvals.state_key_file"));
        assert!(!format!("{state:?}").contains(&key));
        let s = load("", &[(STATE_KEY_FILE_ENV, good.to_str().unwrap())]).unwrap();
        assert_eq!(s.state_key.unwrap().key, STATE_KEY_FILE_ENV);
        assert!(load("", &[]).unwrap().state_key.is_none());

        let short = dir.path().join("short");
        std::fs::write(&short, "only-31-bytes-of-key-material!!\n").unwrap();
        let err = load(
            &format!("[approvals]\nstate_key_file = \"{}\"\n", short.display()),
            &[],
        )
        .unwrap_err();
        assert!(err.key.starts_with("approvals.state_key_file"), "{err}");
        assert!(err.problem.contains("31 bytes"), "{err}");
        assert!(err.fix.contains("openssl rand"), "{err}");
        assert!(!err.to_string().contains("only-31"), "{err}");
        let err = load("", &[(STATE_KEY_FILE_ENV, "/nonexistent/key")]).unwrap_err();
        assert_eq!(err.key, STATE_KEY_FILE_ENV);
        assert!(err.problem.contains("cannot read"), "{err}");
    }

    #[test]
    fn bad_settings_name_the_key_and_never_echo_the_token() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            (
                "[approvals]\nadmin_listen = \"0.0.0.0:7391\"\n",
                &[],
                "approvals.admin_listen",
            ),
            (
                "[approvals]\nadmin_listen = \"192.168.1.5:7391\"\n",
                &[],
                "approvals.admin_listen",
            ),
            (
                "[approvals]\nadmin_listen = \"localhost\"\n",
                &[],
                "approvals.admin_listen",
            ),
            (
                "[approvals]\nadmin_listen = \"127.0.0.1:1\"\nadmin_socket = \"/x\"\n",
                &[],
                "approvals.admin_socket",
            ),
            ("[approvals]\nttl_secs = 0\n", &[], "approvals.ttl_secs"),
            (
                "[approvals]\nmax_pending_per_caller = 0\n",
                &[],
                "approvals.max_pending_per_caller",
            ),
            (
                "",
                &[(MAX_PENDING_PER_CALLER_ENV, "lots")],
                MAX_PENDING_PER_CALLER_ENV,
            ),
            (
                "[approvals]\nadmin_token = \"short-secret\"\n",
                &[],
                "approvals.admin_token",
            ),
            (
                "[approvals]\nadmin_token_file = \"/nonexistent/t\"\n",
                &[],
                "approvals.admin_token_file",
            ),
            (
                "",
                &[(TOKEN_ENV, "has a space in it, long enough")],
                TOKEN_ENV,
            ),
            (
                "",
                &[(TOKEN_ENV, TOKEN), (TOKEN_FILE_ENV, "/x")],
                TOKEN_FILE_ENV,
            ),
            ("[approvals]\nadmin_tokn = \"x\"\n", &[], "[approvals]"),
        ];
        for (text, pairs, key) in cases {
            let err = load(text, pairs).unwrap_err();
            assert!(err.key.starts_with(key), "{text}: {err}");
            assert!(!err.fix.is_empty());
            assert!(!err.to_string().contains("short-secret"), "{err}");
            assert!(!err.to_string().contains("has a space"), "{err}");
        }
        let err = load("[approvals]\nadmin_listen = \"0.0.0.0:7391\"\n", &[]).unwrap_err();
        assert!(err.problem.contains("loopback"), "{err}");
    }
}
