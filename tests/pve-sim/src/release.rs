//! Which Proxmox VE release a node runs: the `pve-manager` version that
//! `/version` and a node's `pveversion` report, and what the handlers ask
//! of it (PVE 8 or 9, nested pools since 8.1, ...).
//!
//! A cluster has one release ([`crate::state::Cluster::release`]: 9.1.5
//! for the primary seed, 8.4.14 for the secondary); the nodes listed in
//! [`crate::SimConfig::pve8_nodes`] run [`PVE8_VERSION`] in a PVE 9
//! cluster (mid-upgrade); [`crate::SimConfig::pve_version`] replaces the
//! cluster's release on every node.

use crate::digests::{hex, sha1};

/// The PVE 8 release nodes of [`crate::SimConfig::pve8_nodes`] run (the
/// last PVE 8 point release).
pub const PVE8_VERSION: &str = "8.4.14";

/// A `pve-manager` version and what it is reported with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Release {
    /// `9.1.5`.
    pub version: String,
    /// `9.1`.
    pub release: String,
    /// The git commit the package was built from (16 hex digits).
    pub repoid: String,
}

impl Release {
    /// A release with its repoid; known ones keep the seed's.
    pub fn new(version: &str) -> Release {
        let repoid = match version {
            "9.1.5" => "8f3a5c1e7b2d9046".to_string(),
            "9.2.3" => "4f6e0ac86f9e8c7f".to_string(),
            "8.4.14" => "b502d23c55afcba1".to_string(),
            v => hex(&sha1(format!("pve-manager {v}").as_bytes()))[..16].to_string(),
        };
        let release = version.splitn(3, '.').take(2).collect::<Vec<_>>().join(".");
        Release {
            version: version.to_string(),
            release,
            repoid,
        }
    }

    /// `(major, minor)`; unparsable parts count as 0.
    pub fn major_minor(&self) -> (u32, u32) {
        let mut it = self.version.split('.').map(|p| p.parse().unwrap_or(0));
        (it.next().unwrap_or(0), it.next().unwrap_or(0))
    }

    pub fn major(&self) -> u32 {
        self.major_minor().0
    }

    /// Whether this is `major.minor` or newer.
    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        self.major_minor() >= (major, minor)
    }

    /// `pve-manager/<version>/<repoid>`, as node status and `pveversion`
    /// print it.
    pub fn manager_text(&self) -> String {
        format!("pve-manager/{}/{}", self.version, self.repoid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_their_parts() {
        let r = Release::new("9.1.5");
        assert_eq!(
            (r.release.as_str(), r.repoid.as_str()),
            ("9.1", "8f3a5c1e7b2d9046")
        );
        assert!(r.at_least(9, 0) && r.at_least(8, 1) && !r.at_least(9, 2));
        let old = Release::new("8.0.9");
        assert_eq!((old.major(), old.release.as_str()), (8, "8.0"));
        assert!(!old.at_least(8, 1));
        assert_eq!(old.repoid.len(), 16);
        assert_eq!(
            Release::new(PVE8_VERSION).manager_text(),
            "pve-manager/8.4.14/b502d23c55afcba1"
        );
    }
}
