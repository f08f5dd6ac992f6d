//! Secrets held by the host, and scrubbing them out of any text that leaves it.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// A credential. It prints as `[REDACTED]` in `Debug` and `Display`, so a
/// stray `{:?}` in a log line cannot leak it; [`Secret::expose`] is the one
/// way to read it, and is only called where a header is built.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<Arc<str>>) -> Self {
        Self(value.into())
    }

    /// The credential itself, for building the request header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// Replaces every known secret in a text with `[REDACTED]`.
///
/// Defence in depth: the host never formats a secret on purpose, but text
/// from outside (a Proxmox error, the guest's stderr, a tool's output) could
/// still echo one back.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Arc<[Secret]>,
}

/// Shorter values would redact ordinary words; real token secrets are UUIDs.
const MIN_REDACTED_LEN: usize = 6;

impl Redactor {
    /// A redactor for these secrets.
    pub fn new(secrets: impl IntoIterator<Item = Secret>) -> Self {
        let secrets: Vec<Secret> = secrets
            .into_iter()
            .filter(|s| s.expose().len() >= MIN_REDACTED_LEN)
            .collect();
        Self {
            secrets: secrets.into(),
        }
    }

    /// The text with every secret replaced.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in self.secrets.iter() {
            if out.contains(secret.expose()) {
                out = Cow::Owned(out.replace(secret.expose(), "[REDACTED]"));
            }
        }
        out
    }
}

/// What replaces the value of a secret-looking argument in what people
/// read (approval previews, audit records).
pub const MASK: &str = "[REDACTED]";

/// Parts of an argument name that mark its value as a secret (matched in
/// the lowercased name). One list, so the approval preview and the audit
/// log never disagree about what is secret.
const SECRET_NAME_PARTS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "key",
    "private",
    "credential",
    "auth",
    "cookie",
    "ticket",
    "csrf",
];

/// Whether an argument of this name holds a secret. Public keys are not
/// secret, and which key an agent installed is what a reader of the log
/// needs: `sshkeys`, `ssh-public-keys` and other names of public keys are
/// spared (their values are still masked when they hold a private key, see
/// [`holds_private_key`]).
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_NAME_PARTS.iter().any(|part| name.contains(part)) && !is_public_key_name(&name)
}

/// Names of arguments that carry public keys: Proxmox's `sshkeys` (QEMU
/// cloud-init) and `ssh-public-keys` (LXC), and any name that says public.
fn is_public_key_name(lowercase: &str) -> bool {
    let bare: String = lowercase
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    matches!(bare.as_str(), "sshkeys" | "sshkey" | "authorizedkeys")
        || (bare.contains("public") && bare.contains("key") && !bare.contains("private"))
}

/// Whether a value looks like a private key (PEM or OpenSSH armour), which
/// is masked whatever its argument is called.
pub fn holds_private_key(value: &str) -> bool {
    value.contains("PRIVATE KEY-----")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_keys_are_not_secret_names_and_private_keys_are_found_anywhere() {
        for public in [
            "sshkeys",
            "ssh-public-keys",
            "ssh_public_keys",
            "SSHKeys",
            "public_key",
        ] {
            assert!(!is_secret_name(public), "{public}");
        }
        for secret in [
            "private_key",
            "api_key",
            "keyfile",
            "password",
            "private-public-key",
        ] {
            assert!(is_secret_name(secret), "{secret}");
        }
        assert!(holds_private_key(
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----"
        ));
        assert!(!holds_private_key("ssh-ed25519 AAAAC3Nza agent@host"));
    }

    #[test]
    fn secret_never_formats() {
        let s = Secret::new("5f0c1e1a-0000-4000-8000-123456789abc");
        assert_eq!(format!("{s}"), "[REDACTED]");
        assert_eq!(format!("{s:?}"), "[REDACTED]");
        assert_eq!(format!("{:?}", Some(s.clone())), "Some([REDACTED])");
    }

    #[test]
    fn redactor_scrubs_every_occurrence() {
        let r = Redactor::new([Secret::new("abcdef-123"), Secret::new("zzzzzz")]);
        assert_eq!(
            r.redact("x abcdef-123 y abcdef-123 zzzzzz"),
            "x [REDACTED] y [REDACTED] [REDACTED]"
        );
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn redactor_ignores_trivially_short_values() {
        let r = Redactor::new([Secret::new("a")]);
        assert_eq!(r.redact("a banana"), "a banana");
    }
}
