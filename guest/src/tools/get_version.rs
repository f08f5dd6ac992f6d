//! `pve_get_version`: the Proxmox VE version from `GET /version`.

use serde::Serialize;

use crate::tool::{Answer, NoArguments, Tool, read_tool};
use crate::api::Pve;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_version",
    title: "Get Proxmox VE version",
    description: "The Proxmox VE version. Use it to check that the server is reachable and the \
        token works.",
    reads: ["/version"],
    privileges: [],
    run: run,
};

/// The version of the node that answered.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Version {
    /// Full pve-manager version, e.g. 8.4.1; null if not reported
    pub version: Option<String>,
    /// Point release x.y, e.g. 8.4; null if not reported
    pub release: Option<String>,
    /// Short git revision of the build; null if not reported
    pub repoid: Option<String>,
    /// Default console viewer (applet, vv, html5, xtermjs); null if not set
    pub console: Option<String>,
}

fn run(pve: &mut dyn Pve, _: NoArguments) -> Result<Answer<Version>, ToolError> {
    let d = fetch::object(pve, &ApiPath::new("version"))?;
    let version = pj::text(d.get("version"));
    let release = pj::text(d.get("release"));
    let repoid = pj::text(d.get("repoid"));
    let summary = match (&version, &release) {
        (Some(v), Some(r)) => format!("Proxmox VE {v} (release {r})."),
        (Some(v), None) => format!("Proxmox VE {v}."),
        (None, Some(r)) => format!("Proxmox VE release {r}."),
        (None, None) => "Proxmox VE answered, but reported no version.".to_owned(),
    };
    Ok(Answer {
        structured: Version {
            version,
            release,
            repoid,
            console: pj::text(d.get("console")),
        },
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::Output;
    use serde_json::{Value, json};

    fn call(data: Value) -> Output {
        let mut pve = FakePve::default().with("/version", data);
        let out = TOOL.call(&mut pve, "{}").unwrap();
        crate::tool::testing::assert_valid_output(&TOOL, &out);
        assert_eq!(pve.requests, ["/version"]);
        out
    }

    #[test]
    fn pve8_and_pve7_shapes() {
        let out = call(
            json!({"version":"8.4.1","release":"8.4","repoid":"2a5fa54a8503f96d","console":"xtermjs"}),
        );
        assert_eq!(
            out.structured,
            json!({"version":"8.4.1","release":"8.4","repoid":"2a5fa54a8503f96d","console":"xtermjs"})
        );
        assert_eq!(out.summary, "Proxmox VE 8.4.1 (release 8.4).");
        let out = call(json!({"version":"7.2-3","release":"7.2","repoid":"c743d6c1"}));
        assert_eq!(out.structured["console"], Value::Null);
    }

    #[test]
    fn wrong_shape_is_upstream() {
        let mut pve = FakePve::default().with("/version", json!("8.4"));
        let e = TOOL.call(&mut pve, "{}").unwrap_err();
        assert!(matches!(e, ToolError::Upstream(_)), "{e:?}");
    }
}
