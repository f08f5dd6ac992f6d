//! A route's parameters: every one a write may carry, and where its value
//! comes from (the WIT `param`): the call's argument, a fixed set, or a
//! value of some kind that the tool works out itself. Parsed once at load,
//! bound to each call's arguments, and asked by the gate about every
//! parameter a write carries.
//!
//! One rule is the host's, whatever a component declares: a parameter
//! named like a path placeholder (`vmid`, `target`, `storage`, ...) carries
//! the argument of that name, and fits PVE's pattern for it, as the path
//! does. So no declaration can let `vmid=102` out of a call for VM 560.

use std::fmt;

use serde_json::Value;

use super::placeholder::{JsonObject, PLACEHOLDERS, is_localhost, pattern};

/// Parameters Proxmox reads percent-decoded once more after the body's
/// own decoding: qemu-server `uri_unescape`s `sshkeys` before it checks
/// and stores the keys. A parameter is bound to its argument's value as
/// Proxmox reads it (the WIT `param`), so these are compared decoded.
const READ_DECODED: &[&str] = &["sshkeys"];

/// Longest parameter name: PVE's are far shorter.
const NAME_MAX: usize = 128;
/// Longest free text a declaration may allow: Proxmox's body limit.
const TEXT_MAX: u32 = 512 << 10;
/// Most values in a fixed set.
const ONE_OF_MAX: usize = 64;

/// What a parameter no argument binds may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Otherwise {
    /// It is not sent.
    Absent,
    /// One of these.
    OneOf(Vec<String>),
    /// Any value of this kind.
    Free(ValueKind),
    /// A value Proxmox answered one of the call's earlier writes with,
    /// under this name in its `data` (`pid` from `agent/exec`).
    Answered(String),
}

/// The kind of a free value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// `0` or `1`.
    Boolean,
    /// A decimal integer of at most 20 characters.
    Integer,
    /// Printable text of at most this many bytes.
    Text(u32),
}

impl ValueKind {
    fn admits(self, value: &str) -> bool {
        match self {
            ValueKind::Boolean => value == "0" || value == "1",
            ValueKind::Integer => {
                let digits = value.strip_prefix('-').unwrap_or(value);
                value.len() <= 20
                    && !digits.is_empty()
                    && digits.bytes().all(|b| b.is_ascii_digit())
            }
            ValueKind::Text(max) => {
                value.len() <= max as usize && !value.chars().any(char::is_control)
            }
        }
    }
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueKind::Boolean => f.write_str("0 or 1"),
            ValueKind::Integer => f.write_str("an integer"),
            ValueKind::Text(max) => write!(f, "text of up to {max} bytes"),
        }
    }
}

/// One declared parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamRule {
    /// Proxmox's name.
    pub name: String,
    /// The argument it carries when the call gives it.
    pub argument: Option<String>,
    /// What it may be otherwise.
    pub otherwise: Otherwise,
}

/// Everything a route's request may carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    rules: Vec<ParamRule>,
    /// The object argument whose entries are parameters too.
    entries: Option<String>,
    /// Names that must be sent (the host's: see [`super::destructive`]).
    required: Vec<&'static str>,
}

fn valid_name(name: &str) -> bool {
    name.len() <= NAME_MAX
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Params {
    /// The parameters `rules` and `entries` declare, checked: valid and
    /// distinct names, and a placeholder's name bound to its own argument.
    /// The error says what is wrong, for the message that rejects the
    /// component.
    pub fn parse(rules: Vec<ParamRule>, entries: Option<String>) -> Result<Params, String> {
        for (i, rule) in rules.iter().enumerate() {
            let name = &rule.name;
            if !valid_name(name) {
                return Err(format!(
                    "the parameter {name:?} is not a Proxmox parameter name (a letter, then \
                     letters, digits, '-' or '_')"
                ));
            }
            if rules[..i].iter().any(|r| r.name == *name) {
                return Err(format!("the parameter {name} is declared twice"));
            }
            if let Some(argument) = &rule.argument
                && !valid_name(argument)
            {
                return Err(format!(
                    "the parameter {name} carries {argument:?}, which is not an argument name"
                ));
            }
            if PLACEHOLDERS.iter().any(|(p, _)| p == name) && rule.argument.as_ref() != Some(name) {
                return Err(format!(
                    "the parameter {name} must carry the argument {name}: the host binds a \
                     parameter named like a path placeholder to that argument, as it binds the path"
                ));
            }
            match &rule.otherwise {
                Otherwise::OneOf(values)
                    if values.is_empty()
                        || values.len() > ONE_OF_MAX
                        || values.iter().any(|v| !ValueKind::Text(512).admits(v)) =>
                {
                    return Err(format!(
                        "the parameter {name} is one of {} values; a fixed set has 1 to \
                         {ONE_OF_MAX} values of printable text up to 512 bytes",
                        values.len()
                    ));
                }
                Otherwise::Answered(field) if !valid_name(field) => {
                    return Err(format!(
                        "the parameter {name} carries the answer's {field:?}, which is not a \
                         field name"
                    ));
                }
                Otherwise::Free(ValueKind::Text(max)) if *max == 0 || *max > TEXT_MAX => {
                    return Err(format!(
                        "the parameter {name} is free text of up to {max} bytes; the limit is \
                         1 to {TEXT_MAX}"
                    ));
                }
                _ => {}
            }
        }
        if let Some(entries) = &entries
            && !valid_name(entries)
        {
            return Err(format!(
                "the entries come from {entries:?}, which is not an argument name"
            ));
        }
        Ok(Params {
            rules,
            entries,
            required: Vec::new(),
        })
    }

    /// The parameters of the call's own request: the entries of its
    /// `params` argument and nothing else.
    pub fn call_request() -> Params {
        Params {
            rules: Vec::new(),
            entries: Some(super::request::PARAMS_ARG.into()),
            required: Vec::new(),
        }
    }

    /// The same, with `name` required in every request.
    pub(super) fn requiring(mut self, name: &'static str) -> Params {
        if !self.required.contains(&name) {
            self.required.push(name);
        }
        self
    }

    /// The declared parameters.
    pub fn rules(&self) -> &[ParamRule] {
        &self.rules
    }

    /// The fields of a write's answer whose values it carries
    /// ([`Otherwise::Answered`]).
    pub fn answered_fields(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().filter_map(|r| match &r.otherwise {
            Otherwise::Answered(field) => Some(field.as_str()),
            _ => None,
        })
    }

    /// The object argument whose entries are parameters too.
    pub fn entries(&self) -> Option<&str> {
        self.entries.as_deref()
    }

    /// What any call could send as `name`, whatever its arguments: for the
    /// tool's worst tier.
    pub fn could_send(&self, name: &str) -> MaySend {
        match self.rules.iter().find(|r| r.name == name) {
            Some(rule) if rule.argument.is_some() => MaySend::Any,
            Some(rule) => MaySend::of(&rule.otherwise),
            None if self.entries.is_some() => MaySend::Any,
            None => MaySend::Nothing,
        }
    }

    /// The parameters bound to one call's `arguments`.
    pub fn bind(&self, arguments: &JsonObject) -> BoundParams {
        let each = self
            .rules
            .iter()
            .map(|rule| {
                let given = rule
                    .argument
                    .as_ref()
                    .and_then(|a| arguments.get(a).map(|v| (a, v)))
                    .filter(|(_, v)| !v.is_null());
                let allowed = match given {
                    Some((argument, value)) => Allowed::Argument {
                        argument: argument.clone(),
                        list: value.is_array(),
                        values: wire_each(value),
                    },
                    None => Allowed::Otherwise(rule.otherwise.clone()),
                };
                (rule.name.clone(), allowed)
            })
            .collect();
        let entries = self.entries.as_ref().map(|name| {
            let values = match arguments.get(name) {
                Some(Value::Object(map)) => map
                    .iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), wire(v).unwrap_or_default()))
                    .collect(),
                _ => Vec::new(),
            };
            (name.clone(), values)
        });
        BoundParams {
            each,
            entries: entries.map_or(Entries::None, |(arg, values)| Entries::Given(arg, values)),
            required: self.required.clone(),
            restricted: Vec::new(),
        }
    }

    /// The parameters bound to no call (`pve-mcp egress-proxy`, which sees
    /// requests without their calls): a parameter that carries an argument
    /// may carry any value of it, within its placeholder's pattern when it
    /// has one.
    pub fn bind_open(&self) -> BoundParams {
        let each = self
            .rules
            .iter()
            .map(|rule| {
                let allowed = match (&rule.argument, &rule.otherwise) {
                    // Without the call, neither its arguments nor its
                    // answers are known.
                    (Some(_), _) | (None, Otherwise::Answered(_)) => Allowed::Any,
                    (None, otherwise) => Allowed::Otherwise(otherwise.clone()),
                };
                (rule.name.clone(), allowed)
            })
            .collect();
        BoundParams {
            each,
            entries: self.entries.clone().map_or(Entries::None, Entries::Open),
            required: self.required.clone(),
            restricted: Vec::new(),
        }
    }
}

impl fmt::Display for Params {
    /// `vmid=<vmid>, remove=<prune>|0, digest=<text of up to 64 bytes>`, as
    /// `pve-mcp tools --routes` prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut sep = |f: &mut fmt::Formatter<'_>| {
            let s = if first { "" } else { ", " };
            first = false;
            f.write_str(s)
        };
        for rule in &self.rules {
            sep(f)?;
            write!(f, "{}=", rule.name)?;
            if let Some(argument) = &rule.argument {
                write!(f, "<{argument}>")?;
            }
            match (&rule.otherwise, rule.argument.is_some()) {
                (Otherwise::Absent, true) => {}
                (Otherwise::Absent, false) => f.write_str("(never)")?,
                (Otherwise::OneOf(values), bound) => {
                    write!(f, "{}{}", if bound { "|" } else { "" }, values.join("|"))?
                }
                (Otherwise::Free(kind), bound) => {
                    write!(f, "{}<{kind}>", if bound { "|" } else { "" })?
                }
                (Otherwise::Answered(field), bound) => {
                    write!(f, "{}<answered {field}>", if bound { "|" } else { "" })?
                }
            }
        }
        if let Some(entries) = &self.entries {
            sep(f)?;
            write!(f, "<each entry of {entries}>")?;
        }
        Ok(())
    }
}

/// What a call may send as one parameter, as far as its tier goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaySend {
    /// Nothing.
    Nothing,
    /// Only these values.
    Only(Vec<String>),
    /// Any value.
    Any,
}

impl MaySend {
    fn of(otherwise: &Otherwise) -> MaySend {
        match otherwise {
            Otherwise::Absent => MaySend::Nothing,
            Otherwise::OneOf(values) => MaySend::Only(values.clone()),
            Otherwise::Free(ValueKind::Boolean) => MaySend::Only(vec!["0".into(), "1".into()]),
            Otherwise::Free(_) | Otherwise::Answered(_) => MaySend::Any,
        }
    }

    /// Whether it may send a value not among `harmless`.
    pub fn beyond(&self, harmless: &[&str]) -> bool {
        match self {
            MaySend::Nothing => false,
            MaySend::Only(values) => values.iter().any(|v| !harmless.contains(&v.as_str())),
            MaySend::Any => true,
        }
    }
}

/// What one declared parameter may be in one call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    /// The call gave the argument: exactly its value, or for a `list`
    /// each of its elements in order, the parameter repeated (`None`: a
    /// value no parameter can carry).
    Argument {
        argument: String,
        list: bool,
        values: Option<Vec<String>>,
    },
    /// The call did not: what the declaration says.
    Otherwise(Otherwise),
    /// Bound to no call: any value.
    Any,
}

/// The entries of an object argument, as parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Entries {
    /// The route has none.
    #[default]
    None,
    /// The argument's name, and its entries as wire values.
    Given(String, Vec<(String, String)>),
    /// Bound to no call: any entry.
    Open(String),
}

/// A route's parameters bound to one call's arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundParams {
    each: Vec<(String, Allowed)>,
    entries: Entries,
    required: Vec<&'static str>,
    /// Parameters held to these values whatever else admits them: the
    /// harmless values of a destructive parameter, for a binding that may
    /// not destroy.
    restricted: Vec<(&'static str, &'static [&'static str])>,
}

impl BoundParams {
    /// The same, with `name` held to the `harmless` values (none: never
    /// sent).
    pub(super) fn restrict(&mut self, name: &'static str, harmless: &'static [&'static str]) {
        self.restricted.push((name, harmless));
    }

    /// The parameters this call may send with any value of a kind, as
    /// the tool chooses (no argument binds them, or the call left theirs
    /// out). The call's arguments do not name what they carry.
    pub fn chosen_by_the_tool(&self) -> impl Iterator<Item = &str> {
        self.each.iter().filter_map(|(name, allowed)| {
            matches!(allowed, Allowed::Otherwise(Otherwise::Free(_))).then_some(name.as_str())
        })
    }

    /// What this call may send as `name`.
    pub fn may_send(&self, name: &str) -> MaySend {
        if let Some((_, only)) = self.restricted.iter().find(|(n, _)| *n == name) {
            return match only.is_empty() {
                true => MaySend::Nothing,
                false => MaySend::Only(only.iter().map(|v| v.to_string()).collect()),
            };
        }
        match self.each.iter().find(|(n, _)| n == name) {
            Some((_, Allowed::Argument { values, .. })) => match values {
                Some(v) if !v.is_empty() => MaySend::Only(v.clone()),
                _ => MaySend::Nothing,
            },
            Some((_, Allowed::Otherwise(otherwise))) => MaySend::of(otherwise),
            Some((_, Allowed::Any)) => MaySend::Any,
            None => match &self.entries {
                Entries::Given(_, e) => match e.iter().find(|(k, _)| k == name) {
                    Some((_, v)) => MaySend::Only(vec![v.clone()]),
                    None => MaySend::Nothing,
                },
                Entries::Open(_) => MaySend::Any,
                Entries::None => MaySend::Nothing,
            },
        }
    }

    /// Whether a write may carry exactly `sent` (names and decoded values,
    /// in the order sent): each parameter once (a list argument's once per
    /// element, all of them, in order), declared, and with a value its
    /// declaration admits for this call. `answered` says whether the call
    /// was answered `value` under a field's name. The error names the
    /// first parameter that is not, and why.
    pub fn admits(&self, sent: &[(String, String)], answered: &Answered<'_>) -> Result<(), String> {
        for (i, (name, value)) in sent.iter().enumerate() {
            let nth = sent[..i].iter().filter(|(n, _)| n == name).count();
            if nth > 0 && !self.repeats(name) {
                return Err(format!("the parameter {} is sent twice", shown(name)));
            }
            self.admits_one(name, value, nth, answered)?;
        }
        for (name, allowed) in &self.each {
            let Allowed::Argument {
                argument,
                list: true,
                values: Some(values),
            } = allowed
            else {
                continue;
            };
            let count = sent.iter().filter(|(n, _)| n == name).count();
            if count != 0 && count != values.len() {
                return Err(format!(
                    "{} is sent {count} times; it carries the call's argument {argument}, a \
                     list of {}, each element once and in order",
                    shown(name),
                    values.len()
                ));
            }
        }
        if let Some(missing) = self
            .required
            .iter()
            .find(|r| !sent.iter().any(|(n, _)| n == *r))
        {
            return Err(format!(
                "the request leaves out {missing}, whose Proxmox default destroys data; a \
                 route that may send this write must send it"
            ));
        }
        Ok(())
    }

    /// Whether `name` may be sent more than once: it carries a list.
    fn repeats(&self, name: &str) -> bool {
        self.each.iter().any(|(n, allowed)| {
            n == name && matches!(allowed, Allowed::Argument { list: true, .. })
        })
    }

    fn admits_one(
        &self,
        name: &str,
        value: &str,
        nth: usize,
        answered: &Answered<'_>,
    ) -> Result<(), String> {
        let decoded;
        let value = if READ_DECODED.contains(&name) {
            decoded = crate::endpoint::percent_decode(value)
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| {
                    format!(
                        "{} is not percent-encoded UTF-8, as Proxmox reads it",
                        shown(name)
                    )
                })?;
            decoded.as_str()
        } else {
            value
        };
        if let Some((_, only)) = self.restricted.iter().find(|(n, _)| *n == name)
            && !only.contains(&value)
        {
            return Err(format!(
                "{} is {}, which destroys data, and this binding may not destroy",
                shown(name),
                shown_value(name, value)
            ));
        }
        let rule = self.each.iter().find(|(n, _)| n == name);
        let entry = || match &self.entries {
            Entries::Given(arg, e) => e
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| (arg, Some(v))),
            Entries::Open(arg) => Some((arg, None)),
            Entries::None => None,
        };
        let ok = match (rule, entry()) {
            (Some((_, Allowed::Any)), _) | (None, Some((_, None))) => true,
            (
                Some((
                    _,
                    Allowed::Argument {
                        argument, values, ..
                    },
                )),
                _,
            ) => match values.as_ref().and_then(|v| v.get(nth)) {
                Some(v) if v == value => true,
                v => {
                    return Err(format!(
                        "{} must carry the call's argument {argument}{}, not {}",
                        shown(name),
                        v.map(|v| format!(" ({})", shown_value(name, v)))
                            .unwrap_or_default(),
                        shown_value(name, value)
                    ));
                }
            },
            (Some((_, Allowed::Otherwise(otherwise))), _) => match otherwise {
                Otherwise::Absent => {
                    return Err(format!(
                        "{} is sent, but the call does not give the argument it carries",
                        shown(name)
                    ));
                }
                Otherwise::OneOf(values) if values.iter().any(|v| v == value) => true,
                Otherwise::OneOf(values) => {
                    return Err(format!(
                        "{} is {}, not one of {}",
                        shown(name),
                        shown_value(name, value),
                        bounded_list(values)
                    ));
                }
                Otherwise::Free(kind) if kind.admits(value) => true,
                Otherwise::Free(kind) => {
                    return Err(format!("{} is not {kind}", shown(name)));
                }
                Otherwise::Answered(field) if answered(field, value) => true,
                Otherwise::Answered(field) => {
                    return Err(format!(
                        "{} is {}, which no write of this call was answered with as its \
                         {field}: a call reads back only what it started",
                        shown(name),
                        shown_value(name, value)
                    ));
                }
            },
            (None, Some((_, Some(v)))) if v == value => true,
            (None, Some((argument, _))) => {
                return Err(format!(
                    "{} must carry the entry of the call's argument {argument}, not {}",
                    shown(name),
                    shown_value(name, value)
                ));
            }
            (None, None) => {
                return Err(format!(
                    "{} is not a parameter this call's route may carry",
                    shown(name)
                ));
            }
        };
        // The path's own rule for a placeholder's value.
        let fits = pattern(name).is_none_or(|p| p.is_match(value) && !is_localhost(name, value));
        if ok && !fits {
            return Err(format!(
                "{} is {}, which is not a value PVE takes for it",
                shown(name),
                shown_value(name, value)
            ));
        }
        Ok(())
    }
}

/// Whether the call was answered `value` under the field `name`
/// ([`Otherwise::Answered`]).
pub type Answered<'a> = dyn Fn(&str, &str) -> bool + 'a;

/// A call answered nothing yet, or a binding that never reads answers.
pub fn nothing_answered(_: &str, _: &str) -> bool {
    false
}

/// An argument as the values of a parameter: a list's elements each
/// ([`wire`]), anything else as one value; `None` when an element is not
/// a value a form can carry.
pub fn wire_each(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::Array(_) | Value::Object(_) | Value::Null => None,
                v => wire(v),
            })
            .collect(),
        v => wire(v).map(|v| vec![v]),
    }
}

/// A JSON argument as Proxmox reads it in a form: a string as it is, a
/// boolean as `1` or `0`, a number in decimal; an object or list as its
/// JSON text (what a tool that passes one on sends). `None` for null.
pub fn wire(value: &Value) -> Option<String> {
    Some(match value {
        Value::Null => return None,
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "1" } else { "0" }.into(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    })
}

/// A declared set of values as a refusal lists them: at most 200
/// characters (a declaration may hold 64 values of 512 bytes).
fn bounded_list(values: &[String]) -> String {
    let all = values.join(", ");
    let (head, more) = super::request::cut(&all, 200);
    format!("{head}{more}")
}

/// A parameter name as a refusal shows it: bounded, printable.
fn shown(name: &str) -> String {
    let (head, more) = super::request::cut(name, 64);
    format!("`{}{more}`", head.escape_debug())
}

/// A value as a refusal shows it: hidden for a secret's name, else quoted
/// and bounded ([`super::request::shown`]).
fn shown_value(name: &str, value: &str) -> String {
    if crate::secret::is_secret_name(name) || crate::secret::holds_private_key(value) {
        return "a value not shown".into();
    }
    super::request::shown(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(name: &str, argument: Option<&str>, otherwise: Otherwise) -> ParamRule {
        ParamRule {
            name: name.into(),
            argument: argument.map(Into::into),
            otherwise,
        }
    }

    fn sent(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn vzdump() -> Params {
        Params::parse(
            vec![
                rule("vmid", Some("vmid"), Otherwise::Absent),
                rule("storage", Some("storage"), Otherwise::Absent),
                rule("remove", Some("prune"), Otherwise::OneOf(vec!["0".into()])),
                rule("digest", None, Otherwise::Free(ValueKind::Text(64))),
            ],
            None,
        )
        .unwrap()
    }

    #[test]
    fn a_bound_parameter_carries_its_argument_and_nothing_else() {
        let args = json!({"vmid": 550, "storage": "local"});
        let bound = vzdump().bind(args.as_object().unwrap());
        let ok = sent(&[("vmid", "550"), ("storage", "local"), ("remove", "0")]);
        assert_eq!(bound.admits(&ok, &nothing_answered), Ok(()));
        // The F1 backup: another guest, pruning.
        let e = bound
            .admits(
                &sent(&[("vmid", "102"), ("remove", "0")]),
                &nothing_answered,
            )
            .unwrap_err();
        assert!(
            e.contains("`vmid` must carry the call's argument vmid (\"550\")"),
            "{e}"
        );
        let e = bound
            .admits(
                &sent(&[("vmid", "550"), ("remove", "1")]),
                &nothing_answered,
            )
            .unwrap_err();
        assert!(e.contains("`remove` is \"1\", not one of 0"), "{e}");
        let e = bound
            .admits(
                &sent(&[("vmid", "550"), ("prune-backups", "keep-last=1")]),
                &nothing_answered,
            )
            .unwrap_err();
        assert!(e.contains("`prune-backups` is not a parameter"), "{e}");
        let e = bound
            .admits(
                &sent(&[("vmid", "550"), ("vmid", "550")]),
                &nothing_answered,
            )
            .unwrap_err();
        assert!(e.contains("sent twice"), "{e}");
        assert!(
            bound
                .admits(&sent(&[("digest", "ab12")]), &nothing_answered)
                .is_ok()
        );
        assert!(
            bound
                .admits(&sent(&[("digest", &"a".repeat(65))]), &nothing_answered)
                .is_err()
        );
        // Asked to prune, it may send remove=1, and only that.
        let args = json!({"vmid": 550, "prune": true});
        let bound = vzdump().bind(args.as_object().unwrap());
        assert!(
            bound
                .admits(&sent(&[("remove", "1")]), &nothing_answered)
                .is_ok()
        );
        assert!(
            bound
                .admits(&sent(&[("remove", "0")]), &nothing_answered)
                .is_err()
        );
        assert_eq!(bound.may_send("remove"), MaySend::Only(vec!["1".into()]));
        // Left out, a bound parameter with no fallback is not sent.
        let e = bound
            .admits(&sent(&[("storage", "local")]), &nothing_answered)
            .unwrap_err();
        assert!(e.contains("does not give the argument"), "{e}");
    }

    /// qemu-server reads `sshkeys` URL-decoded: the encoded keys carry the
    /// argument, other keys or a broken escape do not.
    #[test]
    fn sshkeys_are_compared_as_proxmox_reads_them() {
        let params = Params::parse(
            vec![rule("sshkeys", Some("sshkeys"), Otherwise::Absent)],
            None,
        )
        .unwrap();
        let args = json!({"sshkeys": "ssh-ed25519 AAAA me@x"});
        let bound = params.bind(args.as_object().unwrap());
        let admits = |v: &str| bound.admits(&sent(&[("sshkeys", v)]), &nothing_answered);
        assert_eq!(admits("ssh-ed25519%20AAAA%20me%40x"), Ok(()));
        assert_eq!(admits("ssh-ed25519 AAAA me@x"), Ok(()));
        assert!(admits("ssh-ed25519%20BBBB%20me%40x").is_err());
        let e = admits("ssh-ed25519%2").unwrap_err();
        assert!(e.contains("not percent-encoded"), "{e}");
    }

    #[test]
    fn entries_carry_their_values_and_placeholders_keep_their_pattern() {
        let params = Params::parse(
            vec![rule("digest", None, Otherwise::Free(ValueKind::Text(64)))],
            Some("config".into()),
        )
        .unwrap();
        let args = json!({"config": {"description": "x", "onboot": true, "cores": 2}});
        let bound = params.bind(args.as_object().unwrap());
        assert!(
            bound
                .admits(
                    &sent(&[("description", "x"), ("onboot", "1"), ("digest", "f00")]),
                    &nothing_answered
                )
                .is_ok()
        );
        // The F1 config: what the call never asked for.
        let e = bound
            .admits(
                &sent(&[("description", "x"), ("protection", "0")]),
                &nothing_answered,
            )
            .unwrap_err();
        assert!(e.contains("`protection` is not a parameter"), "{e}");
        let e = bound
            .admits(&sent(&[("cores", "64")]), &nothing_answered)
            .unwrap_err();
        assert!(e.contains("entry of the call's argument config"), "{e}");
        assert_eq!(bound.may_send("delete"), MaySend::Nothing);
        assert_eq!(params.could_send("delete"), MaySend::Any);

        let target = Params::parse(
            vec![rule("target", Some("target"), Otherwise::Absent)],
            None,
        )
        .unwrap();
        let bound = target.bind(json!({"target": "localhost"}).as_object().unwrap());
        let e = bound
            .admits(&sent(&[("target", "localhost")]), &nothing_answered)
            .unwrap_err();
        assert!(e.contains("not a value PVE takes"), "{e}");
    }

    #[test]
    fn declarations_that_could_unbind_a_placeholder_are_refused_at_load() {
        for (rules, says) in [
            (
                vec![rule("vmid", None, Otherwise::Free(ValueKind::Integer))],
                "must carry the argument vmid",
            ),
            (
                vec![rule("target", Some("node"), Otherwise::Absent)],
                "must carry the argument target",
            ),
            (
                vec![rule("a=b", None, Otherwise::Absent)],
                "not a Proxmox parameter name",
            ),
            (
                vec![
                    rule("x", None, Otherwise::Absent),
                    rule("x", None, Otherwise::Absent),
                ],
                "declared twice",
            ),
            (
                vec![rule("x", None, Otherwise::OneOf(Vec::new()))],
                "a fixed set has 1",
            ),
            (
                vec![rule("x", None, Otherwise::Free(ValueKind::Text(1 << 30)))],
                "the limit is",
            ),
        ] {
            let e = Params::parse(rules, None).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn required_parameters_must_be_sent_and_wire_values_are_proxmoxs() {
        let params = vzdump().requiring("remove");
        let bound = params.bind(json!({"vmid": 550}).as_object().unwrap());
        let e = bound
            .admits(&sent(&[("vmid", "550")]), &nothing_answered)
            .unwrap_err();
        assert!(e.contains("leaves out remove"), "{e}");
        assert_eq!(wire(&json!(true)).as_deref(), Some("1"));
        assert_eq!(wire(&json!(102)).as_deref(), Some("102"));
        assert_eq!(wire(&json!("a b")).as_deref(), Some("a b"));
        assert_eq!(wire(&Value::Null), None);
        let secret = shown_value("password", "hunter2");
        assert!(!secret.contains("hunter2"));
        // Quoted once, and bounded, however a value is written.
        assert_eq!(shown_value("notes", "a\"b"), r#""a\"b""#);
        assert_eq!(
            shown_value("notes", &"x".repeat(100)),
            format!("{:?}…", "x".repeat(64))
        );
        let many: Vec<String> = (0..64).map(|i| format!("value-{i}")).collect();
        assert!(bounded_list(&many).chars().count() <= 201);
    }

    #[test]
    fn a_list_argument_is_its_elements_in_order_and_an_answer_only_what_was_answered() {
        let exec = Params::parse(
            vec![
                rule("command", Some("command"), Otherwise::Absent),
                rule("input-data", Some("input"), Otherwise::Absent),
            ],
            None,
        )
        .unwrap();
        let args = json!({"command": ["systemctl", "status", "nginx"]});
        let bound = exec.bind(args.as_object().unwrap());
        let argv = |v: &[&str]| -> Vec<(String, String)> {
            v.iter()
                .map(|a| ("command".to_string(), a.to_string()))
                .collect()
        };
        assert_eq!(
            bound.admits(&argv(&["systemctl", "status", "nginx"]), &nothing_answered),
            Ok(())
        );
        for other in [
            &["systemctl", "restart", "nginx"][..],
            &["systemctl", "nginx", "status"],
            &["systemctl", "status", "nginx", "--now"],
        ] {
            let e = bound.admits(&argv(other), &nothing_answered).unwrap_err();
            assert!(e.contains("`command`"), "{other:?}: {e}");
        }
        let e = bound
            .admits(&argv(&["systemctl", "status"]), &nothing_answered)
            .unwrap_err();
        assert!(e.contains("sent 2 times"), "{e}");
        // No input argument: no stdin either.
        let mut with_input = argv(&["systemctl", "status", "nginx"]);
        with_input.push(("input-data".into(), "rm -rf /".into()));
        assert!(bound.admits(&with_input, &nothing_answered).is_err());
        // A scalar argument is still sent once.
        let scalar = exec.bind(json!({"command": "df"}).as_object().unwrap());
        let e = scalar
            .admits(&argv(&["df", "df"]), &nothing_answered)
            .unwrap_err();
        assert!(e.contains("sent twice"), "{e}");

        let status = Params::parse(
            vec![rule("pid", None, Otherwise::Answered("pid".into()))],
            None,
        )
        .unwrap();
        let bound = status.bind(&JsonObject::new());
        let pid = |p: &str| vec![("pid".to_string(), p.to_string())];
        let answered = |field: &str, value: &str| field == "pid" && value == "4242";
        assert_eq!(bound.admits(&pid("4242"), &answered), Ok(()));
        let e = bound.admits(&pid("4241"), &answered).unwrap_err();
        assert!(e.contains("reads back only what it started"), "{e}");
        assert!(bound.admits(&pid("4242"), &nothing_answered).is_err());
        assert_eq!(bound.chosen_by_the_tool().count(), 0);
        // Bound to no call (the egress proxy), any pid.
        assert!(
            status
                .bind_open()
                .admits(&pid("1"), &nothing_answered)
                .is_ok()
        );
        assert_eq!(status.to_string(), "pid=<answered pid>");
    }
}
