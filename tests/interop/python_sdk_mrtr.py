"""Approval inside the call (MCP 2026-07-28, InputRequiredResult) with the
official MCP Python SDK (PyPI `mcp` 2.3.0), over stdio or Streamable HTTP.

The Rust test (tests/e2e/mrtr.rs) starts the simulator, writes the config
(a policy rule asking the client to approve `pve_stop_vm`) and, for HTTP,
the server; it then checks what reached the simulator. This script is the
client: pinned to 2026-07-28 (no session, no server-to-client request), it
calls `pve_stop_vm` once; the SDK meets the InputRequiredResult, asks its
elicitation callback (the person), and retries with the answer and the
requestState.

Usage:
  python_sdk_mrtr.py stdio PVE_MCP CONFIG approve|decline   (environment: the cluster's)
  python_sdk_mrtr.py http URL TOKEN approve|decline
Prints one line `mrtr: ...` and exits non-zero with a message on a mismatch.
"""

import asyncio
import os
import sys

import httpx2
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from python_sdk_client import check, text_of

TOOL = "pve_stop_vm"
ARGS = {"vmid": 100}


class Person:
    """Answers every approval form with `answer`, keeping each question."""

    def __init__(self, answer):
        self.answer = answer
        self.asked = []

    async def __call__(self, context, params):
        self.asked.append(params.message)
        if self.answer == "approve":
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")


async def exercise(client, label, person):
    check(client.protocol_version == "2026-07-28", f"[{label}] negotiated {client.protocol_version}")
    result = await client.call_tool(TOOL, ARGS)
    check(len(person.asked) == 1, f"[{label}] {len(person.asked)} approval forms: {person.asked}")
    question = person.asked[0]
    for needed in (f"Approve a call to {TOOL}?", '"vmid":100', "Will send", "/status/stop", "Requested by: "):
        check(needed in question, f"[{label}] the form lacks {needed!r}: {question}")
    if person.answer == "approve":
        check(not result.is_error, f"[{label}] the approved call failed: {text_of(result)}")
    else:
        check(result.is_error, f"[{label}] a declined call ran: {text_of(result)}")
        check("Not approved" in text_of(result), f"[{label}] the refusal: {text_of(result)}")
    print(f"mrtr [{label}] {person.answer}: asked once, is_error={result.is_error}: {text_of(result)[:120]!r}")


async def over_stdio(binary, config, answer):
    params = StdioServerParameters(command=binary, args=["--config", config, "serve"], env=dict(os.environ))
    person = Person(answer)
    async with Client(params, mode="2026-07-28", read_timeout_seconds=120, elicitation_callback=person) as client:
        await exercise(client, "stdio", person)


async def over_http(url, token, answer):
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30, read=120),
        trust_env=False,
    )
    person = Person(answer)
    async with http, Client(streamable_http_client(url, http_client=http), mode="2026-07-28",
                            read_timeout_seconds=120, elicitation_callback=person) as client:
        await exercise(client, "http", person)


async def main():
    transport = sys.argv[1]
    if transport == "stdio":
        await over_stdio(sys.argv[2], sys.argv[3], sys.argv[4])
    elif transport == "http":
        await over_http(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        raise SystemExit(f"unknown transport {transport!r}")


if __name__ == "__main__":
    asyncio.run(main())
