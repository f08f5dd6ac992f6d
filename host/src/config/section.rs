//! One definition per setting. A section (`[http]`, `[sandbox]`,
//! `[approvals]`, `[audit]`) lists its settings once with [`section!`]:
//! the typed field, the file key, the variable, the default, the range and
//! the unit. From that list come the file struct serde reads, the typed
//! settings, their `Default`, the `load` that layers the environment over
//! the file, the error messages, and [`Setting`] rows that tests check
//! against the docs. A setting whose value needs more than a range (a
//! listen address, the tokens) names a reader function instead and keeps
//! its file keys in the same list.

use super::layered::Layers;
use crate::error::ConfigError;

/// One file key of a section, for tests and docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The section, `http` for `[http]`.
    pub section: &'static str,
    /// The key in the file.
    pub key: &'static str,
    /// The variable that overrides it, if any.
    pub env: Option<&'static str>,
    /// What the key takes.
    pub value: Value,
}

/// What a declared key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// A whole number in `min..=max`, in the key's unit (`_secs`, `_mib`).
    Number {
        /// The smallest accepted.
        min: u64,
        /// The largest accepted.
        max: u64,
        /// The value when unset; `None` when unset means "derived".
        default: Option<u64>,
    },
    /// `true` or `false`.
    Flag {
        /// The value when unset.
        default: bool,
    },
    /// Read by the section's own function, which checks it.
    Custom,
}

/// How a whole number in the file becomes the typed value.
pub mod units {
    use std::time::Duration;

    /// `_secs` keys.
    pub fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// `_mib` keys, as bytes.
    pub fn mib(n: u64) -> usize {
        (n as usize) << 20
    }

    /// `_kib` keys, as bytes.
    pub fn kib(n: u64) -> usize {
        (n as usize) << 10
    }

    /// Counts (sessions, calls).
    pub fn count(n: u64) -> usize {
        n as usize
    }
}

/// A whole-number setting within `range`. With a variable, the variable
/// overrides the file and the text of either is checked by
/// [`Layers::whole_number`]. Without one, only the file's (already typed)
/// value is checked, and the fix says the range followed by `hint`.
pub fn number(
    layers: &Layers<'_>,
    env: Option<&str>,
    key: &str,
    file: Option<u64>,
    range: (u64, u64),
    hint: &str,
) -> Result<Option<u64>, ConfigError> {
    if let Some(env) = env {
        return layers.whole_number(env, key, file, range);
    }
    match layers.file(key, file) {
        None => Ok(None),
        Some(n) if (range.0..=range.1).contains(&n.value) => Ok(Some(n.value)),
        Some(n) => Err(ConfigError::new(
            n.key,
            format!("{} is out of range", n.value),
            format!("use between {} and {}{hint}", range.0, range.1),
        )),
    }
}

/// A boolean setting, overridden by the variable `env` if it has one.
pub fn flag(
    layers: &Layers<'_>,
    env: Option<&str>,
    key: &str,
    file: Option<bool>,
) -> Result<Option<bool>, ConfigError> {
    Ok(match env {
        Some(env) => layers.boolean(env, key, file)?.map(|s| s.value),
        None => file,
    })
}

/// Declares a section's settings once; see the module documentation.
///
/// ```text
/// section! {
///     /// The section as written in the file.
///     file FileSandbox;
///     /// The typed settings.
///     settings SandboxLimits in "sandbox";
///
///     /// Doc of the typed field.
///     timeout: Duration = number(1..=3600, default 30, secs, hint " seconds") from timeout_secs;
///     max_wait: Duration = number(1..=3600, default 600, secs, env MAX_WAIT_ENV) from max_wait_secs;
///     fsync: bool = flag(default false, env "PVE_MCP_AUDIT_FSYNC") from fsync;
///     listen: Listen = custom(read_listen, Listen::default()) from listen: Option<String>;
///     max_log_bytes: usize = fixed(64 << 10);
/// }
/// ```
///
/// A `number`'s default is one token (a literal or a constant) in the
/// file's unit, `default none` for an `Option` field that is derived when
/// unset; the unit (a function of [`units`]) turns it and the file's value
/// into the field's type. `hint` ends the out-of-range fix of a key that
/// has no variable (one that has gets [`Layers::whole_number`]'s message).
/// The typed struct's derives are the caller's (`#[derive(...)]` before
/// `settings`), since not every field can be compared. A `custom` reader is `fn(&File, &Layers) -> Result<T, ConfigError>`
/// and its keys carry their file types. Keys are listed in file order,
/// which is the order serde names them in when one is misspelt; values are
/// read, and so their errors found, in the same order.
macro_rules! section {
    (
        $(#[$file_meta:meta])*
        file $File:ident;
        $(#[$meta:meta])*
        settings $Settings:ident in $section:literal;
        $(
            $(#[$field_meta:meta])*
            $field:ident: $ty:ty = $kind:ident $args:tt
                $(from $($(#[$key_meta:meta])* $key:ident $(: $key_ty:ty)?),+)?;
        )*
    ) => {
        $(#[$file_meta])*
        #[derive(Debug, Default, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $File {
            $($($(
                $(#[$key_meta])*
                $key: $crate::config::section::section!(@file_ty $kind $($key_ty)?),
            )+)?)*
        }

        $(#[$meta])*
        pub struct $Settings {
            $(
                $(#[$field_meta])*
                pub $field: $ty,
            )*
        }

        impl Default for $Settings {
            fn default() -> Self {
                Self {
                    $($field: $crate::config::section::section!(@default $kind $args),)*
                }
            }
        }

        impl $Settings {
            /// Every key of the section, in file order.
            pub const SETTINGS: &'static [$crate::config::section::Setting] = &[
                $($($(
                    $crate::config::section::Setting {
                        section: $section,
                        key: stringify!($key),
                        env: $crate::config::section::section!(@env $kind $args),
                        value: $crate::config::section::section!(@value $kind $args),
                    },
                )+)?)*
            ];

            /// Reads the section (from `file_name`), each key overridden by
            /// its variable.
            pub fn load(
                file: &$File,
                file_name: &str,
                env: &dyn Fn(&str) -> Option<String>,
            ) -> Result<Self, $crate::error::ConfigError> {
                let layers = $crate::config::layered::Layers::new(env, $section, file_name);
                // Fields in declaration order, so errors come in file order.
                Ok(Self {
                    $($field: $crate::config::section::section!(
                        @read file, &layers, [$($($key)+)?], $kind $args
                    ),)*
                })
            }
        }
    };

    (@file_ty number) => { Option<u64> };
    (@file_ty flag) => { Option<bool> };
    (@file_ty custom $ty:ty) => { $ty };

    (@some) => { None };
    (@some $value:expr) => { Some($value) };

    (@default number ($min:literal..=$max:expr, default none, $($rest:tt)*)) => { None };
    (@default number ($min:literal..=$max:expr, default $default:tt, $unit:ident $($rest:tt)*)) => {
        $crate::config::section::units::$unit($default as u64)
    };
    (@default flag (default $default:literal $($rest:tt)*)) => { $default };
    (@default custom ($read:path, $default:expr)) => { $default };
    (@default fixed ($default:expr)) => { $default };

    (@env number ($min:literal..=$max:expr, default $default:tt, $unit:ident $(, env $env:expr)? $(, hint $hint:literal)?)) => {
        $crate::config::section::section!(@some $($env)?)
    };
    (@env flag (default $default:literal $(, env $env:expr)?)) => {
        $crate::config::section::section!(@some $($env)?)
    };
    (@env $kind:ident $args:tt) => { None };

    (@value number ($min:literal..=$max:expr, default none, $($rest:tt)*)) => {
        $crate::config::section::Value::Number { min: $min, max: $max, default: None }
    };
    (@value number ($min:literal..=$max:expr, default $default:tt, $($rest:tt)*)) => {
        $crate::config::section::Value::Number { min: $min, max: $max, default: Some($default as u64) }
    };
    (@value flag (default $default:literal $($rest:tt)*)) => {
        $crate::config::section::Value::Flag { default: $default }
    };
    (@value $kind:ident $args:tt) => { $crate::config::section::Value::Custom };

    (@read $file:ident, $layers:expr, [$key:ident], number $args:tt) => {{
        let (min, max) = $crate::config::section::section!(@range $args);
        let read = $crate::config::section::number(
            $layers,
            $crate::config::section::section!(@env number $args),
            stringify!($key),
            $file.$key,
            (min, max),
            $crate::config::section::section!(@hint $args),
        )?;
        $crate::config::section::section!(@convert read, $args)
    }};
    (@read $file:ident, $layers:expr, [$key:ident], flag $args:tt) => {
        $crate::config::section::flag(
            $layers,
            $crate::config::section::section!(@env flag $args),
            stringify!($key),
            $file.$key,
        )?
        .unwrap_or($crate::config::section::section!(@default flag $args))
    };
    (@read $file:ident, $layers:expr, [$($key:ident)*], custom ($read:path, $default:expr)) => {
        $read($file, $layers)?
    };
    (@read $file:ident, $layers:expr, [], fixed ($default:expr)) => { $default };

    (@range ($min:literal..=$max:expr, $($rest:tt)*)) => { ($min, $max) };
    (@hint ($($args:tt)*)) => { $crate::config::section::section!(@hint_in $($args)*) };
    (@hint_in $min:literal..=$max:expr, default $default:tt, $unit:ident $(, env $env:expr)?) => { "" };
    (@hint_in $min:literal..=$max:expr, default $default:tt, $unit:ident $(, env $env:expr)?, hint $hint:literal) => { $hint };
    (@convert $read:ident, ($min:literal..=$max:expr, default none, $unit:ident $($rest:tt)*)) => {
        $read.map($crate::config::section::units::$unit)
    };
    (@convert $read:ident, ($min:literal..=$max:expr, default $default:tt, $unit:ident $($rest:tt)*)) => {
        $read.map_or(
            $crate::config::section::units::$unit($default as u64),
            $crate::config::section::units::$unit,
        )
    };
}
pub(crate) use section;
