//! One entry of a storage's content list (`GET /nodes/{node}/storage/
//! {storage}/content`), read the one way every tool that lists volumes
//! reads it: the size and owner as numbers whatever the wire's type, the
//! notes' first line, `protected` as a flag and the last verification's
//! state out of its object.

use serde_json::{Map, Value};

use crate::format;
use crate::json as pj;

/// What an entry says, each field `None` when Proxmox left it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentEntry {
    /// Volume id, e.g. `local:iso/debian-12.iso`.
    pub volid: String,
    /// Content type: `iso`, `vztmpl`, `images`, `backup`, ...
    pub content: Option<String>,
    /// Format: `iso`, `raw`, `vma.zst`, `pbs-vm`, ...
    pub format: Option<String>,
    /// Size in bytes.
    pub size: Option<u64>,
    /// The owning guest.
    pub vmid: Option<u64>,
    /// Creation time, seconds since the epoch.
    pub ctime: Option<u64>,
    /// The notes' first line, when it is not empty.
    pub notes: Option<String>,
    /// Protected from removal (and, for backups, from pruning).
    pub protected: bool,
    /// The last verification's state (`ok`, `failed`; PBS).
    pub verification: Option<String>,
}

impl ContentEntry {
    /// Reads an entry; `None` without a volid, which names nothing.
    pub fn read(e: &Map<String, Value>) -> Option<ContentEntry> {
        Some(ContentEntry {
            volid: pj::text(e.get("volid"))?,
            content: pj::text(e.get("content")),
            format: pj::text(e.get("format")),
            size: pj::uint(e.get("size")),
            vmid: pj::uint(e.get("vmid")),
            ctime: pj::uint(e.get("ctime")),
            notes: pj::text(e.get("notes"))
                .and_then(|n| n.lines().next().map(str::to_owned))
                .filter(|n| !n.is_empty()),
            protected: pj::flag(e.get("protected")),
            verification: e
                .get("verification")
                .and_then(Value::as_object)
                .and_then(|v| pj::text(v.get("state"))),
        })
    }

    /// The size in binary units.
    pub fn size_human(&self) -> Option<String> {
        self.size.map(format::bytes)
    }

    /// The creation time, ISO-8601 UTC.
    pub fn created(&self) -> Option<String> {
        self.ctime.map(|t| format::iso_utc(t as i64))
    }
}
