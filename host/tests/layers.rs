//! The host's modules are layers: a module may use its own layer's modules
//! and those below it, never one above, and no two modules may use each
//! other round a cycle. This test reads every `crate::` and `super::` path
//! in `host/src` and fails, naming the file and line, when one breaks that.
//!
//! A new top-level module must be added to [`LAYERS`]: the test fails until
//! it is, so its place in the house is a decision, not an accident.
//!
//! File by file, in `host/src` and `guest/src`, the later tests check that
//! no files use each other round a cycle (inside a folder too: a module's
//! files are layers of their own), that only the guest's `lib.rs` uses its
//! `tools/` and no tool uses another tool's file, and that no file has more
//! than [`MAX_CODE_LINES`] lines of code outside its `#[cfg(test)]` items.
//! A file uses another when one of its `crate::`, `super::` or `self::`
//! paths (in a `use` or in code) names an item or module the other
//! defines: a child naming its parent's items uses the parent file, and
//! `mod x;` is no use. Code under `#[cfg(test)]` is left out, since only
//! the tests build it.

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
    ("metrics", 1),
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
    ("exposure", 4),
    // 5. The egress gate.
    ("egress", 5),
    // 6. The sandbox: engine, compile cache, per-call instances.
    ("sandbox", 6),
    // 7. Policy.
    ("policy", 7),
    // 8. Around an allowed call.
    ("approval", 8),
    ("audit", 8),
    ("telemetry", 8),
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

// ---------------------------------------------------------------------------
// File by file, in both trees: no import cycles, the guest's tools at the
// top of the guest, and no file too big to read.
// ---------------------------------------------------------------------------

/// The most lines of code a file may have outside its `#[cfg(test)]`
/// modules (blank and comment lines are not counted).
const MAX_CODE_LINES: usize = 700;

/// One source file of a tree, read once for every file-level check.
struct SourceFile {
    /// As the messages name it, e.g. `host/src/transport/http/serve.rs`.
    shown: String,
    /// Its module path within its crate (`[]` for `lib.rs`).
    module: Vec<String>,
    /// Declared behind `#[cfg(test)]` (or inside a file that is): all test.
    test_only: bool,
    /// Its `crate::`, `super::` and `self::` paths.
    paths: Vec<PathUse>,
    /// Lines of code outside `#[cfg(test)]` items.
    code_lines: usize,
    /// The line where code past [`MAX_CODE_LINES`] starts, if it does.
    over_at: Option<usize>,
}

/// One `crate::`/`super::`/`self::` path, resolved to an absolute module
/// path of its crate.
#[derive(Debug, Clone, PartialEq)]
struct PathUse {
    line: usize,
    target: Vec<String>,
    /// Written inside a `#[cfg(test)]` item.
    in_test: bool,
}

/// One file using another: `from` names an item of `to` at `line`.
struct FileUse {
    from: usize,
    to: usize,
    line: usize,
}

/// A crate's source tree: `host/src` or `guest/src`.
struct Tree {
    files: Vec<SourceFile>,
}

impl Tree {
    /// Reads every `.rs` file under `src` (shown as `shown_root/...`),
    /// except `main.rs`, a crate of its own whose paths name the library
    /// by name, never by `crate::`.
    fn read(src: &Path, shown_root: &str) -> Tree {
        let mut files = Vec::new();
        let mut test_modules = Vec::new();
        for file in rust_files(src) {
            let relative = file.strip_prefix(src).expect("under src");
            if relative == Path::new("main.rs") {
                continue;
            }
            let text = fs::read_to_string(&file).expect("read a source file");
            let module = module_path(relative);
            let scan = scan(&text, &module);
            test_modules.extend(scan.test_children);
            files.push(SourceFile {
                shown: format!("{shown_root}/{}", relative.display()),
                module,
                test_only: false,
                paths: scan.paths,
                code_lines: scan.code_lines,
                over_at: scan.over_at,
            });
        }
        // A file declared behind `#[cfg(test)]` is test code, and so is
        // every file below it.
        for file in &mut files {
            file.test_only = test_modules.iter().any(|m| file.module.starts_with(m));
        }
        Tree { files }
    }

    /// The file that defines the item or module at `target`: the file of
    /// its longest prefix that is a file's module.
    fn file_of(&self, target: &[String]) -> Option<usize> {
        (0..=target.len())
            .rev()
            .find_map(|n| self.files.iter().position(|f| f.module == target[..n]))
    }

    /// Every use of one file by another outside test code.
    fn uses(&self) -> Vec<FileUse> {
        let mut uses = Vec::new();
        for (from, file) in self.files.iter().enumerate() {
            if file.test_only {
                continue;
            }
            for path in file.paths.iter().filter(|p| !p.in_test) {
                if let Some(to) = self.file_of(&path.target)
                    && to != from
                    // `a::{self, B}` names one file twice on one line.
                    && !uses.last().is_some_and(|u: &FileUse| {
                        (u.from, u.to, u.line) == (from, to, path.line)
                    })
                {
                    uses.push(FileUse {
                        from,
                        to,
                        line: path.line,
                    });
                }
            }
        }
        uses
    }
}

/// What [`scan`] finds in a file.
struct Scan {
    paths: Vec<PathUse>,
    code_lines: usize,
    /// The line where code past [`MAX_CODE_LINES`] starts, if it does.
    over_at: Option<usize>,
    /// Modules declared `#[cfg(test)] mod x;`, as absolute module paths.
    test_children: Vec<Vec<String>>,
}

/// A token of code, with comments and the text of literals gone.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// The tokens of `text` with their lines, and for each line whether it
/// holds code (anything but blanks and comments; a literal is code).
fn tokens(text: &str) -> (Vec<(Token, usize)>, Vec<bool>) {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut has_code = vec![false; text.lines().count() + 2];
    let mut line = 1;
    let mut i = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            _ if c.is_whitespace() => i += 1,
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                let mut depth = 0;
                while i < chars.len() {
                    match (chars[i], chars.get(i + 1).copied()) {
                        ('/', Some('*')) => (depth, i) = (depth + 1, i + 2),
                        ('*', Some('/')) => (depth, i) = (depth - 1, i + 2),
                        ('\n', _) => (line, i) = (line + 1, i + 1),
                        _ => i += 1,
                    }
                    if depth == 0 {
                        break;
                    }
                }
            }
            // A string (`b"…"`'s `b` is an identifier before it), a raw
            // string `r#"…"#`, or a char literal: its text is no code path.
            '"' | 'r' | '\'' => {
                let start = i;
                let raw_hashes = (c == 'r' && !(i > 0 && ident(chars[i - 1])))
                    .then(|| {
                        let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
                        (chars.get(i + 1 + hashes) == Some(&'"')).then_some(hashes)
                    })
                    .flatten();
                let end = if let Some(hashes) = raw_hashes {
                    let close: String = std::iter::once('"')
                        .chain("#".repeat(hashes).chars())
                        .collect();
                    let body = i + 2 + hashes;
                    let rest: String = chars[body..].iter().collect();
                    body + rest.find(&close).map_or(rest.chars().count(), |at| {
                        rest[..at].chars().count() + close.len()
                    })
                } else if c == '"' {
                    let mut j = i + 1;
                    while j < chars.len() && chars[j] != '"' {
                        j += if chars[j] == '\\' { 2 } else { 1 };
                    }
                    j + 1
                } else if c == '\'' && next == Some('\\') {
                    // `'\n'`, `'\''`, `'\u{..}'`: the quote after the escape.
                    let after = (i + 3).min(chars.len());
                    after
                        + chars[after..]
                            .iter()
                            .position(|&q| q == '\'')
                            .map_or(0, |p| p + 1)
                } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
                    i + 3
                } else if c == '\'' {
                    // A lifetime or label: the name after it is an identifier.
                    has_code[line] = true;
                    tokens.push((Token::Punct('\''), line));
                    i += 1;
                    continue;
                } else {
                    // `r` starting an identifier.
                    let end = i + chars[i..].iter().take_while(|&&c| ident(c)).count();
                    has_code[line] = true;
                    tokens.push((Token::Ident(chars[i..end].iter().collect()), line));
                    i = end;
                    continue;
                };
                let end = end.min(chars.len());
                for &ch in &chars[start..end] {
                    has_code[line] = true;
                    if ch == '\n' {
                        line += 1;
                    }
                }
                tokens.push((Token::Punct('"'), line));
                i = end;
            }
            _ if ident(c) => {
                let end = i + chars[i..].iter().take_while(|&&c| ident(c)).count();
                has_code[line] = true;
                tokens.push((Token::Ident(chars[i..end].iter().collect()), line));
                i = end;
            }
            ':' if next == Some(':') => {
                has_code[line] = true;
                tokens.push((Token::PathSep, line));
                i += 2;
            }
            _ => {
                has_code[line] = true;
                tokens.push((Token::Punct(c), line));
                i += 1;
            }
        }
    }
    (tokens, has_code)
}

/// The paths, the lines of non-test code and the test-only child modules
/// of a file whose module path is `module`.
fn scan(text: &str, module: &[String]) -> Scan {
    let (tokens, has_code) = tokens(text);
    let is = |i: usize, want: &Token| tokens.get(i).is_some_and(|(t, _)| t == want);
    let ident_at = |i: usize| match tokens.get(i) {
        Some((Token::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
    // Each open brace: the inline module it opens, if any, and whether
    // what it holds is test code.
    let mut frames: Vec<(Option<String>, bool)> = Vec::new();
    let mut cfg_test = false;
    let mut test_lines = vec![false; has_code.len()];
    let mut out = Scan {
        paths: Vec::new(),
        code_lines: 0,
        over_at: None,
        test_children: Vec::new(),
    };
    // The child modules this file declares (`mod x;`): a path that starts
    // with one (`x::f()`, `use x::Y`) uses that child's file, as `self::x`
    // would. Rust refuses such a path when a crate has the same name, so it
    // cannot mean anything else.
    let children: Vec<&str> = (1..tokens.len())
        .filter(|&j| ident_at(j - 1) == Some("mod") && is(j + 1, &Token::Punct(';')))
        .filter_map(ident_at)
        .collect();
    let mut i = 0;
    while i < tokens.len() {
        let (token, line) = &tokens[i];
        let in_test = cfg_test || frames.last().is_some_and(|f| f.1);
        test_lines[*line] |= in_test;
        let here = || {
            let mut m = module.to_vec();
            m.extend(frames.iter().filter_map(|f| f.0.clone()));
            m
        };
        match token {
            Token::Punct('#')
                if is(i + 1, &Token::Punct('['))
                    && ident_at(i + 2) == Some("cfg")
                    && is(i + 3, &Token::Punct('('))
                    && ident_at(i + 4) == Some("test")
                    && is(i + 5, &Token::Punct(')')) =>
            {
                cfg_test = true;
            }
            Token::Punct('{') => {
                let name = (i >= 2 && ident_at(i - 2) == Some("mod"))
                    .then(|| ident_at(i - 1).map(String::from))
                    .flatten();
                frames.push((name, in_test));
                cfg_test = false;
            }
            Token::Punct('}') => {
                frames.pop();
                cfg_test = false;
            }
            Token::Punct(';') => {
                if cfg_test && i >= 2 && ident_at(i - 2) == Some("mod") {
                    let mut child = here();
                    child.push(ident_at(i - 1).unwrap_or_default().to_string());
                    out.test_children.push(child);
                }
                cfg_test = false;
            }
            Token::Ident(first)
                if (matches!(first.as_str(), "crate" | "super" | "self")
                    || (frames.iter().all(|f| f.0.is_none())
                        && children.contains(&first.as_str())))
                    && is(i + 1, &Token::PathSep)
                    && !(i > 0
                        && (is(i - 1, &Token::PathSep) || is(i - 1, &Token::Punct('$')))) =>
            {
                let base = here();
                let child = !matches!(first.as_str(), "crate" | "super" | "self");
                for (mut segments, line) in path_tree(&tokens, &mut i) {
                    if child {
                        segments.insert(0, "self".to_string());
                    }
                    if let Some(target) = resolve(&base, &segments) {
                        out.paths.push(PathUse {
                            line,
                            target,
                            in_test,
                        });
                    }
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    let code: Vec<usize> = (0..has_code.len())
        .filter(|&l| has_code[l] && !test_lines[l])
        .collect();
    out.code_lines = code.len();
    out.over_at = code.get(MAX_CODE_LINES).copied();
    out
}

/// The paths of the use tree at `tokens[*i]` (`a::b`, `a::{b, c::*}`,
/// `a::b::f(…)` in code), each as its segments and the line of its last
/// one; moves `i` past it.
fn path_tree(tokens: &[(Token, usize)], i: &mut usize) -> Vec<(Vec<String>, usize)> {
    let mut segments = Vec::new();
    let mut line = tokens[*i].1;
    while let Some((token, at)) = tokens.get(*i) {
        match token {
            Token::Ident(s) => {
                segments.push(s.clone());
                line = *at;
                *i += 1;
                if !matches!(tokens.get(*i), Some((Token::PathSep, _))) {
                    break;
                }
                *i += 1;
            }
            Token::Punct('*') => {
                *i += 1;
                break;
            }
            Token::Punct('{') => {
                *i += 1;
                let mut found = Vec::new();
                while let Some((token, _)) = tokens.get(*i) {
                    match token {
                        Token::Punct('}') => {
                            *i += 1;
                            break;
                        }
                        // `a as b`: `b` is a name, not a path.
                        Token::Ident(s) if s == "as" => *i += 2,
                        Token::Ident(_) | Token::Punct('{') | Token::Punct('*') => {
                            for (sub, at) in path_tree(tokens, i) {
                                let mut full = segments.clone();
                                full.extend(sub);
                                found.push((full, at));
                            }
                        }
                        _ => *i += 1,
                    }
                }
                return found;
            }
            _ => break,
        }
    }
    vec![(segments, line)]
}

/// `segments` (starting `crate`, `super` or `self`) written in module
/// `base`, as an absolute module path; `None` if it climbs above the root.
fn resolve(base: &[String], segments: &[String]) -> Option<Vec<String>> {
    let mut target = base.to_vec();
    let mut rest = segments.iter().peekable();
    match rest.peek().map(|s| s.as_str()) {
        Some("crate") => {
            target.clear();
            rest.next();
        }
        Some("self") => {
            rest.next();
        }
        _ => {}
    }
    while rest.peek().is_some_and(|s| *s == "super") {
        target.pop()?;
        rest.next();
    }
    target.extend(rest.filter(|s| *s != "self").cloned());
    Some(target)
}

/// Both crates' source trees: the host's and the guest's.
fn trees() -> (Tree, Tree) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    (
        Tree::read(&manifest.join("src"), "host/src"),
        Tree::read(&manifest.join("../guest/src"), "guest/src"),
    )
}

/// Fails with `problems` grouped by the folder of the file each names
/// first, so each folder's owner finds theirs.
fn report(check: &str, problems: Vec<(String, String)>) {
    let mut by_folder: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (file, message) in problems {
        let folder = Path::new(&file)
            .parent()
            .map_or_else(String::new, |p| p.display().to_string());
        by_folder.entry(folder).or_default().push(message);
    }
    let count: usize = by_folder.values().map(Vec::len).sum();
    let text: String = by_folder
        .iter()
        .map(|(folder, messages)| {
            format!(
                "\n{folder}/ ({})\n  {}\n",
                messages.len(),
                messages.join("\n  ")
            )
        })
        .collect();
    assert!(count == 0, "{check}: {count} problems\n{text}");
}

#[test]
fn no_source_files_use_each_other_in_a_cycle() {
    let mut problems = Vec::new();
    let (host, guest) = trees();
    for tree in [&host, &guest] {
        let uses = tree.uses();
        assert!(
            uses.len() > 100,
            "found only {} uses between files of {}: is the parser still reading the source?",
            uses.len(),
            tree.files[0].shown
        );
        problems.extend(cycles(tree, &uses));
    }
    report("files that use each other round a cycle", problems);
}

/// For each use that closes a cycle (its two files are in one strongly
/// connected component), a message naming it and the way back.
fn cycles(tree: &Tree, uses: &[FileUse]) -> Vec<(String, String)> {
    let n = tree.files.len();
    let mut next: Vec<BTreeMap<usize, usize>> = vec![BTreeMap::new(); n];
    for u in uses {
        next[u.from].entry(u.to).or_insert(u.line);
    }
    let component = components(&next);
    let name = |f: usize| tree.files[f].shown.as_str();
    let mut problems = Vec::new();
    for from in 0..n {
        for (&to, &line) in &next[from] {
            if component[from] != component[to] {
                continue;
            }
            let way_back = shortest_path(&next, &component, to, from)
                .windows(2)
                .map(|hop| format!("{}:{}", name(hop[0]), next[hop[0]][&hop[1]]))
                .collect::<Vec<_>>()
                .join(" -> ");
            problems.push((
                name(from).to_string(),
                format!(
                    "{}:{line}: uses {}, which uses it back ({way_back} -> {}); fix: move what \
                     one needs of the other into a file neither uses back, or pass it in as a value",
                    name(from),
                    name(to),
                    name(from)
                ),
            ));
        }
    }
    problems
}

/// Each node's strongly connected component (Tarjan's algorithm).
fn components(next: &[BTreeMap<usize, usize>]) -> Vec<usize> {
    struct State<'a> {
        next: &'a [BTreeMap<usize, usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        component: Vec<usize>,
        counter: usize,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.next[v].keys() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(i) if s.on_stack[w] => s.low[v] = s.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                s.component[w] = v;
                if w == v {
                    break;
                }
            }
        }
    }
    let n = next.len();
    let mut s = State {
        next,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        component: vec![0; n],
        counter: 0,
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.component
}

/// The shortest way from `from` to `to` within their component, both ends
/// included.
fn shortest_path(
    next: &[BTreeMap<usize, usize>],
    component: &[usize],
    from: usize,
    to: usize,
) -> Vec<usize> {
    let mut came_from = vec![None; next.len()];
    let mut queue = std::collections::VecDeque::from([from]);
    came_from[from] = Some(from);
    while let Some(v) = queue.pop_front() {
        if v == to {
            break;
        }
        for &w in next[v].keys() {
            if came_from[w].is_none() && component[w] == component[from] {
                came_from[w] = Some(v);
                queue.push_back(w);
            }
        }
    }
    let mut path = vec![to];
    while let Some(&v) = path.last()
        && v != from
    {
        path.push(came_from[v].expect("one component is strongly connected"));
    }
    path.reverse();
    path
}

#[test]
fn only_the_guest_lib_uses_its_tools_and_no_tool_uses_another() {
    let (_, guest) = trees();
    let tools = ["tools".to_string()];
    let mut problems = Vec::new();
    for u in guest.uses() {
        let (from, to) = (&guest.files[u.from], &guest.files[u.to]);
        let from_tools = from.module.starts_with(&tools);
        let to_tools = to.module.starts_with(&tools);
        let message = if !from_tools && to_tools && !from.module.is_empty() {
            format!(
                "{}:{}: uses {}, but only lib.rs may use crate::tools (the tools are the guest's \
                 top); fix: move what it needs out of tools/ into a module of its own below them",
                from.shown, u.line, to.shown
            )
        } else if from_tools && to_tools && from.module.len() > 1 && to.module.len() > 1 {
            format!(
                "{}:{}: the tool uses {}, another file of tools/; fix: move what both need out of \
                 tools/ into a module below them, so each tool stands alone",
                from.shown, u.line, to.shown
            )
        } else {
            continue;
        };
        problems.push((from.shown.clone(), message));
    }
    report("guest files that use crate::tools", problems);
}

#[test]
fn no_source_file_has_over_700_lines_of_code() {
    let (host, guest) = trees();
    let problems = [&host, &guest]
        .into_iter()
        .flat_map(|tree| &tree.files)
        .filter(|f| !f.test_only)
        .filter_map(|f| {
            let line = f.over_at?;
            Some((
                f.shown.clone(),
                format!(
                    "{}:{line}: {} lines of code outside #[cfg(test)] modules (blank and comment \
                     lines not counted), over {MAX_CODE_LINES} from here; fix: move a part with a \
                     job of its own into a file of its own",
                    f.shown, f.code_lines
                ),
            ))
        })
        .collect();
    report("files over the size limit", problems);
}

#[test]
fn the_file_scanner_resolves_paths_and_skips_literals_comments_and_tests() {
    let text = r##"
use crate::a::{self, b::{C, d as e}, f::*};
use super::g::H; // crate::not_this
/* crate::nor_this */
const S: &str = "crate::nor_in_a_string";
const R: &str = r#"crate::nor_raw"#;
const Q: char = '"';
fn f<'a>() { let _ = self::i::J::new(); $crate::k::L; }
#[cfg(test)]
mod tests;
#[cfg(test)]
mod inline {
    use super::*;
    use crate::m::N;
}
mod child;
fn g() { child::run(); }
"##;
    let module = ["x".to_string(), "y".to_string()];
    let scan = scan(text, &module);
    let found: Vec<(usize, String, bool)> = scan
        .paths
        .iter()
        .map(|p| (p.line, p.target.join("::"), p.in_test))
        .collect();
    let want = [
        (2, "a", false),
        (2, "a::b::C", false),
        (2, "a::b::d", false),
        (2, "a::f", false),
        (3, "x::g::H", false),
        (8, "x::y::i::J::new", false),
        (13, "x::y", true),
        (14, "m::N", true),
        // A child the file declares, named without `self::`.
        (17, "x::y::child::run", false),
    ];
    let want: Vec<(usize, String, bool)> = want
        .iter()
        .map(|&(l, t, test)| (l, t.to_string(), test))
        .collect();
    assert_eq!(found, want);
    assert_eq!(scan.test_children, [vec!["x", "y", "tests"]]);
    // Lines 2 to 8 but the comment, and 16 and 17: not the blank first
    // line, nor `#[cfg(test)]` and what it marks.
    assert_eq!(scan.code_lines, 8);
}
