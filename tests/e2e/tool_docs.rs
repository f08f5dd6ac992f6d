//! The tool tables in the README and docs/actions.md are what
//! `pve-mcp tools --markdown` prints from the component's registry, so a
//! tool added, renamed or given other privileges shows in the docs. With
//! `UPDATE_DOCS=1` the test rewrites them instead of failing.

use std::path::Path;

use crate::common::{described_tools, tools_output};

/// The line before the generated tables.
const BEGIN: &str = "<!-- pve-mcp tools --markdown: generated; `UPDATE_DOCS=1 cargo test -p pve-mcp --test e2e tool_docs` rewrites it -->";
/// The line after them.
const END: &str = "<!-- end of pve-mcp tools --markdown -->";

fn generated() -> String {
    String::from_utf8(tools_output("--markdown")).expect("UTF-8")
}

/// `page` with the text between the markers replaced by `tables`, or a
/// message saying which marker is missing.
fn with_tables(page: &str, tables: &str) -> Result<String, String> {
    let (before, rest) = page
        .split_once(BEGIN)
        .ok_or_else(|| format!("no line {BEGIN}"))?;
    let (_, after) = rest
        .split_once(END)
        .ok_or_else(|| format!("no line {END} after the first marker"))?;
    Ok(format!("{before}{BEGIN}\n{tables}{END}{after}"))
}

#[test]
fn the_readme_and_the_actions_page_hold_the_generated_tool_tables() {
    let tables = generated();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let update = std::env::var_os("UPDATE_DOCS").is_some();
    let mut stale = Vec::new();
    for doc in ["README.md", "docs/actions.md"] {
        let path = root.join(doc);
        let page = std::fs::read_to_string(&path).expect(doc);
        let fresh = with_tables(&page, &tables).unwrap_or_else(|e| panic!("{doc}: {e}"));
        if fresh != page {
            if update {
                std::fs::write(&path, fresh).expect(doc);
            } else {
                stale.push(doc);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} do not hold what `pve-mcp tools --markdown` prints; run \
         `UPDATE_DOCS=1 cargo test -p pve-mcp --test e2e tool_docs` and commit the result"
    );
}

/// The tables name every tool once, with the tier, the reads and the
/// privileges its description carries.
#[test]
fn the_tables_name_every_tool_with_its_tier_reads_and_privileges() {
    let tables = generated();
    for tool in described_tools() {
        let name = tool["name"].as_str().unwrap();
        let rows: Vec<&str> = tables
            .lines()
            .filter(|l| l.starts_with(&format!("| `{name}` |")))
            .collect();
        assert_eq!(rows.len(), 1, "{name}: {tables}");
        let tier = tool["tier"].as_str().unwrap();
        // A write some of whose calls are destructive says which arguments
        // make them so.
        let raised: Vec<&str> = tool["destructive_with"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(serde_json::Value::as_str)
            .collect();
        let shown = match raised.is_empty() {
            true => tier.to_string(),
            false => format!("{tier}; destructive with {}", raised.join(", ")),
        };
        if tier != "read" {
            assert!(rows[0].ends_with(&format!("| {shown} |")), "{}", rows[0]);
        }
        for read in tool["reads"].as_array().unwrap() {
            let read = read.as_str().unwrap();
            assert!(
                rows[0].contains(&format!("`GET {read}`")),
                "{name}: {}",
                rows[0]
            );
        }
        for privilege in tool["privileges"].as_array().unwrap() {
            for any in privilege["any_of"].as_array().unwrap() {
                let any = any.as_str().unwrap();
                assert!(rows[0].contains(&format!("`{any}`")), "{name}: {}", rows[0]);
            }
        }
    }
}
