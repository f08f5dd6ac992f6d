"""The official MCP Python SDK (PyPI `mcp`, v2) against `wassette run`.

Spawns the command given (wassette over stdio, its environment given too),
lists the tools and calls the ones asked, then prints one JSON object on
stdout: {"tools": {name: description}, "calls": {label: {"is_error": ...,
"structured": ..., "text": ...}}}. The end-to-end test
(tests/e2e/wassette.rs) judges it.

Usage: wassette_client.py SPEC_JSON
SPEC_JSON: {"command": [...], "env": {...}, "calls": [[label, tool, args]]}
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters


async def main(spec):
    command = spec["command"]
    params = StdioServerParameters(command=command[0], args=command[1:], env=spec["env"])
    out = {"tools": {}, "calls": {}}
    async with Client(params, read_timeout_seconds=120) as client:
        # wassette loads the component directory in the background after
        # it answers initialize; on a busy machine the first listing can
        # come before the component is compiled, so wait for its tools.
        listed = await client.list_tools()
        for _ in range(240):
            if listed.tools:
                break
            await asyncio.sleep(0.5)
            listed = await client.list_tools()
        out["tools"] = {t.name: t.description for t in listed.tools}
        for label, tool, args in spec["calls"]:
            result = await client.call_tool(tool, args)
            out["calls"][label] = {
                "is_error": bool(result.is_error),
                "structured": result.structured_content,
                "text": "\n".join(getattr(c, "text", "") for c in result.content),
            }
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
