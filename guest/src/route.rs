//! The writes a tool declares, whole: method, path and every parameter
//! with where its value comes from (the WIT `route`, `param` and
//! `param-value` records). The host sends a write only when each
//! parameter it carries is declared here with a value the declaration
//! admits, so a tool's routes are the complete list of what it can ask
//! Proxmox to do.
//!
//! A tool names each parameter with Proxmox's spelling, as [`crate::write`]
//! sends it, and binds it to the argument whose value it carries; a value
//! the tool works out itself (a config digest, a default) is declared as
//! such. Every write tool's end-to-end tests run through the host's gate,
//! so a parameter a tool sends and does not declare fails them.

/// One write a tool may send (WIT `route`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// `POST`, `PUT` or `DELETE`; `GET` for a read the host guards (a
    /// guest's files, a command's output); `{method}` for the call's own
    /// request.
    pub method: &'static str,
    /// The path under `/api2/json`, with `{argument}` placeholders.
    pub path: &'static str,
    /// The parameters it may carry.
    pub params: &'static [Param],
    /// The object argument whose entries are further parameters.
    pub entries: Option<&'static str>,
    /// The call sends it at most once.
    pub once: bool,
    /// It applies only to calls whose argument (first) is this string
    /// (second): `("scope", "cluster")`.
    pub when: Option<(&'static str, &'static str)>,
}

impl Route {
    /// A write to `path` with these parameters.
    pub const fn new(method: &'static str, path: &'static str, params: &'static [Param]) -> Route {
        Route {
            method,
            path,
            params,
            entries: None,
            once: false,
            when: None,
        }
    }

    /// The same request, sent at most once per call (`agent/exec`).
    pub const fn once(self) -> Route {
        Route { once: true, ..self }
    }

    /// The same request, for calls whose `argument` is `value` only: the
    /// host admits it for no other call, and ranks each call by the
    /// routes that apply to it (a firewall rule at cluster scope is
    /// destructive, one at guest scope a write).
    pub const fn when(self, argument: &'static str, value: &'static str) -> Route {
        Route {
            when: Some((argument, value)),
            ..self
        }
    }

    /// The same write, also carrying each entry of the object argument
    /// `argument` as a parameter of its own (`pve_set_vm_config`'s `config`).
    pub const fn with_entries(self, argument: &'static str) -> Route {
        Route {
            entries: Some(argument),
            ..self
        }
    }

    /// The call's own request (`pve_api_request`): the host binds it to the
    /// call's `method`, `path` and `params` arguments.
    pub const CALL_REQUEST: Route = Route {
        method: "{method}",
        path: "/{path}",
        params: &[],
        entries: Some("params"),
        once: false,
        when: None,
    };
}

/// One parameter a route may carry (WIT `param`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Proxmox's name for it.
    pub name: &'static str,
    /// The argument whose value it carries when the call gives it.
    pub argument: Option<&'static str>,
    /// What it may be otherwise.
    pub otherwise: Otherwise,
}

/// What a parameter no argument binds may be (WIT `param-value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Otherwise {
    /// Not sent.
    Absent,
    /// One of these values.
    OneOf(&'static [&'static str]),
    /// Any value of this kind.
    Free(Kind),
    /// The value of this field in the answer to one of the call's earlier
    /// writes (`pid` from `agent/exec`).
    Answered(&'static str),
}

/// The kinds of a free value (WIT `value-kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `0` or `1`.
    Boolean,
    /// A decimal integer.
    Integer,
    /// Text of at most this many bytes.
    Text(u32),
}

impl Param {
    /// Carries the argument of the same name, and is not sent when the call
    /// leaves it out.
    pub const fn arg(name: &'static str) -> Param {
        Param::from(name, name)
    }

    /// Proxmox's `name`, carrying the argument `argument` (`forceStop`
    /// from `force_stop`).
    pub const fn from(name: &'static str, argument: &'static str) -> Param {
        Param {
            name,
            argument: Some(argument),
            otherwise: Otherwise::Absent,
        }
    }

    /// A value the tool works out itself, of this kind.
    pub const fn free(name: &'static str, kind: Kind) -> Param {
        Param {
            name,
            argument: None,
            otherwise: Otherwise::Free(kind),
        }
    }

    /// Always one of these values.
    pub const fn fixed(name: &'static str, values: &'static [&'static str]) -> Param {
        Param {
            name,
            argument: None,
            otherwise: Otherwise::OneOf(values),
        }
    }

    /// The value Proxmox answered an earlier write of the call with, under
    /// `field` (`pid`): the host admits nothing else.
    pub const fn answered(name: &'static str, field: &'static str) -> Param {
        Param {
            name,
            argument: None,
            otherwise: Otherwise::Answered(field),
        }
    }

    /// When the call leaves the argument out, the tool sends one of these
    /// (its default) instead of nothing.
    pub const fn or_one_of(self, values: &'static [&'static str]) -> Param {
        Param {
            otherwise: Otherwise::OneOf(values),
            ..self
        }
    }
}

/// A config digest the tool read before writing: Proxmox's SHA-1 or
/// SHA-256 in hex.
pub const DIGEST: Param = Param::free("digest", Kind::Text(64));
