//! `docs/security.md` names a test for every attack class it claims holds.
//! This keeps the page honest: every test it names must exist, so a test
//! renamed or removed makes the page fail here rather than go stale.

use std::path::{Path, PathBuf};

/// The repository root (this crate is `host/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ has a parent")
        .to_path_buf()
}

/// Every `` `a::b` `` or `` `path/file.rs::name` `` reference in the page.
fn references(page: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for span in page.split('`').skip(1).step_by(2) {
        let Some((file, name)) = span.rsplit_once("::") else {
            continue;
        };
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            continue;
        }
        found.push((file.to_string(), name.to_string()));
    }
    found
}

/// Where a module-style reference may live, in this order: an e2e module,
/// a host or guest integration test, a guest or host source module.
const MODULE_DIRS: &[&str] = &[
    "tests/e2e",
    "host/tests",
    "guest/tests",
    "guest/src",
    "host/src",
];

/// Where a reference's test lives: a path ending in `.rs` is itself;
/// `module` is the first `module.rs` of [`MODULE_DIRS`] that exists.
fn source(file: &str) -> Option<PathBuf> {
    if file.ends_with(".rs") {
        return Some(root().join(file));
    }
    if !file
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return None;
    }
    let candidates: Vec<PathBuf> = MODULE_DIRS
        .iter()
        .map(|d| root().join(d).join(format!("{file}.rs")))
        .collect();
    candidates
        .iter()
        .find(|p| p.is_file())
        .or(candidates.first())
        .cloned()
}

#[test]
fn every_test_the_security_page_names_exists() {
    let page = std::fs::read_to_string(root().join("docs/security.md")).expect("docs/security.md");
    let refs = references(&page);
    assert!(refs.len() >= 30, "the page names only {} tests", refs.len());
    let mut missing = Vec::new();
    for (file, name) in &refs {
        let Some(path) = source(file) else {
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if !text.contains(&format!("fn {name}(")) {
            missing.push(format!("{file}::{name} ({})", path.display()));
        }
    }
    assert!(
        missing.is_empty(),
        "docs/security.md names tests that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_page_counts_at_least_thirty_classes() {
    let page = std::fs::read_to_string(root().join("docs/security.md")).expect("docs/security.md");
    let rows = page
        .lines()
        .filter(|l| {
            // A numbered row is `| N | ...`: the first cell a number alone.
            l.strip_prefix("| ")
                .and_then(|rest| rest.split_once(" | "))
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        })
        .count();
    assert!(rows >= 30, "{rows} numbered attack classes");
    assert!(
        page.contains(&format!("**Count: {rows} classes, each with a test.**")),
        "the page's count line must say {rows}"
    );
}
