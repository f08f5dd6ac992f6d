//! Fuzz target: a tool call's `arguments` into the guest's validation, for
//! every tool. Hostile objects (plausible and hostile values for every
//! declared argument, stray keys) and hostile texts must end in a clean
//! `invalid-arguments` error that names the field, before any request; and
//! what the guest accepts, the input schema agents see must accept too.
//!
//! `PVE_MCP_FUZZ_CASES=1000000 cargo test --release -p pve-mcp-guest --test fuzz_arguments`

#[path = "../../tests/fuzz/gen.rs"]
mod fuzz_gen;

use std::sync::LazyLock;
use std::time::Duration;

use proptest::prelude::*;
use pve_mcp_guest::api::Pve;
use pve_mcp_guest::error::ToolError;
use pve_mcp_guest::path::ApiPath;
use pve_mcp_guest::tool::Tool;
use pve_mcp_guest::tools::TOOLS;
use pve_mcp_guest::write::WriteRequest;
use serde_json::{Map, Value};

/// Longest message an argument error may be: values are shown cut short,
/// so a huge argument cannot flood the agent's context.
const MESSAGE_MAX: usize = 2048;

/// What the guest sends when the arguments were accepted: its first
/// request ends the call.
const ACCEPTED: &str = "fuzz: arguments accepted";

/// A Proxmox that answers nothing, counting the requests asked of it.
#[derive(Default)]
struct Refusing(usize);

impl Pve for Refusing {
    fn get(&mut self, _: &ApiPath) -> Result<Value, ToolError> {
        self.0 += 1;
        Err(ToolError::Upstream(ACCEPTED.into()))
    }

    fn send(&mut self, _: &WriteRequest) -> Result<Value, ToolError> {
        self.0 += 1;
        Err(ToolError::Upstream(ACCEPTED.into()))
    }

    fn sleep(&mut self, _: Duration) {}

    fn elapsed(&self) -> Duration {
        Duration::ZERO
    }
}

/// Every tool with its listed input schema, compiled once.
struct Target {
    tool: &'static Tool,
    schema: Value,
    validator: jsonschema::Validator,
}

static TARGETS: LazyLock<Vec<Target>> = LazyLock::new(|| {
    TOOLS
        .iter()
        .map(|tool| {
            let schema: Value = serde_json::from_str(tool.input_schema).unwrap();
            let validator = jsonschema::draft202012::new(&schema).unwrap();
            Target {
                tool,
                schema,
                validator,
            }
        })
        .collect()
});

/// A tool and an arguments object for it.
fn call() -> impl Strategy<Value = (usize, Map<String, Value>)> {
    (0..TARGETS.len()).prop_flat_map(|i| (Just(i), fuzz_gen::arguments_for(&TARGETS[i].schema)))
}

/// Checks one call: either a field-naming argument error with no request,
/// or accepted arguments that the schema accepts too.
fn check(target: &Target, args: &Map<String, Value>, text: &str) -> Result<(), TestCaseError> {
    let tool = target.tool;
    let mut pve = Refusing::default();
    match tool.call(&mut pve, text) {
        Err(ToolError::InvalidArguments(m)) => {
            prop_assert_eq!(
                pve.0,
                0,
                "{}: a request before the arguments were read",
                tool.name
            );
            prop_assert!(
                m.len() <= MESSAGE_MAX,
                "{}: {} bytes: {}",
                tool.name,
                m.len(),
                m
            );
            let head = m.split(':').next().unwrap_or_default();
            // A field the call sent, one the schema requires, or one it
            // declares: the call's other arguments make it required
            // (`node` with `scope: "node"`), or the message offers the
            // fields to choose from ("name vms, storage or comment: there
            // is nothing to change").
            let declared = |word: &str| target.schema["properties"].get(word).is_some();
            let names_field = m.starts_with('"') // a quoted stray key
                || args.contains_key(head)
                || target.schema["required"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|f| f == head))
                || declared(head)
                || head
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| *w != "name")
                    .any(declared);
            prop_assert!(names_field, "{}: does not name a field: {}", tool.name, m);
        }
        // Accepted: the first request was refused, or the tool (such as
        // `pve_list_clusters`) needs none.
        Ok(_) => check_accepted(target, args, text)?,
        Err(ToolError::Upstream(m)) if m == ACCEPTED => check_accepted(target, args, text)?,
        other => prop_assert!(false, "{}: {:?} for {}", tool.name, other, text),
    }
    Ok(())
}

/// `value` with every object key whose value is `null` left out, at every
/// depth: what the listed schemas describe.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// Arguments the guest accepted must be ones its input schema accepts.
fn check_accepted(
    target: &Target,
    args: &Map<String, Value>,
    text: &str,
) -> Result<(), TestCaseError> {
    // `null` counts as absent by design (clients send it for unused
    // optional arguments, and `pve_api_request`'s `params` leave a
    // parameter out with it); the schema leaves such keys out, at every
    // depth.
    let value = without_nulls(&Value::Object(args.clone()));
    let errors: Vec<String> = target
        .validator
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    prop_assert!(
        errors.is_empty(),
        "{} accepted arguments its schema refuses: {}\n{:#?}",
        target.tool.name,
        text,
        errors
    );
    Ok(())
}

proptest! {
    #![proptest_config(fuzz_gen::config(1_000))]

    #[test]
    fn fuzz_tool_arguments((i, args) in call()) {
        let text = Value::Object(args.clone()).to_string();
        check(&TARGETS[i], &args, &text)?;
    }

    /// Not an object, not JSON, or nested too deep: a clean error about
    /// the arguments as a whole.
    #[test]
    fn fuzz_argument_texts(i in 0..TARGETS.len(), text in fuzz_gen::hostile_json_text()) {
        let tool = TARGETS[i].tool;
        let text = String::from_utf8_lossy(&text);
        let mut pve = Refusing::default();
        match tool.call(&mut pve, &text) {
            Err(ToolError::InvalidArguments(m)) => {
                prop_assert_eq!(pve.0, 0);
                prop_assert!(m.len() <= MESSAGE_MAX, "{} bytes: {}", m.len(), m);
            }
            // An object the text happened to spell that the tool accepts.
            Ok(_) => {}
            Err(ToolError::Upstream(m)) if m == ACCEPTED => {}
            other => prop_assert!(false, "{}: {:?}", tool.name, other),
        }
    }
}
