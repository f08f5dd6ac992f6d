//! The sensitive classes of `pve_api_request`, as docs/actions.md lists
//! them for operators, are the ones the host enforces: every class in
//! `route::sensitive::CLASSES` has its row, in order, and no row names a
//! class that does not exist (a policy naming it would be refused).

use pve_mcp::route::sensitive::CLASSES;

#[test]
fn the_docs_list_every_sensitive_class_in_order() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/actions.md"))
        .expect("docs/actions.md");
    let (_, table) = page
        .split_once("<!-- sensitive-classes:")
        .expect("the marker before the table of sensitive classes");
    let documented: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|row| row.split('`').nth(1))
        .collect();
    let enforced: Vec<&str> = CLASSES.iter().map(|c| c.name).collect();
    assert_eq!(
        documented, enforced,
        "docs/actions.md's table of sensitive classes"
    );
}
