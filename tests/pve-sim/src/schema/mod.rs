//! Request validation in PVE's JSON-schema dialect.
//!
//! The same engine checks the simulator's own per-route parameter specs and,
//! when configured, the official `apidata.json` (read at run time only: it is
//! AGPL-licensed and must not be compiled in). Error texts and their order
//! (type, format, pattern, length, range, enum) follow `PVE::JSONSchema`.

mod formats;
mod props;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use serde_json::Value;

pub(crate) use props::{MethodSchema, Prop};

/// Where a request lands in the schema tree.
pub(crate) enum Lookup<'a> {
    /// No such path: PVE answers 501.
    NoPath,
    /// The path exists but not the method: also 501.
    NoMethod,
    /// The method's schema and the path parameters it captured.
    Found(&'a MethodSchema, Vec<(String, String)>),
}

#[derive(Default)]
struct Node {
    literal: HashMap<String, Node>,
    param: Option<(String, Box<Node>)>,
    methods: HashMap<String, Arc<MethodSchema>>,
}

/// The API tree loaded from `apidata.json`.
pub(crate) struct Schema {
    root: Node,
    /// PVE's `GET /` index takes no parameters; apidata.json has no node
    /// for it.
    root_index: MethodSchema,
}

impl Schema {
    pub fn load(path: &Path) -> anyhow::Result<Schema> {
        let text = std::fs::read(path)
            .with_context(|| format!("reading API schema {}", path.display()))?;
        let v: Value = serde_json::from_slice(&text)
            .with_context(|| format!("parsing API schema {}", path.display()))?;
        let Value::Array(items) = v else {
            anyhow::bail!("{}: expected a JSON array of path nodes", path.display());
        };
        let mut root = Node::default();
        let mut count = 0usize;
        for item in &items {
            add_tree(&mut root, item, &mut count, 0);
        }
        anyhow::ensure!(count > 0, "{}: no API methods found", path.display());
        Ok(Schema {
            root,
            root_index: MethodSchema::strict(vec![]),
        })
    }

    /// Walks the tree like PVE's `find_handler`: empty segments are skipped,
    /// a literal child wins over the `{param}` child, no backtracking.
    /// `segments` are already percent-decoded.
    pub fn lookup<'a>(&'a self, method: &str, segments: &[String]) -> Lookup<'a> {
        if segments.is_empty() {
            return if method == "GET" {
                Lookup::Found(&self.root_index, Vec::new())
            } else {
                Lookup::NoMethod
            };
        }
        let mut node = &self.root;
        let mut captured = Vec::new();
        for seg in segments {
            if let Some(next) = node.literal.get(seg) {
                node = next;
            } else if let Some((name, next)) = &node.param {
                captured.push((name.clone(), seg.clone()));
                node = next;
            } else {
                return Lookup::NoPath;
            }
        }
        if node.methods.is_empty() {
            return Lookup::NoPath;
        }
        match node.methods.get(method) {
            Some(ms) => Lookup::Found(ms, captured),
            None => Lookup::NoMethod,
        }
    }
}

fn add_tree(root: &mut Node, item: &Value, count: &mut usize, depth: usize) {
    // The real tree is about ten levels deep; the cap only guards against
    // a hostile file overflowing the stack.
    if depth > 64 {
        return;
    }
    if let (Some(path), Some(Value::Object(info))) =
        (item.get("path").and_then(Value::as_str), item.get("info"))
    {
        let mut node = &mut *root;
        for seg in path.split('/').filter(|s| !s.is_empty()) {
            node = if let Some(name) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                let slot = node
                    .param
                    .get_or_insert_with(|| (name.to_string(), Box::default()));
                &mut slot.1
            } else {
                node.literal.entry(seg.to_string()).or_default()
            };
        }
        for (method, minfo) in info {
            node.methods
                .insert(method.clone(), Arc::new(MethodSchema::from_json(minfo)));
            *count += 1;
        }
    }
    if let Some(Value::Array(children)) = item.get("children") {
        for c in children {
            add_tree(root, c, count, depth + 1);
        }
    }
}
