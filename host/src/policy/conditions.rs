//! Conditions on a call's arguments: `eq`, `in`, `not_in`, `lt`, `gt` and
//! `regex`. A condition that cannot be shown to hold fails: an absent
//! argument (or `null`, which the tools treat as absent), a value of the
//! wrong type, an object, and `node = "localhost"`, which Proxmox reads as
//! whichever node answers.

use std::fmt;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

/// The comparison a condition makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Equal to the value.
    Eq,
    /// One of the listed values.
    In,
    /// None of the listed values.
    NotIn,
    /// A number less than the value.
    Lt,
    /// A number greater than the value.
    Gt,
    /// A string the regular expression matches in full.
    Regex,
}

impl Op {
    /// The name as written in the policy.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::In => "in",
            Op::NotIn => "not_in",
            Op::Lt => "lt",
            Op::Gt => "gt",
            Op::Regex => "regex",
        }
    }
}

/// What a condition compares with, checked when the policy is loaded.
#[derive(Debug, Clone)]
pub enum Expected {
    /// `eq`: one scalar.
    One(Value),
    /// `in` / `not_in`: a list of scalars.
    Set(Vec<Value>),
    /// `lt` / `gt`: a number.
    Number(f64),
    /// `regex`: the pattern anchored at both ends, and as written.
    Pattern(Regex, String),
}

/// One condition of a rule.
#[derive(Debug, Clone)]
pub struct Condition {
    /// Where it is written, e.g. `policy.tools.pve_get_vm_status.conditions[0]`.
    pub name: String,
    /// The top-level argument it looks at.
    pub arg: String,
    /// The comparison.
    pub op: Op,
    /// The value compared with.
    pub expected: Expected,
}

/// Regular expressions compile to at most this much memory, so a policy
/// cannot make the host build a huge automaton.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

impl Condition {
    /// Builds a condition from the policy's `value`; the error says what
    /// `value` must be for this op.
    pub fn new(
        name: String,
        arg: String,
        op: Op,
        value: &toml::Value,
    ) -> Result<Condition, String> {
        let scalar = |v: &toml::Value| -> Result<Value, String> {
            match v {
                toml::Value::String(s) => Ok(Value::String(s.clone())),
                toml::Value::Integer(i) => Ok(Value::from(*i)),
                toml::Value::Float(f) => serde_json::Number::from_f64(*f)
                    .map(Value::Number)
                    .ok_or_else(|| format!("{f} is not a finite number")),
                toml::Value::Boolean(b) => Ok(Value::Bool(*b)),
                other => Err(format!(
                    "{} values cannot be compared; use a string, a number or a boolean",
                    other.type_str()
                )),
            }
        };
        let expected = match op {
            Op::Eq => {
                Expected::One(scalar(value).map_err(|e| format!("`value` of op \"eq\": {e}"))?)
            }
            Op::In | Op::NotIn => {
                let toml::Value::Array(items) = value else {
                    return Err(format!(
                        "op {:?} needs a list as `value`, e.g. value = [100, 101]",
                        op.as_str()
                    ));
                };
                if items.is_empty() {
                    return Err(format!("op {:?} needs a non-empty list", op.as_str()));
                }
                let set = items
                    .iter()
                    .map(scalar)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("a `value` item of op {:?}: {e}", op.as_str()))?;
                Expected::Set(set)
            }
            Op::Lt | Op::Gt => match value {
                toml::Value::Integer(i) => Expected::Number(*i as f64),
                toml::Value::Float(f) if f.is_finite() => Expected::Number(*f),
                _ => {
                    return Err(format!(
                        "op {:?} needs a number as `value`, e.g. value = 200",
                        op.as_str()
                    ));
                }
            },
            Op::Regex => {
                let toml::Value::String(pattern) = value else {
                    return Err(
                        "op \"regex\" needs a string as `value`, e.g. value = \"^dev-.*\"".into(),
                    );
                };
                let regex = regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
                    .size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .map_err(|e| format!("{pattern:?} is not a valid regular expression: {e}"))?;
                Expected::Pattern(regex, pattern.clone())
            }
        };
        Ok(Condition {
            name,
            arg,
            op,
            expected,
        })
    }

    /// Whether the arguments satisfy the condition; otherwise, why not, in
    /// words for the agent.
    pub fn check(&self, arguments: &serde_json::Map<String, Value>) -> Result<(), String> {
        let Some(actual) = arguments.get(&self.arg).filter(|v| !v.is_null()) else {
            return Err(format!(
                "argument `{}` is absent, so the call cannot be shown to satisfy `{}`; pass `{}` explicitly",
                self.arg, self, self.arg
            ));
        };
        if self.arg == NODE_ARG && names_local_node(actual) {
            return Err(format!(
                "argument `{}` = {} cannot be shown to satisfy `{}`: Proxmox takes \"localhost\" \
                 to mean whichever node answers the request; name the node, e.g. from pve_list_nodes",
                self.arg,
                shown(actual),
                self
            ));
        }
        let holds = match actual {
            // A list argument satisfies the condition when every item does.
            Value::Array(items) => !items.is_empty() && items.iter().all(|v| self.holds(v)),
            one => self.holds(one),
        };
        if holds {
            Ok(())
        } else {
            Err(format!(
                "argument `{}` = {} does not satisfy `{}`",
                self.arg,
                shown(actual),
                self
            ))
        }
    }

    fn holds(&self, actual: &Value) -> bool {
        match &self.expected {
            Expected::One(want) => same(actual, want),
            Expected::Set(set) => {
                let member = set.iter().any(|want| same(actual, want));
                match self.op {
                    // A value that is not a plain scalar is never proven
                    // absent from the list.
                    Op::NotIn => !member && is_scalar(actual),
                    _ => member,
                }
            }
            Expected::Number(bound) => match as_number(actual) {
                Some(n) if self.op == Op::Lt => n < *bound,
                Some(n) => n > *bound,
                None => false,
            },
            Expected::Pattern(regex, _) => match actual {
                Value::String(s) => regex.is_match(s),
                Value::Number(n) => regex.is_match(&n.to_string()),
                _ => false,
            },
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = match &self.expected {
            Expected::One(v) => v.to_string(),
            Expected::Set(set) => Value::Array(set.clone()).to_string(),
            Expected::Number(n) => n.to_string(),
            Expected::Pattern(_, p) => Value::String(p.clone()).to_string(),
        };
        write!(f, "{} {} {value}", self.arg, self.op.as_str())
    }
}

/// The argument that names a Proxmox node in every tool.
const NODE_ARG: &str = "node";

/// Whether a `node` value (or any item of a list of them) is `localhost`,
/// in any case: Proxmox resolves it to the node that answers, so which node
/// it means is unknown here and no condition on `node` can be shown to hold.
fn names_local_node(actual: &Value) -> bool {
    let local = |v: &Value| {
        v.as_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("localhost"))
    };
    match actual {
        Value::Array(items) => items.iter().any(local),
        one => local(one),
    }
}

fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// A number, or a string holding one: a tool might accept `"100"` for
/// 100, so a policy must not treat them as different values.
fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

/// Equality as an operator means it: when either side is a JSON number the
/// two compare as numbers, so `"100"` in a policy and `100` in a call (or
/// the other way round) are the same vmid; otherwise exactly.
fn same(actual: &Value, want: &Value) -> bool {
    if actual.is_number() || want.is_number() {
        return match (as_number(actual), as_number(want)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        };
    }
    actual == want
}

/// An argument as shown in a denial: short, so a huge value cannot flood
/// the agent's context.
fn shown(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= 80 {
        text
    } else {
        let cut: String = text.chars().take(77).collect();
        format!("{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cond(op: Op, value: &str) -> Condition {
        let value: toml::Value =
            toml::from_str::<toml::Table>(&format!("v = {value}")).unwrap()["v"].clone();
        Condition::new("c".into(), "x".into(), op, &value).unwrap()
    }

    fn args(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn each_operator_passes_and_fails() {
        let cases: &[(Op, &str, Value, bool)] = &[
            (Op::Eq, "\"pve1\"", json!("pve1"), true),
            (Op::Eq, "\"pve1\"", json!("pve2"), false),
            (Op::Eq, "100", json!(100), true),
            (Op::Eq, "100", json!(100.0), true),
            (Op::Eq, "100", json!("100"), true),
            (Op::Eq, "true", json!(true), true),
            (Op::In, "[100, 101]", json!(101), true),
            (Op::In, "[100, 101]", json!(102), false),
            (Op::In, "[100, 101]", json!([100, 101]), true),
            (Op::In, "[100, 101]", json!([100, 102]), false),
            (Op::NotIn, "[100, 101]", json!(102), true),
            (Op::NotIn, "[100, 101]", json!(100), false),
            (Op::NotIn, "[100, 101]", json!("100"), false),
            (Op::NotIn, "[100, 101]", json!({"vmid": 100}), false),
            // A policy written with strings still catches the number.
            (Op::NotIn, "[\"100\"]", json!(100), false),
            (Op::In, "[\"100\"]", json!(100), true),
            (Op::Eq, "\"100\"", json!(100.0), true),
            (Op::Eq, "\"pve1\"", json!(1), false),
            (Op::Lt, "200", json!(199), true),
            (Op::Lt, "200", json!(200), false),
            (Op::Lt, "200", json!("abc"), false),
            (Op::Gt, "200", json!(201), true),
            (Op::Gt, "200", json!(200.0), false),
            (Op::Regex, "\"dev-.*\"", json!("dev-web"), true),
            (Op::Regex, "\"dev-.*\"", json!("prod-dev-web"), false),
            (Op::Regex, "\"dev|test\"", json!("devx"), false),
            (Op::Regex, "\"1\\\\d\\\\d\"", json!(150), true),
        ];
        for (op, value, actual, want) in cases {
            let c = cond(*op, value);
            let got = c.check(&args(json!({ "x": actual })));
            assert_eq!(got.is_ok(), *want, "{c} with {actual}: {got:?}");
        }
    }

    #[test]
    fn absent_or_null_arguments_fail_and_say_so() {
        let c = cond(Op::NotIn, "[100]");
        for a in [json!({}), json!({"x": null})] {
            let err = c.check(&args(a)).unwrap_err();
            assert!(err.contains("`x` is absent"), "{err}");
            assert!(err.contains("x not_in [100]"), "{err}");
        }
    }

    /// Proxmox reads `localhost` as whichever node answers, so no condition
    /// on `node` can be shown to hold for it, `not_in` least of all.
    #[test]
    fn localhost_as_node_cannot_satisfy_a_condition() {
        let on_node = |op, value: &str| {
            let value: toml::Value =
                toml::from_str::<toml::Table>(&format!("v = {value}")).unwrap()["v"].clone();
            Condition::new("c".into(), "node".into(), op, &value).unwrap()
        };
        let conditions = [
            on_node(Op::NotIn, "[\"pve1\"]"),
            on_node(Op::Eq, "\"localhost\""),
            on_node(Op::Regex, "\".*\""),
        ];
        for c in &conditions {
            for name in [
                json!("localhost"),
                json!("LocalHost"),
                json!(["pve2", "LOCALHOST"]),
            ] {
                let err = c.check(&args(json!({ "node": name }))).unwrap_err();
                assert!(
                    err.contains("argument `node`")
                        && err.contains("localhost")
                        && err.contains("name the node, e.g. from pve_list_nodes"),
                    "{c} with {name}: {err}"
                );
            }
        }
        // Other arguments and real node names are unaffected.
        assert!(conditions[0].check(&args(json!({"node": "pve2"}))).is_ok());
        assert!(
            cond(Op::Eq, "\"localhost\"")
                .check(&args(json!({"x": "localhost"})))
                .is_ok()
        );
    }

    #[test]
    fn bad_values_are_explained() {
        let bad = |op, v: toml::Value| Condition::new("c".into(), "x".into(), op, &v).unwrap_err();
        assert!(bad(Op::In, toml::Value::Integer(1)).contains("needs a list"));
        assert!(bad(Op::In, toml::Value::Array(vec![])).contains("non-empty"));
        assert!(bad(Op::Lt, toml::Value::String("1".into())).contains("needs a number"));
        assert!(
            bad(Op::Regex, toml::Value::String("(".into()))
                .contains("not a valid regular expression")
        );
        assert!(bad(Op::Eq, toml::Value::Array(vec![])).contains("cannot be compared"));
    }
}
