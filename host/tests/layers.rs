//! The host's modules are layers: a module may use its own layer's modules
//! and those below it, never one above, and no two modules may use each
//! other round a cycle. This test reads every `crate::` and `super::` path
//! in `host/src` and fails, naming the file and line, when one breaks that.
//!
//! A new top-level module must be added to [`LAYERS`]: the test fails until
//! it is, so its place in the house is a decision, not an accident.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Each top-level module of `host/src` and its layer, bottom (1) to top.
/// `docs/architecture.md` says what each layer is for.
const LAYERS: &[(&str, u8)] = &[
    // 1. Small shared types.
    ("caller", 1),
    ("canonical", 1),
    ("endpoint", 1),
    ("error", 1),
    ("logging", 1),
    ("secret", 1),
    ("state", 1),
    ("tools", 1),
    ("route", 1),
    ("tier", 1),
    // 2. TLS, both directions.
    ("tls", 2),
    // 3. Configuration, parsed into typed values.
    ("config", 3),
    // 4. The HTTPS client to Proxmox.
    ("upstream", 4),
    // 5. The egress gate.
    ("egress", 5),
    // 6. The sandbox: engine, compile cache, per-call instances.
    ("sandbox", 6),
    // 7. Policy.
    ("policy", 7),
    // 8. Around an allowed call.
    ("approval", 8),
    ("audit", 8),
    // 9. The MCP server, whatever the transport.
    ("server", 9),
    // 10. stdio and Streamable HTTP.
    ("transport", 10),
    // 11. The command line.
    ("commands", 11),
];

/// One use of a module: where it is written and what it names.
struct Use {
    file: PathBuf,
    line: usize,
    from: String,
    to: String,
}

#[test]
fn no_module_uses_one_above_it_or_closes_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut problems = Vec::new();

    for module in top_level_modules(&src.join("lib.rs")) {
        if !layers.contains_key(module.as_str()) {
            problems.push(format!(
                "src/lib.rs declares `mod {module}`, which has no layer: add it to LAYERS in {}",
                file!()
            ));
        }
    }

    let uses = collect_uses(&src);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for u in &uses {
        if u.from == u.to {
            continue;
        }
        let (Some(&from), Some(&to)) = (layers.get(u.from.as_str()), layers.get(u.to.as_str()))
        else {
            continue;
        };
        if to > from {
            problems.push(format!(
                "{}:{}: `{}` (layer {from}) uses `{}` (layer {to}), a layer above it; move what it \
                 needs down, or pass it in as a plain value",
                u.file.display(),
                u.line,
                u.from,
                u.to
            ));
        }
        edges
            .entry(u.from.clone())
            .or_default()
            .insert(u.to.clone());
    }
    if let Some(cycle) = find_cycle(&edges) {
        problems.push(format!(
            "modules use each other in a cycle: {}",
            cycle.join(" -> ")
        ));
    }
    assert!(
        uses.len() > 50,
        "found only {} uses in {}: is the parser still reading the source?",
        uses.len(),
        src.display()
    );
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

/// The `mod` items of the crate root.
fn top_level_modules(lib: &Path) -> Vec<String> {
    let text = fs::read_to_string(lib).expect("read src/lib.rs");
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("mod "))?;
            Some(rest.trim_end_matches(';').trim().to_string())
        })
        .collect()
}

/// Every `crate::a…` and `super::…` path in every file under `src`, as the
/// top-level module it is written in and the one it names.
fn collect_uses(src: &Path) -> Vec<Use> {
    let mut uses = Vec::new();
    for file in rust_files(src) {
        let relative = file.strip_prefix(src).expect("under src");
        let module = module_path(relative);
        let Some(from) = module.first().cloned() else {
            continue; // lib.rs and main.rs sit above every layer.
        };
        let text = fs::read_to_string(&file).expect("read a source file");
        for (index, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for to in named_modules(code, &module) {
                uses.push(Use {
                    file: relative.to_path_buf(),
                    line: index + 1,
                    from: from.clone(),
                    to,
                });
            }
        }
    }
    uses
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("read a source folder")
        .map(|e| e.expect("a folder entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// `server/app.rs` -> `[server, app]`; `server/mod.rs` -> `[server]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The top-level modules a line of code names through `crate::` (including
/// `crate::{a, b::c}` groups) or `super::` (resolved against `module`).
fn named_modules(code: &str, module: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `some_crate::`
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or("");
            found.extend(
                group
                    .split(',')
                    .map(|p| first_segment(p.trim()))
                    .filter(|s| !s.is_empty()),
            );
        } else {
            let name = first_segment(rest);
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    for (at, _) in code.match_indices("super::") {
        if code[..at].ends_with("super::") {
            continue; // counted from the first `super::` of a chain
        }
        let mut rest = &code[at..];
        // A file's module is its own `super` scope's child; `use super::x`
        // in `a/b.rs` names `a::x`, and the top-level module is `a` unless
        // the chain climbs out of it.
        let mut depth = module.len();
        while let Some(next) = rest.strip_prefix("super::") {
            depth = depth.saturating_sub(1);
            rest = next;
        }
        if depth == 0 {
            let name = first_segment(rest);
            if !name.is_empty() && name != "tests" {
                found.push(name);
            }
        }
    }
    found
}

fn first_segment(path: &str) -> String {
    path.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// A cycle in the module graph, as the modules round it, if there is one.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = stack.iter().position(|n| n == node).unwrap_or(0);
                let mut cycle = stack[start..].to_vec();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node.to_string(), Mark::Open);
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, marks, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in edges.keys() {
        if let Some(cycle) = visit(node, edges, &mut marks, &mut Vec::new()) {
            return Some(cycle);
        }
    }
    None
}

#[test]
fn the_parser_sees_groups_super_chains_and_skips_other_crates() {
    let module = |p: &str| p.split('/').map(String::from).collect::<Vec<_>>();
    assert_eq!(
        named_modules("use crate::{config::Config, error::ConfigError};", &[]),
        ["config", "error"]
    );
    assert_eq!(
        named_modules("let x = crate::server::app::App::new();", &[]),
        ["server"]
    );
    assert!(named_modules("use other_crate::x;", &[]).is_empty());
    // `super::` inside a top-level module stays in it...
    assert!(named_modules("use super::store::X;", &module("approval/serve")).is_empty());
    // ...and a chain that climbs out of it names another.
    assert_eq!(
        named_modules("use super::super::policy::Rule;", &module("server/app")),
        ["policy"]
    );
    let cyclic: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["a".to_string()])),
    ]
    .into();
    assert_eq!(find_cycle(&cyclic).unwrap(), ["a", "b", "a"]);
}
