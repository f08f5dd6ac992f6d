"""Interop check with the official MCP Python SDK (PyPI `mcp`, v2) over
Streamable HTTP.

Starts `pve-mcp demo --http 127.0.0.1:0` with a bearer token
(MCP_AUTH_TOKEN), checks that a request without the token gets 401 with
`WWW-Authenticate: Bearer`, then connects with the token in the
`Authorization` header, lists the tools and calls each one, once with the
2025-era `initialize` handshake and sessions (mode="legacy") and once the
way a 2026-era client connects (mode="auto": `server/discover` first).
Finally it stops the server with SIGTERM and expects exit code 0.

Usage: python_sdk_http_client.py PATH_TO_PVE_MCP
Exits non-zero with a message on the first mismatch.
"""

import asyncio
import os
import secrets
import signal
import subprocess
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from python_sdk_client import EVERY_TOOL, check, text_of

ENDPOINT_LINE = "pve-mcp: MCP endpoint "


def start(binary, token):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PVE_MCP_CACHE_DIR")}
    env["MCP_AUTH_TOKEN"] = token
    server = subprocess.Popen(
        [binary, "demo", "--http", "127.0.0.1:0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in server.stderr:
        if line.startswith(ENDPOINT_LINE):
            return server, line[len(ENDPOINT_LINE):].strip()
    server.kill()
    raise SystemExit("python-sdk http interop: pve-mcp never announced its endpoint")


async def wait_ready(url):
    base = url.rsplit("/", 1)[0]
    async with httpx2.AsyncClient(trust_env=False) as http:
        for _ in range(1200):
            try:
                if (await http.get(f"{base}/readyz")).status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            await asyncio.sleep(0.05)
    raise SystemExit("python-sdk http interop: pve-mcp never became ready")


async def refused_without_token(url):
    async with httpx2.AsyncClient(trust_env=False) as http:
        response = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
        )
    check(response.status_code == 401, f"no token: expected 401, got {response.status_code}")
    challenge = response.headers.get("www-authenticate", "")
    check(challenge.startswith("Bearer"), f"no Bearer challenge: {challenge!r}")


async def exercise(url, token, mode):
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30, read=300),
        trust_env=False,
    )
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        check(set(EVERY_TOOL) == set(tools), f"[{mode}] tools/list returned {sorted(tools)}")
        for name, args in EVERY_TOOL.items():
            result = await client.call_tool(name, args)
            check(not result.is_error, f"[{mode}] {name}({args}) failed: {text_of(result)}")
            check(result.structured_content.get("cluster") == "demo", f"[{mode}] {name} did not name its cluster")
        status = await client.call_tool("pve_get_vm_status", {"vmid": 101})
        check(status.structured_content["vmid"] == 101, f"[{mode}] wrong guest: {status.structured_content}")
        bad = await client.call_tool("pve_get_vm_status", {"vmid": 99})
        check(bad.is_error and "vmid" in text_of(bad), f"[{mode}] vmid 99: {text_of(bad)}")
    print(f"python-sdk http interop [{mode}]: tools/list and all {len(EVERY_TOOL)} tools ok")


async def main():
    binary = sys.argv[1]
    token = secrets.token_hex(32)
    server, url = start(binary, token)
    try:
        await wait_ready(url)
        await refused_without_token(url)
        for mode in ("legacy", "auto"):
            await exercise(url, token, mode)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            raise SystemExit("python-sdk http interop: pve-mcp did not stop on SIGTERM")
    rest = server.stderr.read()
    check(code == 0, f"pve-mcp exited with {code} after SIGTERM:\n{rest[-4000:]}")
    check(token not in rest, "the bearer token appeared in the server's log")
    print("python-sdk http interop: SIGTERM, exit 0")


if __name__ == "__main__":
    asyncio.run(main())
