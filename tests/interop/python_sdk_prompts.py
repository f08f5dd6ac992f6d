"""Prompts through the official MCP Python SDK (PyPI `mcp`, v2), against
`pve-mcp demo`, over stdio (the 2025-era handshake and the 2026-era
connection) and Streamable HTTP with a bearer token.

- prompts/list: the four prompts with their arguments;
- prompts/get: each with arguments, its text naming the tools it expects
  and, for a tool the demo does not offer (pve_guest_agent_info, toolset
  agent), saying it is not available;
- least_privilege_token: the pveum commands and policy for the tools named;
- completion/complete on prompt arguments (vmid by guest name, tool names);
- an unknown prompt, a missing or invalid argument and an unknown one get
  -32602 errors naming it, and the server keeps serving.

Usage: python_sdk_prompts.py PATH_TO_PVE_MCP
Exits non-zero with a message on the first mismatch.
"""

import asyncio
import sys

from mcp.types import PromptReference

from python_sdk_client import check
from python_sdk_resources import error_of, over_each_transport

EXPECTED = {
    "diagnose_guest": [("vmid", True), ("cluster", False)],
    "plan_node_maintenance": [("node", True), ("cluster", False)],
    "capacity_report": [("cluster", False), ("storage", False)],
    "least_privilege_token": [("tools", True)],
}


def text(result):
    check(len(result.messages) == 1 and result.messages[0].role == "user", f"messages: {result.messages}")
    return result.messages[0].content.text


async def prompts(client, label):
    listed = {p.name: p for p in (await client.list_prompts()).prompts}
    check(set(listed) == set(EXPECTED), f"[{label}] prompts: {sorted(listed)}")
    for name, arguments in EXPECTED.items():
        got = [(a.name, bool(a.required)) for a in listed[name].arguments]
        check(got == arguments, f"[{label}] {name} arguments: {got}")
        check(listed[name].description and listed[name].title, f"[{label}] {name}: {listed[name]}")

    diagnose = text(await client.get_prompt("diagnose_guest", {"vmid": "101", "cluster": "demo"}))
    for tool in ("pve_get_vm_status", "pve_get_vm_config", "pve_list_tasks", "pve_get_task_log", "pve_get_vm_metrics"):
        check(f"{tool} {{" in diagnose, f"[{label}] diagnose_guest does not ask for {tool}: {diagnose}")
    check('{vmid: 101, cluster: "demo"}' in diagnose and "pve://demo/guests/101" in diagnose, f"[{label}] {diagnose}")
    # The demo does not offer the agent toolset: the prompt says so.
    check("Not available to you on this server" in diagnose and diagnose.rstrip().count("pve_guest_agent_info") == 2,
          f"[{label}] diagnose_guest and the agent tool: {diagnose}")

    plan = text(await client.get_prompt("plan_node_maintenance", {"node": "pve2"}))
    check('pve_list_vms {node: "pve2"}' in plan and "quorum" in plan and "approve" in plan, f"[{label}] {plan}")
    check("Not available" not in plan, f"[{label}] plan_node_maintenance: {plan}")
    capacity = text(await client.get_prompt("capacity_report", {"storage": "local-lvm"}))
    check("storage local-lvm only" in capacity and "pve_list_storage" in capacity, f"[{label}] {capacity}")
    least = text(await client.get_prompt("least_privilege_token", {"tools": "pve_list_vms, pve_get_cluster_status"}))
    for line in (
        'pveum role add PveMcpVms --privs "VM.Audit"',
        "pveum acl modify /vms --tokens 'pve-mcp@pve!agent' --roles PveMcpVms",
        'pveum role add PveMcpRoot --privs "Sys.Audit"',
        "pveum user token add pve-mcp@pve agent --privsep 1",
        '[policy]\ndefault = "deny"\n[policy.tools.pve_list_vms]\naction = "allow"\n'
        '[policy.tools.pve_get_cluster_status]\naction = "allow"\n',
    ):
        check(line in least, f"[{label}] least_privilege_token lacks {line!r}: {least}")

    # Completions of prompt arguments.
    ref = PromptReference(type="ref/prompt", name="diagnose_guest")
    by_name = (await client.complete(ref, {"name": "vmid", "value": "web"})).completion
    check("100" in by_name.values and all(len(v) >= 3 and v.isdigit() for v in by_name.values), f"[{label}] {by_name}")
    tools_ref = PromptReference(type="ref/prompt", name="least_privilege_token")
    tools = (await client.complete(tools_ref, {"name": "tools", "value": "pve_list_vms,pve_get_vm_st"})).completion
    check(tools.values == ["pve_list_vms,pve_get_vm_status"], f"[{label}] tools: {tools}")

    # Bad names and arguments: -32602 naming them; the server keeps serving.
    for name, arguments, says in (
        ("no_such_prompt", {}, 'Unknown prompt "no_such_prompt"'),
        ("diagnose_guest", {}, "Missing required argument vmid"),
        ("diagnose_guest", {"vmid": "abc"}, 'Invalid argument vmid: "abc" is not a vmid'),
        ("diagnose_guest", {"vmid": "100", "cluster": "prod"}, 'Invalid argument cluster: "prod" is not a cluster'),
        ("diagnose_guest", {"vmid": "100", "colour": "red"}, 'Unknown argument "colour" for prompt diagnose_guest'),
        ("plan_node_maintenance", {"node": "pve1; rm -rf /"}, "Invalid argument node"),
        ("least_privilege_token", {"tools": "pve_list_vms,pve_fly"}, "Invalid argument tools: no tool is called pve_fly"),
    ):
        error = await error_of(client.get_prompt(name, arguments))
        check(error.error.code == -32602 and says in error.error.message, f"[{label}] {name} {arguments}: {error.error}")
    still = await client.list_prompts()
    check(len(still.prompts) == 4, f"[{label}] after the errors: {still}")


async def main():
    await over_each_transport(sys.argv[1], prompts, "prompts")


if __name__ == "__main__":
    asyncio.run(main())
