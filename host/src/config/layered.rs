//! Environment over file, key by key: the one place that decides where a
//! setting comes from and names that place for error messages
//! (`PVE_TIMEOUT`, or `pve.timeout_secs (in /etc/pve-mcp.toml)`). Every
//! section reads its values through [`Layers`], so they all layer, name
//! their keys and read secrets the same way.

use std::path::{Path, PathBuf};

use crate::error::ConfigError;

/// A value and the place it came from.
#[derive(Debug, Clone)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// The variable or `section.key (in FILE)` it came from.
    pub key: String,
    /// Whether `key` is an environment variable.
    pub from_env: bool,
}

impl<T> Sourced<T> {
    /// The same place with a converted value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Sourced<U> {
        Sourced {
            value: f(self.value),
            key: self.key,
            from_env: self.from_env,
        }
    }
}

/// How sections read the environment: `std::env::var` in the binary, a
/// map in tests.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The environment over one section of the file.
pub struct Layers<'a> {
    /// `None` where the environment does not apply (named clusters: the
    /// `PVE_*` variables describe only the default one).
    env: Option<Env<'a>>,
    section: String,
    file_name: &'a str,
}

impl<'a> Layers<'a> {
    /// `section` of `file_name`, overridden by `env`.
    pub fn new(env: Env<'a>, section: impl Into<String>, file_name: &'a str) -> Self {
        Layers {
            env: Some(env),
            section: section.into(),
            file_name,
        }
    }

    /// `section` of `file_name` alone: no variable overrides it.
    pub fn file_only(section: impl Into<String>, file_name: &'a str) -> Self {
        Layers {
            env: None,
            section: section.into(),
            file_name,
        }
    }

    /// The section's name, `pve` or `clusters.NAME`.
    pub fn section(&self) -> &str {
        &self.section
    }

    /// The file's name, as messages show it.
    pub fn file_name(&self) -> &'a str {
        self.file_name
    }

    /// Whether the environment applies to this section.
    pub fn reads_env(&self) -> bool {
        self.env.is_some()
    }

    /// A variable's value; a blank one counts as unset, so `export X=`
    /// leaves the file's value in force.
    pub fn env(&self, key: &str) -> Option<String> {
        (self.env?)(key).filter(|v| !v.trim().is_empty())
    }

    /// A variable with its name.
    pub fn env_sourced(&self, key: &str) -> Option<Sourced<String>> {
        self.env(key).map(|value| Sourced {
            value,
            key: key.to_string(),
            from_env: true,
        })
    }

    /// How messages name `key` of this section: `http.listen (in FILE)`.
    pub fn file_key(&self, key: &str) -> String {
        format!("{}.{key} (in {})", self.section, self.file_name)
    }

    /// A file value with its name, for keys no variable overrides.
    pub fn file<T>(&self, key: &str, value: Option<T>) -> Option<Sourced<T>> {
        value.map(|value| Sourced {
            value,
            key: self.file_key(key),
            from_env: false,
        })
    }

    /// `env_key` if set (converted by `from_env`, which gets the raw text
    /// and the variable's name), else the file's `key`.
    pub fn try_pick<T>(
        &self,
        env_key: &str,
        key: &str,
        file: Option<T>,
        from_env: impl FnOnce(String, &str) -> Result<T, ConfigError>,
    ) -> Result<Option<Sourced<T>>, ConfigError> {
        // The variable's raw text travels as `Err` until it is converted.
        let Some(found) = self.pick(env_key, key, file.map(Ok), Err) else {
            return Ok(None);
        };
        let value = match found.value {
            Ok(value) => value,
            Err(raw) => from_env(raw, &found.key)?,
        };
        Ok(Some(Sourced {
            value,
            key: found.key,
            from_env: found.from_env,
        }))
    }

    /// `env_key` if set (converted by `from_env`), else the file's `key`.
    pub fn pick<T>(
        &self,
        env_key: &str,
        key: &str,
        file: Option<T>,
        from_env: impl FnOnce(String) -> T,
    ) -> Option<Sourced<T>> {
        match self.env(env_key) {
            Some(raw) => Some(Sourced {
                value: from_env(raw),
                key: env_key.to_string(),
                from_env: true,
            }),
            None => self.file(key, file),
        }
    }

    /// A path setting.
    pub fn path(
        &self,
        env_key: &str,
        key: &str,
        file: &Option<PathBuf>,
    ) -> Option<Sourced<PathBuf>> {
        self.pick(env_key, key, file.clone(), PathBuf::from)
    }

    /// A setting as text: a string one, or a typed file value turned back
    /// into text, so one parser checks it and the variable alike.
    pub fn text<V: ToString>(
        &self,
        env_key: &str,
        key: &str,
        file: Option<V>,
    ) -> Option<Sourced<String>> {
        self.pick(env_key, key, file.map(|v| v.to_string()), |v| v)
    }

    /// A whole-number setting within `range` (inclusive), from the variable
    /// or the file; out of range or not a number is an error naming the key
    /// and the range.
    pub fn whole_number(
        &self,
        env_key: &str,
        key: &str,
        file: Option<u64>,
        range: (u64, u64),
    ) -> Result<Option<u64>, ConfigError> {
        let Some(raw) = self.text(env_key, key, file) else {
            return Ok(None);
        };
        match raw.value.trim().parse::<u64>() {
            Ok(n) if (range.0..=range.1).contains(&n) => Ok(Some(n)),
            _ => Err(ConfigError::new(
                raw.key,
                format!(
                    "{:?} is not a whole number between {} and {}",
                    raw.value, range.0, range.1
                ),
                format!("use a whole number between {} and {}", range.0, range.1),
            )),
        }
    }

    /// A boolean setting; the variable takes the forms of [`parse_bool`].
    pub fn boolean(
        &self,
        env_key: &str,
        key: &str,
        file: Option<bool>,
    ) -> Result<Option<Sourced<bool>>, ConfigError> {
        self.try_pick(env_key, key, file, |raw, env_key| {
            parse_bool(&raw).ok_or_else(|| {
                ConfigError::new(
                    env_key,
                    format!("{raw:?} is not a boolean"),
                    format!("set {env_key} to true or false"),
                )
            })
        })
    }

    /// A secret (`what`: "secret", "token", ...) given inline or as a file
    /// holding it. The environment overrides the file as a whole; within
    /// one place, both ways at once are ambiguous and refused.
    pub fn secret(
        &self,
        inline: Option<Sourced<String>>,
        file: Option<Sourced<PathBuf>>,
        what: &str,
    ) -> Result<Option<Sourced<String>>, ConfigError> {
        let inline_env = inline.as_ref().is_some_and(|s| s.from_env);
        let file_env = file.as_ref().is_some_and(|s| s.from_env);
        let (inline, file) = match (inline_env, file_env) {
            (true, false) => (inline, None),
            (false, true) => (None, file),
            _ => (inline, file),
        };
        match (inline, file) {
            (Some(_), Some(f)) => Err(ConfigError::new(
                f.key,
                format!("the {what} is given both inline and as a file"),
                "keep only one of them (the file is the safer choice)",
            )),
            (Some(s), None) => Ok(Some(s)),
            (None, Some(f)) => {
                let text = read_secret_file(&f.value, &f.key, what)?;
                Ok(Some(f.map(|_| text)))
            }
            (None, None) => Ok(None),
        }
    }
}

/// `true`/`false` as the reference server's variables take them.
pub fn parse_bool(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The contents of a file holding only a secret, without the line break
/// editors add; `key` names the setting that points at it.
pub fn read_secret_file(path: &Path, key: &str, what: &str) -> Result<String, ConfigError> {
    std::fs::read_to_string(path)
        .map(|t| t.trim().to_string())
        .map_err(|e| {
            ConfigError::new(
                key,
                format!("cannot read {}: {e}", path.display()),
                format!("point it at a readable file holding only the {what}"),
            )
        })
}

/// Shorter bearer tokens (MCP clients' and the admin token) are guessable;
/// `openssl rand -hex 32` gives 64.
pub const MIN_TOKEN_LEN: usize = 16;

/// The one rule for bearer tokens: at least [`MIN_TOKEN_LEN`] characters of
/// RFC 6750's `b64token`, what may follow `Bearer ` in a header.
pub fn is_bearer_token(token: &str) -> bool {
    token.len() >= MIN_TOKEN_LEN
        && token.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '+' | '/' | '=')
        })
}

/// An environment made of fixed pairs, for the sections' tests.
#[cfg(test)]
pub(crate) mod test_env {
    use std::collections::HashMap;

    /// Looks keys up in `pairs` only, never in the real environment.
    pub fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_wins_and_both_places_are_named() {
        let env = |k: &str| (k == "X_SET").then(|| "7".to_string());
        let layers = Layers::new(&env, "s", "f.toml");
        let v = layers.text("X_SET", "x", Some(3)).unwrap();
        assert_eq!(
            (v.value.as_str(), v.key.as_str(), v.from_env),
            ("7", "X_SET", true)
        );
        let v = layers.text("X_UNSET", "x", Some(3)).unwrap();
        assert_eq!(v.value, "3");
        assert_eq!(v.key, "s.x (in f.toml)");
        assert!(Layers::file_only("s", "f").env("X_SET").is_none());
    }

    #[test]
    fn secrets_inline_or_file_not_both() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        std::fs::write(&path, "from-the-file\n").unwrap();
        let layers = Layers::file_only("s", "f");
        let inline = || layers.file("secret", Some("inline".to_string()));
        let file = || layers.file("secret_file", Some(path.clone()));
        let s = layers.secret(None, file(), "secret").unwrap().unwrap();
        assert_eq!(s.value, "from-the-file");
        let e = layers.secret(inline(), file(), "secret").unwrap_err();
        assert!(e.key.starts_with("s.secret_file"), "{e}");
        let env = Sourced {
            value: "from-env".to_string(),
            key: "S".into(),
            from_env: true,
        };
        let s = layers.secret(Some(env), file(), "secret").unwrap().unwrap();
        assert_eq!(s.key, "S", "the environment overrides the file");
    }

    #[test]
    fn one_token_rule() {
        assert!(is_bearer_token("0123456789abcdef"));
        assert!(!is_bearer_token("0123456789abcde"));
        assert!(!is_bearer_token("0123456789 abcdef"));
    }
}
