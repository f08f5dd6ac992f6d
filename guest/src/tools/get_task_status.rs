//! `pve_get_task_status`: one task's state from
//! `/nodes/{node}/tasks/{upid}/status`, with the UPID parsed and validated
//! before the request.

use serde::Deserialize;

use crate::task::{self, TaskStatus, Upid};
use crate::tool::{Answer, Tool, read_tool};
use crate::api::Pve;
use crate::arg::NodeName;
use crate::error::ToolError;
use crate::path::ApiPath;

/// The tool.
pub static TOOL: Tool = read_tool! {
    name: "pve_get_task_status",
    title: "Get task status",
    description: "A task's state by UPID: running or stopped, exit status and outcome. For why it \
        failed use pve_get_task_log.",
    reads: ["/nodes/{node}/tasks/{upid}/status"],
    privileges: [
        "/nodes/{node}": "Sys.Audit",
    ],
    run: run,
};

/// The task to ask about.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    upid: Upid,
    /// Default: the UPID's node
    node: Option<NodeName>,
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<TaskStatus>, ToolError> {
    let node = task::task_node(&input.upid, input.node.as_ref())?;
    let upid = input.upid;
    let path = ApiPath::new("nodes")
        .seg(&node)
        .lit("tasks")
        .seg(&upid.raw)
        .lit("status");
    let data = pve.get(&path)?;
    Ok(task::shape(&upid, &data))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::Output;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const UPID: &str = "UPID:node1:000FF1FD:10F9374C:630D702C:vzdump:110:root@pam:";
    const PATH: &str = "/nodes/node1/tasks/UPID%3Anode1%3A000FF1FD%3A10F9374C%3A630D702C%3Avzdump%3A110%3Aroot%40pam%3A/status";

    fn call(pve: &mut FakePve, args: Value) -> Result<Output, ToolError> {
        TOOL.call(pve, &args.to_string())
    }

    #[test]
    fn stopped_ok() {
        let mut pve = FakePve::default().with(
            PATH,
            json!({"upid":UPID,"starttime":1661825068,"user":"root@pam","type":"vzdump","pstart":284768076,
                "status":"stopped","exitstatus":"OK","pid":1044989,"id":"110","node":"node1"}),
        );
        let out = call(&mut pve, json!({"upid": UPID})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(s["outcome"], "ok");
        assert_eq!(s["status"], "stopped");
        assert_eq!(s["pid"], 1044989);
        assert_eq!(s["id"], "110");
        assert_eq!(s["starttime_iso"], "2022-08-30T02:04:28Z");
        assert_eq!(s["hint"], Value::Null);
        assert!(out.summary.contains("finished OK"), "{}", out.summary);
    }

    #[test]
    fn failed_and_running_and_token() {
        let mut pve = FakePve::default().with(
            PATH,
            json!({"status":"stopped","exitstatus":"VM 110 already running","upid":UPID}),
        );
        let out = call(&mut pve, json!({"upid": UPID, "node": "node1"})).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["outcome"], "error");
        assert!(
            out.structured["hint"]
                .as_str()
                .unwrap()
                .contains("pve_get_task_log")
        );

        let mut pve = FakePve::default().with(PATH, json!({"status":"running","upid":UPID}));
        let out = call(&mut pve, json!({"upid": UPID})).unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(out.structured["outcome"], "running");
        assert_eq!(out.structured["exitstatus"], Value::Null);

        let upid = "UPID:pve1:0020C066:142DF204A:69C26EB0:qmstart::api@pve!ci:";
        let path = "/nodes/pve1/tasks/UPID%3Apve1%3A0020C066%3A142DF204A%3A69C26EB0%3Aqmstart%3A%3Aapi%40pve%21ci%3A/status";
        let mut pve = FakePve::default().with(
            path,
            json!({"status":"stopped","exitstatus":"WARNINGS: 2","tokenid":"ci","user":"api@pve"}),
        );
        let out = call(&mut pve, json!({"upid": upid})).unwrap();
        assert_valid_output(&TOOL, &out);
        let s = &out.structured;
        assert_eq!(
            (s["user"].as_str(), s["tokenid"].as_str()),
            (Some("api@pve"), Some("ci"))
        );
        assert_eq!(s["id"], Value::Null);
        assert_eq!(s["outcome"], "warning");
    }

    #[test]
    fn bad_arguments_make_no_request() {
        let mut pve = FakePve::default();
        for (args, needle) in [
            (json!({}), "upid: missing required argument"),
            (json!({"upid": 5}), "upid: must be a string"),
            (
                json!({"upid": "UPID:node1:000FF1FD:10F9374C:630D702C:vzdump:110:root@pam"}),
                "trailing colon",
            ),
            (
                json!({"upid": "UPID:node1:000FF1FZ:10F9374C:630D702C:vzdump:110:root@pam:"}),
                "pid must be 8 hex",
            ),
            (
                json!({"upid": UPID, "node": "pve2"}),
                "node: \"pve2\" disagrees with the UPID",
            ),
            (json!({"upid": UPID, "node": "bad node"}), "node: "),
        ] {
            let e = call(&mut pve, args.clone()).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{args}: {e:?}");
            assert!(e.message().contains(needle), "{args}: {e}");
        }
        assert!(pve.requests.is_empty());
    }
}
