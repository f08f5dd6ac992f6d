"""Interop check with the official MCP Python SDK (PyPI `mcp`, v2).

Spawns `pve-mcp demo` (which serves MCP over stdio on the embedded simulated
cluster when stdin is not a terminal), lists the tools and calls each one,
once with the 2025-era `initialize` handshake (mode="legacy") and once the
way a 2026-era client connects (mode="auto": `server/discover` first).

Usage: python_sdk_client.py PATH_TO_PVE_MCP
Exits non-zero with a message on the first mismatch.
"""

import asyncio
import os
import sys

from mcp import Client, StdioServerParameters

LONG_LOG_UPID = "UPID:pve1:000A3F1C:14497B40:6B0A2790:vzdump::root@pam:"

# One call per tool, with arguments that fit the demo cluster. The set must
# match tools/list exactly, so a new tool cannot skip the interop check.
EVERY_TOOL = {
    "pve_list_vms": {},
    "pve_get_vm_status": {"vmid": 100},
    "pve_list_clusters": {},
    "pve_get_version": {},
    "pve_get_cluster_status": {},
    "pve_list_nodes": {},
    "pve_get_node_metrics": {"node": "pve1", "timeframe": "hour"},
    "pve_list_resources": {"resource_type": "vm"},
    "pve_get_vm_config": {"vmid": 100},
    "pve_list_storage": {"node": "pve1"},
    "pve_list_backups": {"node": "pve1", "storage": "nfs-backup"},
    "pve_list_storage_content": {"node": "pve1", "storage": "local", "content": "iso"},
    "pve_get_task_status": {"upid": LONG_LOG_UPID},
    "pve_list_snapshots": {"vmid": 100},
    "pve_list_tasks": {"node": "pve1"},
    "pve_get_task_log": {"upid": LONG_LOG_UPID},
    "pve_get_vm_metrics": {"vmid": 100},
    "pve_get_vm_ips": {"vmid": 100},
    "pve_list_ha": {},
    "pve_list_networks": {"node": "pve2"},
    "pve_check_permissions": {"path": "/vms/100"},
    "pve_get_next_vmid": {},
    "pve_wait_task": {"upid": LONG_LOG_UPID, "timeout": 5},
}


def check(condition, message):
    if not condition:
        raise SystemExit(f"python-sdk interop: {message}")


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def exercise(binary, mode):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PVE_MCP_CACHE_DIR")}
    params = StdioServerParameters(command=binary, args=["demo"], env=env)
    async with Client(params, mode=mode, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        check(set(EVERY_TOOL) == set(tools), f"[{mode}] tools/list returned {sorted(tools)}")
        for name, args in EVERY_TOOL.items():
            tool = tools[name]
            check(tool.output_schema is not None, f"[{mode}] {name} has no outputSchema")
            check(tool.annotations and tool.annotations.read_only_hint, f"[{mode}] {name} is not read-only")
            result = await client.call_tool(name, args)
            check(not result.is_error, f"[{mode}] {name}({args}) failed: {text_of(result)}")
            check(result.structured_content.get("cluster") == "demo", f"[{mode}] {name} did not name its cluster")

        listing = await client.call_tool("pve_list_vms", {"vm_type": "lxc"})
        check(not listing.is_error, f"[{mode}] pve_list_vms failed: {text_of(listing)}")
        vms = listing.structured_content["vms"]
        check(vms and all(v["type"] == "lxc" for v in vms), f"[{mode}] vm_type filter not applied: {vms}")

        status = await client.call_tool("pve_get_vm_status", {"vmid": 100})
        check(not status.is_error, f"[{mode}] pve_get_vm_status failed: {text_of(status)}")
        sc = status.structured_content
        check(sc["vmid"] == 100 and sc["status"] == "running", f"[{mode}] unexpected status {sc}")
        check(sc["resolved"]["node"] is True, f"[{mode}] node resolution not reported: {sc['resolved']}")

        bad = await client.call_tool("pve_get_vm_status", {"vmid": 99})
        check(bad.is_error, f"[{mode}] vmid 99 was accepted")
        check("vmid" in text_of(bad), f"[{mode}] the error does not name the field: {text_of(bad)}")
    print(f"python-sdk interop [{mode}]: tools/list and all {len(EVERY_TOOL)} tools ok")


async def main():
    binary = sys.argv[1]
    for mode in ("legacy", "auto"):
        await exercise(binary, mode)


if __name__ == "__main__":
    asyncio.run(main())
