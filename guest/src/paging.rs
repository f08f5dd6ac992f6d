//! Bounded lists: `limit`/`offset` arguments and the page facts every list
//! tool reports (`total`, `returned`, `omitted`, `offset`, `limit`,
//! `next_offset`).
//!
//! Use in a tool:
//! ```ignore
//! // input schema
//! let mut props = vec![/* the tool's own */];
//! props.extend(paging::input_properties(50, 500, "backups"));
//! // output schema
//! let mut out = vec![("backups", /* array */)];
//! out.extend(paging::output_properties());
//! // run: validate first, then fetch, filter, sort, then
//! let page = Page::from_args(args, 50, 500)?;
//! let (items, info) = paging::paginate(all, page);
//! let mut structured = json!({ "backups": items });
//! info.insert_into(&mut structured);
//! // summary: format!("{} backups; {}", info.total, info.describe())
//! ```

use serde_json::{Value, json};

use crate::args::Args;
use crate::error::ToolError;

/// Largest `offset` accepted; far beyond any real list.
pub const OFFSET_MAX: u64 = 10_000_000;

/// A validated `limit`/`offset` pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Most items to return, `1..=max`.
    pub limit: u64,
    /// Items to skip first.
    pub offset: u64,
}

impl Page {
    /// Reads `limit` (default `default`, `1..=max`) and `offset` (default 0).
    pub fn from_args(args: &Args, default: u64, max: u64) -> Result<Page, ToolError> {
        Ok(Page {
            limit: args.integer("limit", 1, max, default)?.unwrap_or(default),
            offset: args.integer("offset", 0, OFFSET_MAX, 0)?.unwrap_or(0),
        })
    }
}

/// What a page holds relative to the whole (filtered) list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageInfo {
    /// Items in the whole list (after filters).
    pub total: usize,
    /// Items in this page.
    pub returned: usize,
    /// Items not in this page (`total - returned`).
    pub omitted: usize,
    /// The offset applied.
    pub offset: u64,
    /// The limit applied.
    pub limit: u64,
    /// The offset of the next page; `None` if this page reaches the end.
    pub next_offset: Option<u64>,
}

/// Cuts one page out of `items` (already filtered and sorted).
pub fn paginate<T>(items: Vec<T>, page: Page) -> (Vec<T>, PageInfo) {
    let total = items.len();
    let start = usize::try_from(page.offset)
        .unwrap_or(usize::MAX)
        .min(total);
    let take = usize::try_from(page.limit).unwrap_or(usize::MAX);
    let out: Vec<T> = items.into_iter().skip(start).take(take).collect();
    let end = start + out.len();
    let info = PageInfo {
        total,
        returned: out.len(),
        omitted: total - out.len(),
        offset: page.offset,
        limit: page.limit,
        next_offset: (end < total).then_some(end as u64),
    };
    (out, info)
}

impl PageInfo {
    /// Adds the page fields ([`output_properties`]) to a JSON object.
    pub fn insert_into(&self, structured: &mut Value) {
        if let Value::Object(o) = structured {
            o.insert("total".into(), self.total.into());
            o.insert("returned".into(), self.returned.into());
            o.insert("omitted".into(), self.omitted.into());
            o.insert("offset".into(), self.offset.into());
            o.insert("limit".into(), self.limit.into());
            o.insert("next_offset".into(), json!(self.next_offset));
        }
    }

    /// `showing 1-50 of 120; pass offset 50 for more` (or `showing all 3`,
    /// `none at offset 200 (total 120)`), for summaries.
    pub fn describe(&self) -> String {
        if self.returned == 0 {
            return if self.total == 0 {
                "none".to_owned()
            } else {
                format!(
                    "none at offset {} (total {}); use a smaller offset",
                    self.offset, self.total
                )
            };
        }
        if self.returned == self.total {
            return format!("showing all {}", self.total);
        }
        let first = self.offset + 1;
        let last = self.offset + self.returned as u64;
        let more = match self.next_offset {
            Some(n) => format!("; pass offset {n} for more"),
            None => String::new(),
        };
        format!("showing {first}-{last} of {}{more}", self.total)
    }
}

/// The `limit` and `offset` input properties; `noun` names the items.
pub fn input_properties(default: u64, max: u64, noun: &str) -> Vec<(&'static str, Value)> {
    vec![
        (
            "limit",
            json!({
                "type": "integer", "minimum": 1, "maximum": max, "default": default,
                "description": format!(
                    "Most {noun} to return (default {default}, max {max}); total still counts all matches."
                ),
            }),
        ),
        (
            "offset",
            json!({
                "type": "integer", "minimum": 0, "maximum": OFFSET_MAX, "default": 0,
                "description": format!(
                    "Skip this many {noun} first (default 0); pass the previous answer's next_offset to page on."
                ),
            }),
        ),
    ]
}

/// The output properties [`PageInfo::insert_into`] writes.
pub fn output_properties() -> Vec<(&'static str, Value)> {
    let count = |d: &str| json!({"type": "integer", "minimum": 0, "description": d});
    vec![
        ("total", count("Number of matching items, over all pages")),
        ("returned", count("Number of items in this answer")),
        (
            "omitted",
            count("Matching items not in this answer (total - returned)"),
        ),
        ("offset", count("The offset applied")),
        (
            "limit",
            json!({"type": "integer", "minimum": 1, "description": "The limit applied"}),
        ),
        (
            "next_offset",
            json!({"type": ["integer", "null"], "minimum": 0,
                "description": "Offset of the next page; null if this answer reaches the end"}),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(limit: u64, offset: u64) -> Page {
        Page { limit, offset }
    }

    #[test]
    fn pages_through_a_list() {
        let items: Vec<u32> = (0..7).collect();
        let (p, i) = paginate(items.clone(), page(3, 0));
        assert_eq!(p, [0, 1, 2]);
        assert_eq!(
            (i.total, i.returned, i.omitted, i.next_offset),
            (7, 3, 4, Some(3))
        );
        assert_eq!(i.describe(), "showing 1-3 of 7; pass offset 3 for more");
        let (p, i) = paginate(items.clone(), page(3, 6));
        assert_eq!(p, [6]);
        assert_eq!(i.next_offset, None);
        assert_eq!(i.describe(), "showing 7-7 of 7");
        let (p, i) = paginate(items.clone(), page(10, 0));
        assert_eq!(p.len(), 7);
        assert_eq!(i.describe(), "showing all 7");
        let (p, i) = paginate(items, page(3, 100));
        assert!(p.is_empty());
        assert_eq!((i.omitted, i.next_offset), (7, None));
        assert!(i.describe().starts_with("none at offset 100"));
        let (_, i) = paginate(Vec::<u8>::new(), page(3, 0));
        assert_eq!(i.describe(), "none");
    }

    #[test]
    fn arguments() {
        let args = |t: &str| Args::parse(t, &["limit", "offset"]).unwrap();
        assert_eq!(Page::from_args(&args("{}"), 50, 500), Ok(page(50, 0)));
        assert_eq!(
            Page::from_args(&args(r#"{"limit": 500, "offset": 7}"#), 50, 500),
            Ok(page(500, 7))
        );
        assert!(Page::from_args(&args(r#"{"limit": 501}"#), 50, 500).is_err());
        assert!(Page::from_args(&args(r#"{"limit": 0}"#), 50, 500).is_err());
        assert!(Page::from_args(&args(r#"{"offset": -1}"#), 50, 500).is_err());
    }

    #[test]
    fn json_fields_match_the_schema() {
        let (_, info) = paginate(vec![1, 2, 3], page(2, 0));
        let mut v = json!({});
        info.insert_into(&mut v);
        let props = output_properties();
        let schema = crate::schema::object("", &props);
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        assert!(validator.is_valid(&v), "{v}");
        assert_eq!(v["next_offset"], 2);
    }
}
