"""The official MCP Python SDK (PyPI `mcp`, v2) against the wasi:http
component under `wasmtime serve`, next to `pve-mcp serve --http` on the
same simulated cluster (tests/e2e/wasi_http.rs starts both).

For each connection mode (mode="legacy": the `initialize` handshake;
mode="auto": `server/discover` first, the 2026-07-28 way), it lists the
component's tools and checks they are `pve-mcp serve`'s, definition for
definition (name, title, description, schemas, annotations), then calls
`pve_list_vms` and `pve_get_vm_status` against the simulator and expects a
tool error (`isError: true`) for a vmid Proxmox does not have and for
arguments the tool refuses.

Usage: python_sdk_client.py COMPONENT_URL PVE_MCP_URL PVE_MCP_TOKEN
Prints one line per mode; exits non-zero with a message on the first
mismatch.
"""

import asyncio
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def check(condition, message):
    if not condition:
        raise SystemExit(f"wasi:http python-sdk: {message}")


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


def definition(tool):
    """What a client learns of a tool, comparable across servers."""
    return {
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "annotations": tool.annotations.model_dump(exclude_none=True) if tool.annotations else None,
    }


async def tools_of(url, mode, headers=None):
    http = httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(30, read=120), trust_env=False)
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        return {t.name: definition(t) for t in listed.tools}


async def exercise(component, reference, token, mode):
    theirs = await tools_of(reference, mode, {"Authorization": f"Bearer {token}"})
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120), trust_env=False)
    async with http, Client(streamable_http_client(component, http_client=http), mode=mode, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        ours = {t.name: definition(t) for t in listed.tools}
        check(sorted(ours) == sorted(theirs), f"[{mode}] tools differ: {sorted(ours)} vs pve-mcp serve's {sorted(theirs)}")
        for name in ours:
            check(ours[name] == theirs[name], f"[{mode}] {name} differs:\n{ours[name]}\nvs pve-mcp serve's\n{theirs[name]}")

        vms = await client.call_tool("pve_list_vms", {})
        check(not vms.is_error, f"[{mode}] pve_list_vms failed: {text_of(vms)}")
        names = [v["name"] for v in vms.structured_content["vms"]]
        check("web-frontend-01" in names, f"[{mode}] pve_list_vms: {names}")
        check(vms.structured_content.get("cluster") == "default", f"[{mode}] no cluster: {vms.structured_content}")

        status = await client.call_tool("pve_get_vm_status", {"vmid": 100})
        check(not status.is_error, f"[{mode}] pve_get_vm_status failed: {text_of(status)}")
        check(status.structured_content["status"] == "running", f"[{mode}] {status.structured_content}")
        check(status.structured_content["name"] == "web-frontend-01", f"[{mode}] {status.structured_content}")

        missing = await client.call_tool("pve_get_vm_status", {"vmid": 999})
        check(missing.is_error, f"[{mode}] vmid 999 is no guest, yet: {text_of(missing)}")
        check("999" in text_of(missing), f"[{mode}] vmid 999: {text_of(missing)}")
        invalid = await client.call_tool("pve_get_vm_status", {"vmid": 99})
        check(invalid.is_error and "vmid" in text_of(invalid), f"[{mode}] vmid 99: {text_of(invalid)}")
    print(f"wasi:http python-sdk [{mode}]: {len(ours)} tools as pve-mcp serve lists them, 2 calls, 2 tool errors")


async def main():
    component, reference, token = sys.argv[1:4]
    for mode in ("legacy", "auto"):
        await exercise(component, reference, token, mode)


if __name__ == "__main__":
    asyncio.run(main())
