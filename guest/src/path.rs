//! Building Proxmox API paths safely.
//!
//! Literal segments are `'static` strings written in the code; every
//! segment that comes from an argument or a response (node, vmid, storage,
//! UPID, ...) goes through [`ApiPath::seg`], which percent-encodes it, so a
//! value can never add a path segment, a query or a fragment of its own.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Characters left as they are: RFC 3986 "unreserved". Everything else,
/// including `/ ? # % : @ !`, is encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The API prefix the component appends to an endpoint's base URL.
pub const API_PREFIX: &str = "/api2/json";

/// A path below `/api2/json`, e.g. `/nodes/pve1/qemu/101/status/current`,
/// with an optional query string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiPath {
    path: String,
    query: String,
}

impl ApiPath {
    /// Starts a path with one literal segment, e.g. `ApiPath::new("nodes")`.
    pub fn new(first: &'static str) -> Self {
        ApiPath {
            path: String::new(),
            query: String::new(),
        }
        .lit(first)
    }

    /// Appends a literal segment written in the code.
    pub fn lit(mut self, segment: &'static str) -> Self {
        debug_assert!(!segment.is_empty() && !segment.contains(['/', '?', '#', '%']));
        self.path.push('/');
        self.path.push_str(segment);
        self
    }

    /// The root, `/`, to append segments to: for a path that comes whole
    /// from an argument (`pve_api_request`), each segment through
    /// [`ApiPath::seg`].
    pub fn root() -> Self {
        ApiPath {
            path: String::new(),
            query: String::new(),
        }
    }

    /// Appends a segment taken from an argument or a response,
    /// percent-encoded.
    pub fn seg(mut self, value: &str) -> Self {
        self.path.push('/');
        if value.is_empty() || value == "." || value == ".." {
            // A dot segment would be resolved away and an empty one (`//`)
            // may be collapsed by a server, either way addressing another
            // resource. Encode dots, and send an empty value as a single
            // space that no Proxmox identifier accepts. Validation rejects
            // these before we get here; this is the second line.
            if value.is_empty() {
                self.path.push_str("%20");
            } else {
                self.path.push_str(&value.replace('.', "%2E"));
            }
        } else {
            self.path.extend(utf8_percent_encode(value, SEGMENT));
        }
        self
    }

    /// Appends an integer segment such as a vmid.
    pub fn id(self, value: impl Into<u64>) -> Self {
        self.seg(&value.into().to_string())
    }

    /// Adds a query parameter; both key and value are encoded.
    pub fn query(mut self, key: &str, value: &str) -> Self {
        self.query
            .push(if self.query.is_empty() { '?' } else { '&' });
        self.query.extend(utf8_percent_encode(key, SEGMENT));
        self.query.push('=');
        self.query.extend(utf8_percent_encode(value, SEGMENT));
        self
    }

    /// The path without the query, e.g. `/cluster/resources`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The path with the query under [`API_PREFIX`], as it goes on the
    /// wire: `/api2/json/cluster/resources?type=vm`.
    pub fn full(&self) -> String {
        format!("{API_PREFIX}{}{}", self.path, self.query)
    }

    /// The path with the query, e.g. `/cluster/resources?type=vm`.
    pub fn to_path_and_query(&self) -> String {
        format!("{}{}", self.path, self.query)
    }
}

impl std::fmt::Display for ApiPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.path, self.query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_and_encoded_segments() {
        let p = ApiPath::new("nodes")
            .seg("pve1")
            .lit("qemu")
            .id(101u32)
            .lit("status")
            .lit("current");
        assert_eq!(p.to_string(), "/nodes/pve1/qemu/101/status/current");
        assert_eq!(p.path(), "/nodes/pve1/qemu/101/status/current");
    }

    #[test]
    fn hostile_segments_stay_one_segment() {
        let p = ApiPath::new("nodes").seg("a/../b?x=1#f");
        assert_eq!(p.to_string(), "/nodes/a%2F..%2Fb%3Fx%3D1%23f");
        assert_eq!(ApiPath::new("nodes").seg("..").to_string(), "/nodes/%2E%2E");
        assert_eq!(ApiPath::new("nodes").seg(".").to_string(), "/nodes/%2E");
        assert_eq!(ApiPath::new("nodes").seg("").to_string(), "/nodes/%20");
        assert_eq!(
            ApiPath::new("nodes").seg("100%").to_string(),
            "/nodes/100%25"
        );
        assert_eq!(
            ApiPath::new("nodes").seg("pve 1").to_string(),
            "/nodes/pve%201"
        );
    }

    #[test]
    fn upids_and_storage_ids_are_encoded() {
        let upid = "UPID:pve1:0020C066:042DF204:69C26EB0:vzdump::root@pam!tok:";
        let p = ApiPath::new("nodes")
            .seg("pve1")
            .lit("tasks")
            .seg(upid)
            .lit("status");
        assert_eq!(
            p.to_string(),
            "/nodes/pve1/tasks/UPID%3Apve1%3A0020C066%3A042DF204%3A69C26EB0%3Avzdump%3A%3Aroot%40pam%21tok%3A/status"
        );
        assert_eq!(
            ApiPath::new("storage").seg("local.backup-1").to_string(),
            "/storage/local.backup-1"
        );
    }

    #[test]
    fn queries_are_encoded() {
        let p = ApiPath::new("cluster").lit("resources").query("type", "vm");
        assert_eq!(p.to_string(), "/cluster/resources?type=vm");
        assert_eq!(p.path(), "/cluster/resources");
        let p = ApiPath::new("x").query("a", "1&b=2").query("c", "é");
        assert_eq!(p.to_path_and_query(), "/x?a=1%26b%3D2&c=%C3%A9");
    }
}
