//! `pve_get_version`: the Proxmox VE version from `GET /version`.

use serde_json::{Value, json};

use super::{Annotations, Output, Tool};
use crate::api::Pve;
use crate::args::Args;
use crate::error::ToolError;
use crate::fetch;
use crate::json as pj;
use crate::path::ApiPath;
use crate::schema;

/// The tool.
pub static TOOL: Tool = Tool {
    name: "pve_get_version",
    title: "Get Proxmox VE version",
    description: "Get the Proxmox VE version of the node that answers the API (pve-manager \
        version, point release, git revision, default console). Use it to check that the \
        server is reachable and the token works, or before relying on a feature that depends \
        on the PVE version. Any valid API token may call it.",
    input_schema,
    output_schema,
    annotations: Annotations::READ_ONLY,
    run,
};

fn input_schema() -> Value {
    schema::input(&[], &[])
}

fn output_schema() -> Value {
    let n = schema::nullable;
    schema::object(
        "",
        &[
            (
                "version",
                n(
                    "string",
                    "Full pve-manager version, e.g. 8.4.1; null if not reported",
                ),
            ),
            (
                "release",
                n(
                    "string",
                    "Point release x.y, e.g. 8.4; null if not reported",
                ),
            ),
            (
                "repoid",
                n(
                    "string",
                    "Short git revision of the build; null if not reported",
                ),
            ),
            (
                "console",
                n(
                    "string",
                    "Default console viewer (applet, vv, html5, xtermjs); null if not set",
                ),
            ),
        ],
    )
}

fn run(pve: &mut dyn Pve, _args: &Args) -> Result<Output, ToolError> {
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
    Ok(Output {
        structured: json!({
            "version": version,
            "release": release,
            "repoid": repoid,
            "console": pj::text(d.get("console")),
        }),
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;

    fn call(data: Value) -> Output {
        let mut pve = FakePve::default().with("/version", data);
        let out = TOOL.call(&mut pve, "{}").unwrap();
        crate::tools::testing::assert_valid_output(&TOOL, &out);
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
