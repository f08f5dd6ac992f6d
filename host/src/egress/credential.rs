//! Which of a cluster's Proxmox credentials a call carries: its granted
//! tier's (a read call the read token, even when its tool could write),
//! from its caller's credential set when its bearer token names one. The
//! choice is made once, when the call is authorized, and kept in its
//! [`super::Binding`]; every request of the call carries it.

use super::access::Access;
use super::gate::{ClusterIndex, Gate};
use crate::tier::Tier;
use crate::upstream::{CredentialId, NoCredential};

/// The tier whose credential a call carries: read when its grant lets it
/// read only (whatever its tool could do), else its own tier as its
/// arguments make it ([`Tier::of_call`]), never a higher one.
pub fn credential_tier(access: Access, call_tier: Tier) -> Tier {
    match access {
        Access::Read => Tier::Read,
        Access::Write => call_tier,
    }
}

/// The table a cluster's settings live in: `pve` for the default cluster
/// (which only `[pve]` and the environment name "default"), else
/// `clusters.NAME`.
fn section(cluster: &str) -> String {
    if cluster == "default" {
        "pve".to_string()
    } else {
        format!("clusters.{cluster}")
    }
}

impl Gate {
    /// The credential a call of `tier` carries to `cluster`, from the
    /// credential set `set` (its bearer token's `pve_credentials`) or the
    /// cluster's own. The error is the refusal the agent reads: which
    /// credential is missing and what the operator adds.
    pub fn credential(
        &self,
        cluster: ClusterIndex,
        set: Option<&str>,
        tier: Tier,
    ) -> Result<CredentialId, String> {
        let name = self.cluster_name(cluster);
        let table = section(name);
        self.endpoint(cluster)
            .upstream
            .credential(set, tier)
            .map_err(|why| match (why, set) {
                (NoCredential::Set, Some(set)) => format!(
                    "cluster {name} holds no Proxmox credentials for your token (its credential \
                     set {set:?}), so your calls to it are refused. Nothing was sent; the \
                     operator can add [{table}.credential_sets.{set}.read] (and .write, \
                     .destructive as needed)."
                ),
                (_, Some(set)) => format!(
                    "this call needs a {tier} credential, and your token's credential set {set:?} \
                     on cluster {name} has none. Nothing was sent; the operator can add \
                     [{table}.credential_sets.{set}.{tier}], or set fallback = true in \
                     [{table}.credential_sets.{set}] to use a lower tier's token."
                ),
                (_, None) => format!(
                    "this call needs a {tier} credential, and cluster {name} has none. Nothing \
                     was sent; the operator can add [{table}.credentials.{tier}], or set \
                     fallback = true in [{table}.credentials] to use a lower tier's token."
                ),
            })
    }

    /// Whether calls of `tier` from a caller with credential set `set`
    /// have a credential on some cluster: tools no cluster can serve are
    /// not listed.
    pub fn serves(&self, set: Option<&str>, tier: Tier) -> bool {
        self.endpoints()
            .iter()
            .any(|e| e.upstream.credential(set, tier).is_ok())
    }

    /// Who a call's credential is in Proxmox (its token id), for the audit
    /// record; never the secret.
    pub fn identity(&self, cluster: ClusterIndex, credential: CredentialId) -> &str {
        self.endpoint(cluster).upstream.identity(credential)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_grant_carries_the_read_credential_whatever_the_tool() {
        for tier in [Tier::Read, Tier::Write, Tier::Destructive] {
            assert_eq!(credential_tier(Access::Read, tier), Tier::Read);
            assert_eq!(credential_tier(Access::Write, tier), tier);
        }
    }
}
