//! The harness's leak check, run by every test: each output stream the
//! harness sees (tool results, the server's `-vv` stderr, the audit log
//! when one is configured, the output of CLI commands) is scanned for every
//! secret the test configured. The secrets are found where the server finds
//! them: [`SECRETS`] (those the harness itself hands out), every
//! environment variable named like a secret, and in the config and policy
//! files every value under a secret-like key and every password in a URL.
//! A new test is scanned without doing anything.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::common::{ADMIN_TOKEN_SECRET, AUDITOR_TOKEN_SECRET, LAB_TOKEN_SECRET, Opts};
use pve_sim::tokens::OPERATOR_TOKEN_SECRET;

/// Secrets the harness hands out in many tests: the simulator's API
/// token secrets and the HTTP harness's bearer token. (Others, such as a
/// Redis password in a state URL, are found in the test's configuration.)
pub const SECRETS: &[&str] = &[
    ADMIN_TOKEN_SECRET,
    AUDITOR_TOKEN_SECRET,
    LAB_TOKEN_SECRET,
    OPERATOR_TOKEN_SECRET,
    crate::http::TOKEN,
];

/// Shorter values are not scanned for: a 3-letter "secret" would match
/// ordinary words (and no accepted secret is that short).
const MIN_LEN: usize = 6;

/// The secrets of one server or command.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    values: Vec<String>,
    /// Audit logs the configuration names, scanned with the server's stderr.
    pub audit_logs: Vec<PathBuf>,
}

impl Secrets {
    /// [`SECRETS`] alone.
    pub fn fixed() -> Secrets {
        let mut s = Secrets::default();
        for v in SECRETS {
            s.add(v);
        }
        s
    }

    /// The secrets a server started with `opts` is given.
    pub fn of(opts: &Opts) -> Secrets {
        let env: Vec<(&str, &str)> = opts
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut s = Secrets::of_command(&env, &opts.args);
        if !opts.token_secret.is_empty() {
            s.add(&opts.token_secret);
        }
        s
    }

    /// The secrets of a command run with this environment and these
    /// arguments (files among the arguments are read as configuration).
    pub fn of_command<A: AsRef<str>>(env: &[(&str, &str)], args: &[A]) -> Secrets {
        let mut s = Secrets::fixed();
        for (key, value) in env {
            if secret_name(key) {
                s.add(value);
            }
            s.add_url_credentials(value);
            if *key == "PVE_MCP_AUDIT_PATH" {
                s.audit_logs.push(PathBuf::from(value));
            }
        }
        for arg in args {
            let path = Path::new(arg.as_ref());
            if path.extension().is_some_and(|e| e == "toml") && path.is_file() {
                s.add_config_file(path);
            }
        }
        s
    }

    fn add(&mut self, value: &str) {
        let value = value.trim();
        if value.len() >= MIN_LEN && !self.values.iter().any(|v| v == value) {
            self.values.push(value.to_string());
        }
    }

    /// Passwords in a URL's user info or in its `pass`/`password` query
    /// parameters (the forms the redis crate reads).
    fn add_url_credentials(&mut self, text: &str) {
        let Some((_, rest)) = text.split_once("://") else {
            return;
        };
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        if let Some((userinfo, _)) = authority.rsplit_once('@')
            && let Some((_, password)) = userinfo.split_once(':')
        {
            self.add(password);
        }
        if let Some((_, query)) = rest.split_once('?') {
            for pair in query.split('&') {
                if let Some(("pass" | "password", value)) = pair.split_once('=') {
                    self.add(value);
                }
            }
        }
    }

    fn add_config_file(&mut self, path: &Path) {
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        let Ok(value) = text.parse::<toml::Table>() else {
            return;
        };
        self.add_config_table(&value, "");
    }

    fn add_config_table(&mut self, table: &toml::Table, section: &str) {
        for (key, value) in table {
            match value {
                toml::Value::String(text) => {
                    // `[http.tokens]` holds bearer tokens under any name.
                    if secret_name(key) || (section == "tokens" && !key.ends_with("_file")) {
                        self.add(text);
                    }
                    self.add_url_credentials(text);
                    if section == "audit" && key == "path" {
                        self.audit_logs.push(PathBuf::from(text));
                    }
                }
                toml::Value::Table(inner) => self.add_config_table(inner, key),
                _ => {}
            }
        }
    }

    /// Fails the test, naming `what` and the secret's start, when `text`
    /// contains a secret.
    pub fn check(&self, what: &str, text: &str) {
        for secret in &self.values {
            assert!(
                !text.contains(secret.as_str()),
                "a configured secret ({}...) leaked into {what}:\n{text}",
                secret.chars().take(3).collect::<String>()
            );
        }
    }

    /// Scans the stderr collected so far and the audit logs.
    pub fn check_server(&self, stderr: &str) {
        self.check("the server's stderr", stderr);
        for log in &self.audit_logs {
            // Only a regular file: a test may log to /dev/full, which reads
            // as endless zeros.
            if log.is_file()
                && let Ok(text) = std::fs::read_to_string(log)
            {
                self.check(&format!("the audit log {}", log.display()), &text);
            }
        }
    }

    /// Scans a command's stdout and stderr.
    pub fn check_output(&self, what: &str, out: &std::process::Output) {
        self.check(
            &format!("the stdout of {what}"),
            &String::from_utf8_lossy(&out.stdout),
        );
        self.check(
            &format!("the stderr of {what}"),
            &String::from_utf8_lossy(&out.stderr),
        );
    }
}

/// Whether an environment variable or config key holds a secret: a token
/// (not its id, not a file naming it), a secret or a password.
fn secret_name(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    if key.ends_with("_file") || key.ends_with("_id") || key.ends_with("_path") {
        return false;
    }
    key.contains("secret") || key.contains("password") || key.ends_with("token")
}

/// Scans a server's stderr (and audit logs) once more when the server is
/// dropped, unless the test is failing already (a second panic would
/// abort the run and hide the first).
pub struct ScanOnDrop {
    pub secrets: Secrets,
    pub stderr: Arc<Mutex<String>>,
}

impl Drop for ScanOnDrop {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let stderr = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        self.secrets.check_server(&stderr);
    }
}

#[test]
fn secrets_are_found_in_the_environment_urls_and_config_files() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        "[clusters.a]\ntoken_id = \"x@pve!t\"\ntoken_secret = \"cfg-secret-1\"\n\
         [policy]\nstate = \"unix:///s.sock?db=1&pass=q-pass-2\"\n\
         [http.tokens]\nagent = \"agent-token-3\"\nci_file = \"/run/ci\"\n\
         [audit]\npath = \"/tmp/a.log\"\n",
    )
    .unwrap();
    let s = Secrets::of_command(
        &[
            ("MCP_AUTH_TOKEN", "env-token-4"),
            ("PVE_API_TOKEN_ID", "root@pam!ci"),
            ("STATE", "redis://:url-pass-5@127.0.0.1:1/0"),
        ],
        &["--config", config.to_str().unwrap()],
    );
    for leaked in [
        "cfg-secret-1",
        "q-pass-2",
        "agent-token-3",
        "env-token-4",
        "url-pass-5",
        ADMIN_TOKEN_SECRET,
    ] {
        let caught = std::panic::catch_unwind(|| s.check("a test", &format!("x {leaked} y")));
        assert!(caught.is_err(), "{leaked} was not caught");
    }
    s.check("a test", "root@pam!ci /run/ci x@pve!t");
    assert_eq!(s.audit_logs, [PathBuf::from("/tmp/a.log")]);
}
