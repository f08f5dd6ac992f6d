"""Resources and completions through the official MCP Python SDK (PyPI
`mcp`, v2), against `pve-mcp demo`, over stdio (the 2025-era handshake and
the 2026-era connection) and Streamable HTTP with a bearer token.

- resources/list: the demo cluster's resource; resources/templates/list:
  guests, nodes and task logs; each read returns the simulated cluster's
  real content as application/json;
- completion/complete: vmids by number and by guest name, nodes, UPIDs
  (the template's percent-encoded form too), clusters;
- bad URIs, an unknown cluster and an unknown template argument get
  -32602 errors naming what is wrong, and the server keeps serving.
- with `--toolsets guests,tasks` (the cluster toolset not offered): its
  resources are not listed, their reads are refused (-32002 for a 2025
  client, -32602 for a 2026 one) and node names do not complete.

Usage: python_sdk_resources.py PATH_TO_PVE_MCP
Exits non-zero with a message on the first mismatch.
"""

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import urllib.parse

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference, ResourceTemplateReference

from python_sdk_client import LONG_LOG_UPID, check
from python_sdk_http_client import ENDPOINT_LINE, wait_ready

GUESTS = "pve://{cluster}/guests/{vmid}"
NODES = "pve://{cluster}/nodes/{node}"
TASK_LOGS = "pve://{cluster}/tasks/{upid}/log"


def base_env():
    return {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PVE_MCP_CACHE_DIR")}


async def over_each_transport(binary, body, what):
    """Runs `body(client, label)` over stdio (legacy and auto) and over
    Streamable HTTP with a bearer token (auto), each against a fresh demo."""
    for mode in ("legacy", "auto"):
        params = StdioServerParameters(command=binary, args=["demo"], env=base_env())
        async with Client(params, mode=mode, read_timeout_seconds=60) as client:
            await body(client, f"stdio {mode}")
        print(f"python-sdk {what} [stdio {mode}]: ok")
    token = secrets.token_hex(32)
    env = base_env()
    env["MCP_AUTH_TOKEN"] = token
    server = subprocess.Popen(
        [binary, "demo", "--http", "127.0.0.1:0"], env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        url = None
        for line in server.stderr:
            if line.startswith(ENDPOINT_LINE):
                url = line[len(ENDPOINT_LINE):].strip()
                break
        check(url is not None, "pve-mcp never announced its endpoint")
        # Keep reading stderr so the server never blocks on a full pipe.
        threading.Thread(target=lambda: server.stderr.read(), daemon=True).start()
        await wait_ready(url)
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx2.Timeout(30, read=120), trust_env=False)
        async with http, Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
            await body(client, "http")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
    print(f"python-sdk {what} [http]: ok")


async def error_of(call):
    """The MCPError a call raises (failing the check if it succeeds)."""
    try:
        result = await call
    except MCPError as e:
        return e
    raise SystemExit(f"python-sdk resources: expected an error, got {result}")


def json_of(result, uri, label):
    check(len(result.contents) == 1, f"[{label}] {uri}: {result.contents}")
    content = result.contents[0]
    check(content.mime_type == "application/json", f"[{label}] {uri}: mimeType {content.mime_type}")
    check(str(content.uri) == uri, f"[{label}] {uri}: contents name {content.uri}")
    return json.loads(content.text)


async def complete(client, template, name, value, context=None):
    ref = ResourceTemplateReference(type="ref/resource", uri=template)
    return (await client.complete(ref, {"name": name, "value": value}, context)).completion


async def resources(client, label):
    listed = (await client.list_resources()).resources
    check([str(r.uri) for r in listed] == ["pve://demo/resources"], f"[{label}] resources: {listed}")
    check(listed[0].mime_type == "application/json", f"[{label}] {listed[0]}")
    templates = {t.uri_template: t for t in (await client.list_resource_templates()).resource_templates}
    check(set(templates) == {GUESTS, NODES, TASK_LOGS}, f"[{label}] templates: {sorted(templates)}")
    check(all(t.mime_type == "application/json" for t in templates.values()), f"[{label}] {templates}")

    cluster = json_of(await client.read_resource("pve://demo/resources"), "pve://demo/resources", label)
    kinds = {r["kind"] for r in cluster["resources"]}
    check({"guest", "node", "storage"} <= kinds, f"[{label}] the cluster's resources: {kinds}")
    check(any(r.get("vmid") == 100 for r in cluster["resources"]), f"[{label}] no guest 100: {cluster}")

    guest = json_of(await client.read_resource("pve://demo/guests/100"), "pve://demo/guests/100", label)
    check(guest["status"]["vmid"] == 100 and guest["status"]["status"] == "running", f"[{label}] {guest['status']}")
    check(guest["config"]["config"]["name"] == "web-frontend-01", f"[{label}] {guest['config']}")

    node = json_of(await client.read_resource("pve://demo/nodes/pve1"), "pve://demo/nodes/pve1", label)
    check(node["node"] == "pve1" and node["cpuinfo"]["cpus"] > 0, f"[{label}] {node}")

    uri = f"pve://demo/tasks/{urllib.parse.quote(LONG_LOG_UPID, safe='')}/log"
    log = json_of(await client.read_resource(uri), uri, label)
    check(log["upid"] == LONG_LOG_UPID and log["lines"], f"[{label}] task log: {log}")

    # Completions: vmids by number and by guest name, nodes, UPIDs.
    by_number = await complete(client, GUESTS, "vmid", "10")
    check(by_number.values and all(v.startswith("10") for v in by_number.values), f"[{label}] vmid 10: {by_number}")
    check("100" in by_number.values and by_number.total == len(by_number.values)
          and by_number.has_more is False, f"[{label}] vmid 10: {by_number}")
    by_name = await complete(client, GUESTS, "vmid", "web-front", {"cluster": "demo"})
    check(by_name.values == ["100"], f"[{label}] vmid by name web-front: {by_name}")
    nodes = await complete(client, NODES, "node", "pve")
    check(nodes.values == ["pve1", "pve2", "pve3"], f"[{label}] nodes: {nodes}")
    upids = await complete(client, TASK_LOGS, "upid", "UPID:pve1:")
    check(upids.values and all(u.startswith("UPID:pve1:") for u in upids.values), f"[{label}] upids: {upids}")
    check(LONG_LOG_UPID in upids.values, f"[{label}] upids: {upids}")
    encoded = await complete(client, TASK_LOGS, "upid", "UPID%3Apve1%3A")
    check(encoded.values == upids.values, f"[{label}] encoded upid prefix: {encoded}")
    clusters = await complete(client, GUESTS, "cluster", "")
    check(clusters.values == ["demo"], f"[{label}] clusters: {clusters}")
    for_prompt = await client.complete(PromptReference(type="ref/prompt", name="plan_node_maintenance"),
                                       {"name": "node", "value": "pve2"})
    check(for_prompt.completion.values == ["pve2"], f"[{label}] prompt node: {for_prompt}")

    # Bad input: clear errors, and the server keeps serving.
    for bad, says in (
        ("pve://demo/guests/abc", 'its vmid "abc" is not a number'),
        ("pve://elsewhere/resources", 'names cluster "elsewhere", which this server does not serve (it serves demo)'),
        ("https://demo/resources", "does not start with pve://"),
        ("pve://demo/tasks/not-a-upid/log", "does not start with UPID:"),
        ("pve://demo/volumes/1", "names no resource"),
    ):
        error = await error_of(client.read_resource(bad))
        check(error.error.code == -32602 and error.error.data == {"uri": bad}, f"[{label}] {bad}: {error.error}")
        check(says in error.error.message and "Valid forms: pve://{cluster}/resources" in error.error.message,
              f"[{label}] {bad}: {error.error.message}")
    missing = await error_of(client.read_resource("pve://demo/guests/4242"))
    check(missing.error.code == -32603 and "pve_get_vm_status failed" in missing.error.message
          and missing.error.data == {"uri": "pve://demo/guests/4242"},
          f"[{label}] guest 4242: {missing.error}")
    unknown = await error_of(complete(client, GUESTS, "node", "p"))
    check(unknown.error.code == -32602 and 'Unknown argument "node"' in unknown.error.message, f"[{label}] {unknown.error}")
    again = json_of(await client.read_resource("pve://demo/nodes/pve2"), "pve://demo/nodes/pve2", label)
    check(again["node"] == "pve2", f"[{label}] after the errors: {again}")


async def not_offered(binary):
    """`--toolsets guests,tasks`: the cluster toolset (pve_list_resources,
    pve_get_node_metrics, pve_list_nodes) is not offered, so its resources
    are not listed, their reads are refused ("resource not found": -32002
    for a 2025 client, -32602 for a 2026 one, SEP-2164) and node names do
    not complete; the guests and task-log templates stay."""
    for mode, code in (("legacy", -32002), ("auto", -32602)):
        params = StdioServerParameters(command=binary, args=["--toolsets", "guests,tasks", "demo"], env=base_env())
        async with Client(params, mode=mode, read_timeout_seconds=60) as client:
            label = f"not offered, {mode}"
            listed = (await client.list_resources()).resources
            check(listed == [], f"[{label}] resources: {listed}")
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            check(templates == {GUESTS, TASK_LOGS}, f"[{label}] templates: {sorted(templates)}")
            for uri in ("pve://demo/resources", "pve://demo/nodes/pve1"):
                error = await error_of(client.read_resource(uri))
                check(error.error.code == code and "is not offered here" in error.error.message
                      and error.error.data == {"uri": uri}, f"[{label}] {uri}: {error.error}")
            nodes = await complete(client, NODES, "node", "")
            check(nodes.values == [], f"[{label}] nodes: {nodes}")
            guest = json_of(await client.read_resource("pve://demo/guests/101"), "pve://demo/guests/101", label)
            check(guest["status"]["vmid"] == 101, f"[{label}] {guest}")
    print("python-sdk resources [not offered]: ok")


async def main():
    await over_each_transport(sys.argv[1], resources, "resources")
    await not_offered(sys.argv[1])


if __name__ == "__main__":
    asyncio.run(main())
