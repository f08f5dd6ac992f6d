//! Who may do what: identities, ACLs and PVE's permission checks.

/// An ACL entry: privileges on a path, optionally inherited by sub-paths.
#[derive(Debug, Clone)]
pub(crate) struct AclEntry {
    pub path: String,
    pub privs: Vec<&'static str>,
    pub propagate: bool,
}

/// A principal's effective permissions.
#[derive(Debug, Clone)]
pub(crate) enum Acl {
    /// `root@pam` (and its non-privsep tokens): everything everywhere.
    Root,
    Entries(Vec<AclEntry>),
}

impl Acl {
    pub fn has(&self, path: &str, privilege: &str) -> bool {
        match self {
            Acl::Root => true,
            Acl::Entries(entries) => entries.iter().any(|e| {
                e.privs.contains(&privilege)
                    && (e.path == path || (e.propagate && covers(&e.path, path)))
            }),
        }
    }
}

/// The operator token's ACL: reads everything and may power and snapshot
/// guests, on `/` and below; nothing that creates, deletes or reconfigures.
pub(crate) fn operator_acl() -> Acl {
    Acl::Entries(vec![AclEntry {
        path: "/".into(),
        privs: vec![
            "VM.Audit",
            "Sys.Audit",
            "Datastore.Audit",
            "VM.PowerMgmt",
            "VM.Snapshot",
        ],
        propagate: true,
    }])
}

fn covers(parent: &str, path: &str) -> bool {
    parent == "/"
        || path
            .strip_prefix(parent)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// `user@realm`.
    pub userid: String,
    /// Token name when authenticated by API token.
    pub tokenid: Option<String>,
    pub acl: Acl,
}

impl Identity {
    pub fn can(&self, path: &str, privilege: &str) -> bool {
        self.acl.has(path, privilege)
    }
}

/// A method's `permissions` declaration.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Perm {
    /// `user => 'world'`: no authentication needed.
    World,
    /// `user => 'all'`: any authenticated user; handlers filter.
    All,
    /// `check => ['perm', path, [privs], any => any]`; `{param}` in the path
    /// is replaced with the request's parameter.
    Check {
        path: &'static str,
        privs: &'static [&'static str],
        any: bool,
    },
}

impl Perm {
    pub const fn check(path: &'static str, privs: &'static [&'static str]) -> Perm {
        Perm::Check {
            path,
            privs,
            any: false,
        }
    }

    /// `check => ['perm', path, [privs], any => 1]`.
    pub const fn check_any(path: &'static str, privs: &'static [&'static str]) -> Perm {
        Perm::Check {
            path,
            privs,
            any: true,
        }
    }
}

/// Applies a `Check` like PVE's `check_api2_permissions`: the message names
/// the first missing privilege, or all of them joined by `|` for `any`.
pub(crate) fn check(
    perm: Perm,
    ident: &Identity,
    param: impl Fn(&str) -> String,
) -> Result<(), (String, String)> {
    let Perm::Check { path, privs, any } = perm else {
        return Ok(());
    };
    let path = expand(path, param);
    if any {
        if privs.iter().any(|p| ident.can(&path, p)) {
            return Ok(());
        }
        return Err((path, privs.join("|")));
    }
    match privs.iter().find(|p| !ident.can(&path, p)) {
        None => Ok(()),
        Some(p) => Err((path, p.to_string())),
    }
}

fn expand(template: &str, param: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(template.len() + 8);
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        match rest[start..].find('}') {
            Some(end) => {
                out.push_str(&param(&rest[start + 1..start + end]));
                rest = &rest[start + end + 1..];
            }
            None => {
                rest = &rest[start..];
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_paths_and_messages() {
        let ident = Identity {
            userid: "auditor@pve".into(),
            tokenid: Some("mcp".into()),
            acl: Acl::Entries(vec![AclEntry {
                path: "/vms/100".into(),
                privs: vec!["VM.Audit"],
                propagate: true,
            }]),
        };
        assert!(ident.can("/vms/100", "VM.Audit"));
        assert!(!ident.can("/vms/1000", "VM.Audit"));
        assert!(!ident.can("/vms/100", "VM.PowerMgmt"));
        let p = Perm::check("/vms/{vmid}", &["VM.Audit"]);
        fn vmid(v: &str) -> impl Fn(&str) -> String + '_ {
            move |_| v.to_string()
        }
        assert!(check(p, &ident, vmid("100")).is_ok());
        assert_eq!(
            check(p, &ident, vmid("102")),
            Err(("/vms/102".to_string(), "VM.Audit".to_string()))
        );
        let any = Perm::Check {
            path: "/",
            privs: &["Sys.Audit", "Sys.Modify"],
            any: true,
        };
        assert_eq!(
            check(any, &ident, vmid("x")).unwrap_err().1,
            "Sys.Audit|Sys.Modify"
        );
    }
}
