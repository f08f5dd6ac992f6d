//! Which configured Proxmox cluster a call talks to.
//!
//! The host passes the clusters it lets this call reach as
//! `call-context.endpoints`, the first being the default. Every tool takes
//! an optional `cluster` argument naming one of them; the registry
//! ([`crate::tool::Tool::parse`]; its schema is added to every tool's in
//! `schemas.rs`) strips it before the tool runs and
//! `lib.rs` picks the endpoint with [`select`], so tools never see it.

use crate::error::{ToolError, quoted};

/// The argument every tool accepts.
pub const ARG: &str = "cluster";
/// Longest cluster name we accept in the argument.
pub const NAME_MAX: usize = 128;

/// One Proxmox VE API endpoint the host lets this call reach. Never holds
/// credentials: the host adds them to requests it lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The name the host knows the cluster by, e.g. `default` or `lab`.
    pub name: String,
    /// Base URL without the API prefix, e.g. `https://pve1.example:8006`.
    pub base_url: String,
}

/// The index of the endpoint a call asked for: `wanted` by name (exact, or
/// case-insensitive when that is unambiguous), else the first. `Ok(None)`
/// only when there are no endpoints and none was asked for; the client
/// then fails at its first request, so argument errors still come first.
pub fn select(endpoints: &[Endpoint], wanted: Option<&str>) -> Result<Option<usize>, ToolError> {
    let Some(wanted) = wanted else {
        return Ok((!endpoints.is_empty()).then_some(0));
    };
    if let Some(i) = endpoints.iter().position(|e| e.name == wanted) {
        return Ok(Some(i));
    }
    let folded: Vec<usize> = endpoints
        .iter()
        .enumerate()
        .filter(|(_, e)| e.name.eq_ignore_ascii_case(wanted))
        .map(|(i, _)| i)
        .collect();
    if let [i] = folded[..] {
        return Ok(Some(i));
    }
    let valid = if endpoints.is_empty() {
        "the host configured no clusters for this call".to_owned()
    } else {
        format!(
            "valid clusters are {} (default {})",
            endpoints
                .iter()
                .map(|e| quoted(&e.name, 64))
                .collect::<Vec<_>>()
                .join(", "),
            quoted(&endpoints[0].name, 64)
        )
    };
    Err(ToolError::field(
        ARG,
        format!(
            "no configured cluster is called {}; {valid}. Omit cluster to use the default.",
            quoted(wanted, 64)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eps(names: &[&str]) -> Vec<Endpoint> {
        names
            .iter()
            .map(|n| Endpoint {
                name: (*n).to_owned(),
                base_url: format!("https://{n}:8006"),
            })
            .collect()
    }

    #[test]
    fn default_is_the_first() {
        assert_eq!(select(&eps(&["a", "b"]), None), Ok(Some(0)));
        assert_eq!(select(&[], None), Ok(None));
    }

    #[test]
    fn by_name() {
        assert_eq!(select(&eps(&["a", "lab"]), Some("lab")), Ok(Some(1)));
        assert_eq!(select(&eps(&["a", "Lab"]), Some("lab")), Ok(Some(1)));
        // Exact wins over case-folded.
        assert_eq!(select(&eps(&["LAB", "lab"]), Some("lab")), Ok(Some(1)));
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let e = select(&eps(&["prod", "lab"]), Some("dev")).unwrap_err();
        assert_eq!(
            e,
            ToolError::InvalidArguments(
                "cluster: no configured cluster is called \"dev\"; valid clusters are \
                 \"prod\", \"lab\" (default \"prod\"). Omit cluster to use the default."
                    .into()
            )
        );
        let e = select(&[], Some("x")).unwrap_err();
        assert!(e.message().contains("configured no clusters"), "{e}");
        // Ambiguous case-folding is not guessed.
        assert!(select(&eps(&["LAB", "Lab"]), Some("lab")).is_err());
    }
}
