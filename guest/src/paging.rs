//! Bounded lists: `limit`/`offset` arguments and the page facts every list
//! tool reports (`total`, `returned`, `omitted`, `offset`, `limit`,
//! `next_offset`).
//!
//! Use in a tool:
//! ```ignore
//! // input: two fields; their types describe them in the schema, with
//! // the default and maximum
//! #[serde(default)]
//! limit: Limit<50, 500>,
//! #[serde(default)]
//! offset: Offset,
//! // output: the page facts beside the items
//! #[serde(flatten)]
//! page: PageInfo,
//! // run: validate first, then fetch, filter, sort, then
//! let (items, page) = paging::paginate(all, Page::new(input.limit, input.offset));
//! // summary: format!("{} backups; {}", page.total, page.describe())
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use crate::arg;

/// Largest `offset` accepted; far beyond any real list.
pub const OFFSET_MAX: u64 = 10_000_000;

/// The `limit` argument: most items to return, `1..=MAX`, `DEFAULT` when
/// absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit<const DEFAULT: u64, const MAX: u64>(pub u64);

impl<const DEFAULT: u64, const MAX: u64> Default for Limit<DEFAULT, MAX> {
    fn default() -> Self {
        Limit(DEFAULT)
    }
}

impl<'de, const DEFAULT: u64, const MAX: u64> Deserialize<'de> for Limit<DEFAULT, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        arg::read(d, |v| match v {
            serde_json::Value::Null => Ok(Limit(DEFAULT)),
            v => arg::integer(v, 1, MAX, DEFAULT).map(Limit),
        })
    }
}

#[cfg(test)]
impl<const DEFAULT: u64, const MAX: u64> schemars::JsonSchema for Limit<DEFAULT, MAX> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Limit{DEFAULT}of{MAX}").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let description = "Page size; total counts all";
        schemars::json_schema!({
            "type": "integer", "minimum": 1, "maximum": MAX, "default": DEFAULT,
            "description": description,
        })
    }
}

/// The `offset` argument: items to skip first, 0 when absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offset(pub u64);

impl<'de> Deserialize<'de> for Offset {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        arg::read(d, |v| match v {
            serde_json::Value::Null => Ok(Offset(0)),
            v => arg::integer(v, 0, OFFSET_MAX, 0).map(Offset),
        })
    }
}

arg::fixed_schema!(
    Offset,
    serde_json::json!({
        "type": "integer", "minimum": 0, "maximum": OFFSET_MAX, "default": 0,
        "description": "Items to skip (next_offset)",
    })
);

/// The input of a tool whose only arguments are `limit` and `offset`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PageArgs<const DEFAULT: u64, const MAX: u64> {
    #[serde(default)]
    limit: Limit<DEFAULT, MAX>,
    #[serde(default)]
    offset: Offset,
}

impl<const DEFAULT: u64, const MAX: u64> PageArgs<DEFAULT, MAX> {
    /// The page asked for.
    pub fn page(&self) -> Page {
        Page::new(self.limit, self.offset)
    }
}

/// A validated `limit`/`offset` pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Most items to return, `1..=max`.
    pub limit: u64,
    /// Items to skip first.
    pub offset: u64,
}

impl Page {
    /// The page a tool's `limit` and `offset` arguments ask for.
    pub fn new<const DEFAULT: u64, const MAX: u64>(
        limit: Limit<DEFAULT, MAX>,
        offset: Offset,
    ) -> Page {
        Page {
            limit: limit.0,
            offset: offset.0,
        }
    }
}

/// What a page holds relative to the whole (filtered) list; a list tool's
/// output flattens it in beside the items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct PageInfo {
    /// Number of matching items, over all pages
    pub total: usize,
    /// Number of items in this answer
    pub returned: usize,
    /// Matching items not in this answer (total - returned)
    pub omitted: usize,
    /// The offset applied
    pub offset: u64,
    /// The limit applied
    #[cfg_attr(test, schemars(range(min = 1)))]
    pub limit: u64,
    /// Offset of the next page; null if this answer reaches the end
    pub next_offset: Option<u64>,
}

/// Items per group (status, kind, ...) over all matches, not only the
/// page; a group with no items is left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Counts(pub BTreeMap<String, usize>);

impl Counts {
    /// Counts `items` by `group`.
    pub fn of<'a, T: 'a>(
        items: impl IntoIterator<Item = &'a T>,
        group: impl Fn(&T) -> &str,
    ) -> Counts {
        let mut counts = BTreeMap::new();
        for item in items {
            *counts.entry(group(item).to_owned()).or_default() += 1;
        }
        Counts(counts)
    }
}

arg::fixed_schema!(
    Counts,
    serde_json::json!({"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}})
);

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
        let read = |t: &str| {
            crate::input::typed::<PageArgs<50, 500>>(crate::input::object(t, &["limit", "offset"])?)
                .map(|i| i.page())
        };
        assert_eq!(read("{}"), Ok(page(50, 0)));
        assert_eq!(read(r#"{"limit": 500, "offset": 7}"#), Ok(page(500, 7)));
        assert_eq!(
            read(r#"{"limit": 501}"#).unwrap_err().message(),
            "limit: must be an integer between 1 and 500 (got 501)"
        );
        assert!(read(r#"{"limit": 0}"#).is_err());
        assert!(read(r#"{"offset": -1}"#).is_err());
    }

    #[test]
    fn json_fields() {
        let (_, info) = paginate(vec![1, 2, 3], page(2, 0));
        assert_eq!(
            serde_json::to_value(info).unwrap(),
            serde_json::json!({"total": 3, "returned": 2, "omitted": 1, "offset": 0, "limit": 2, "next_offset": 2})
        );
    }
}
