"""Toolsets, the read-only switch, per-token toolsets and the discovery pair
through the official MCP Python SDK (PyPI `mcp`, v2), over stdio and
Streamable HTTP, against `pve-mcp demo`.

- stdio, `--toolsets guests,tasks`: only those tools are listed; a tool of
  another toolset is refused by name, and the instructions name the
  toolsets;
- stdio, `--writes --read-only`: no tool that writes is listed or runs;
- stdio, `PVE_MCP_TOOLSETS=discover`: the list is the pair, at most 3 KB
  of what a client hands the model; search finds tools, pve_call_tool runs
  one, and a tool the policy hides stays refused through it;
- stdio, `--toolsets discover,guests`: the pair reaches guests only;
- HTTP, two tokens: `alice` given `toolsets = ["guests"]`, `bob` given
  `read_only = true`, on a `--writes` demo: each lists its own tools, and
  alice is refused a cluster tool by name.

Usage: python_sdk_toolsets.py PATH_TO_PVE_MCP
Exits non-zero with a message on the first mismatch.
"""

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from python_sdk_client import check, text_of
from python_sdk_http_client import ENDPOINT_LINE, wait_ready

WRITES = {"pve_start_vm", "pve_stop_vm", "pve_create_snapshot", "pve_backup_vm"}


def base_env():
    return {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PVE_MCP_CACHE_DIR")}


def model_visible(tool):
    """What a client hands the model: name, title, description, input schema
    and annotations, as compact JSON."""
    data = tool.model_dump(by_alias=True, exclude_none=True)
    kept = {k: data[k] for k in ("name", "title", "description", "inputSchema", "annotations") if k in data}
    return len(json.dumps(kept, separators=(",", ":")))


async def stdio(args, env_extra=None):
    env = base_env()
    env.update(env_extra or {})
    return StdioServerParameters(command=sys.argv[1], args=["demo", *args], env=env)


async def toolsets_over_stdio():
    params = await stdio(["--toolsets", "guests,tasks"])
    async with Client(params, read_timeout_seconds=60) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        check("pve_list_vms" in names and "pve_list_tasks" in names, f"guests,tasks: {sorted(names)}")
        check("pve_list_nodes" not in names and "pve_list_snapshots" not in names, f"guests,tasks: {sorted(names)}")
        refused = await client.call_tool("pve_list_nodes", {})
        check(refused.is_error, "pve_list_nodes ran outside the enabled toolsets")
        check("toolset cluster is not among those this server enables" in text_of(refused), text_of(refused))
        listed = await client.call_tool("pve_list_vms", {})
        check(not listed.is_error, f"pve_list_vms: {text_of(listed)}")
    print("python-sdk toolsets [stdio]: guests,tasks listed, cluster refused by name")


async def default_and_opt_in_over_stdio():
    # Naming no toolsets offers the default ones: `agent` only when named.
    params = await stdio([])
    async with Client(params, read_timeout_seconds=60) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        check("pve_list_vms" in names and "pve_guest_agent_info" not in names, f"default: {sorted(names)}")
        refused = await client.call_tool("pve_guest_agent_info", {"vmid": 100})
        check(refused.is_error and "--toolsets naming agent" in text_of(refused), text_of(refused))
        instructions = client.instructions
        instructions = instructions() if callable(instructions) else instructions
        check(instructions and "Not offered here (an operator enables them): agent, firewall, ha, nodes, pools, provisioning, replication." in instructions,
              f"instructions: {instructions}")
    params = await stdio(["--toolsets", "default,agent"])
    async with Client(params, read_timeout_seconds=60) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        check({"pve_list_vms", "pve_guest_agent_info"} <= names, f"default,agent: {sorted(names)}")
        info = await client.call_tool("pve_guest_agent_info", {"vmid": 100})
        check(not info.is_error, f"pve_guest_agent_info: {text_of(info)}")
    print("python-sdk toolsets [stdio]: default hides agent, default,agent lists and runs it")


async def read_only_over_stdio():
    params = await stdio(["--writes", "--read-only"])
    async with Client(params, read_timeout_seconds=60) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        check(not (names & WRITES), f"--read-only listed writes: {sorted(names & WRITES)}")
        check("pve_list_vms" in names, f"--read-only: {sorted(names)}")
        refused = await client.call_tool("pve_start_vm", {"vmid": 101})
        check(refused.is_error and "read-only" in text_of(refused), text_of(refused))
    print("python-sdk toolsets [stdio]: --read-only lists and runs only reads")


async def discover_over_stdio():
    params = await stdio([], {"PVE_MCP_TOOLSETS": "discover"})
    async with Client(params, read_timeout_seconds=60) as client:
        tools = (await client.list_tools()).tools
        names = sorted(t.name for t in tools)
        check(names == ["pve_call_tool", "pve_search_tools"], f"discover lists {names}")
        size = sum(model_visible(t) for t in tools)
        check(size <= 3072, f"the pair is {size} bytes, over 3 KB")
        found = await client.call_tool("pve_search_tools", {"query": "snapshot"})
        check(not found.is_error, text_of(found))
        hits = [t["name"] for t in found.structured_content["tools"]]
        check("pve_list_snapshots" in hits, f"search snapshot: {hits}")
        check(all("inputSchema" in t and "tier" in t for t in found.structured_content["tools"]), "search lacks schemas or tiers")
        listed = await client.call_tool("pve_call_tool", {"name": "pve_list_vms", "arguments": {"vm_type": "lxc"}})
        check(not listed.is_error, f"pve_call_tool pve_list_vms: {text_of(listed)}")
        vms = listed.structured_content["vms"]
        check(vms and all(v["type"] == "lxc" for v in vms), f"through the pair: {vms}")
        # The read-only default policy hides the write tools: they stay
        # hidden through the pair.
        hidden = await client.call_tool("pve_search_tools", {"query": "start"})
        check("pve_start_vm" not in [t["name"] for t in hidden.structured_content["tools"]], "search shows a hidden tool")
        refused = await client.call_tool("pve_call_tool", {"name": "pve_start_vm", "arguments": {"vmid": 101}})
        check(refused.is_error, "a hidden tool ran through pve_call_tool")
        unknown = await client.call_tool("pve_call_tool", {"name": "pve_no_such"})
        check(unknown.is_error and "pve_search_tools" in text_of(unknown), text_of(unknown))
    params = await stdio(["--toolsets", "discover,guests"])
    async with Client(params, read_timeout_seconds=60) as client:
        refused = await client.call_tool("pve_call_tool", {"name": "pve_list_nodes", "arguments": {}})
        check(refused.is_error and "toolset cluster" in text_of(refused), text_of(refused))
        found = await client.call_tool("pve_search_tools", {})
        sets = {t["toolset"] for t in found.structured_content["tools"]}
        check(sets == {"guests"}, f"discover,guests reaches {sets}")
    print("python-sdk toolsets [stdio]: the discovery pair finds, runs and refuses")


async def per_token_over_http():
    alice, bob = secrets.token_hex(32), secrets.token_hex(32)
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "pve-mcp.toml")
        with open(config, "w") as f:
            f.write(
                f'[http.tokens.alice]\ntoken = "{alice}"\ntoolsets = ["guests"]\n'
                f'[http.tokens.bob]\ntoken = "{bob}"\nread_only = true\n'
            )
        server = subprocess.Popen(
            [sys.argv[1], "--config", config, "demo", "--writes", "--http", "127.0.0.1:0"],
            env=base_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )
        url = None
        for line in server.stderr:
            if line.startswith(ENDPOINT_LINE):
                url = line[len(ENDPOINT_LINE):].strip()
                break
        check(url is not None, "pve-mcp never announced its endpoint")
        try:
            await wait_ready(url)
            seen = {}
            for who, token in (("alice", alice), ("bob", bob)):
                http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=120), trust_env=False)
                async with http, Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
                    seen[who] = {t.name for t in (await client.list_tools()).tools}
                    again = {t.name for t in (await client.list_tools()).tools}
                    check(again == seen[who], f"{who}'s list changed within a session")
                    if who == "alice":
                        refused = await client.call_tool("pve_list_nodes", {})
                        check(refused.is_error and "your token is given" in text_of(refused), text_of(refused))
            check("pve_start_vm" in seen["alice"] and "pve_list_nodes" not in seen["alice"], f"alice: {sorted(seen['alice'])}")
            check("pve_list_nodes" in seen["bob"] and not (seen["bob"] & WRITES), f"bob: {sorted(seen['bob'])}")
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
    print("python-sdk toolsets [http]: each token lists its own tools")


async def main():
    await toolsets_over_stdio()
    await default_and_opt_in_over_stdio()
    await read_only_over_stdio()
    await discover_over_stdio()
    await per_token_over_http()


if __name__ == "__main__":
    asyncio.run(main())
