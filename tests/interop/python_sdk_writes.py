"""Interop check of the write tools with the official MCP Python SDK (PyPI
`mcp`, v2), over stdio and over Streamable HTTP.

Runs `pve-mcp demo --writes` (the embedded simulated cluster, write tools
enabled; destructive ones need a person's approval through the client's
form) and calls every write tool once, in an order that works on a fresh
demo cluster. The SDK's elicitation callback is the person: it approves,
and the script checks that exactly the destructive calls asked. Calls with
`wait: true` pass a progress callback and must get progress from the task.

Usage: python_sdk_writes.py PATH_TO_PVE_MCP
Exits non-zero with a message on the first mismatch.
"""

import asyncio
import os
import secrets
import signal
import subprocess
import sys

import httpx2
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from python_sdk_client import check, text_of
from python_sdk_http_client import ENDPOINT_LINE, wait_ready

TEMPLATE = "local:vztmpl/debian-12-standard_12.12-1_amd64.tar.zst"

# Every write tool, and whether the demo asks a person before it runs.
DESTRUCTIVE = {
    "pve_set_vm_config",
    "pve_delete_snapshot",
    "pve_rollback_snapshot",
    "pve_resize_disk",
    "pve_delete_vm",
    "pve_restore_vm",
    "pve_api_request",
    "pve_guest_exec",
    "pve_guest_file_read",
    "pve_guest_file_write",
    "pve_stop_task",
    "pve_convert_to_template",
    "pve_delete_volume",
    "pve_dump_cloudinit",
    "pve_delete_pool",
    "pve_delete_firewall_rule",
    "pve_set_firewall_options",
    "pve_remove_ha_resource",
    "pve_get_node_log",
}
WRITES = {
    "pve_start_vm", "pve_shutdown_vm", "pve_stop_vm", "pve_reboot_vm", "pve_suspend_vm",
    "pve_resume_vm", "pve_create_snapshot", "pve_migrate_vm", "pve_clone_vm",
    "pve_create_qemu_vm", "pve_create_lxc", "pve_backup_vm", "pve_move_disk", "pve_set_cloudinit",
    "pve_regenerate_cloudinit", "pve_download_to_storage", "pve_download_appliance",
    "pve_run_replication", "pve_create_pool", "pve_update_pool", "pve_add_firewall_rule",
    "pve_update_firewall_rule", "pve_set_ha_resource", "pve_ha_migrate",
} | DESTRUCTIVE


class Person:
    """Answers every approval form with yes, counting the forms."""

    def __init__(self):
        self.asked = []

    async def __call__(self, context, params):
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})


async def exercise(client, label, person):
    listed = await client.list_tools()
    names = {t.name for t in listed.tools}
    check(WRITES <= names, f"[{label}] write tools missing from tools/list: {sorted(WRITES - names)}")
    writes_listed = {t.name for t in listed.tools if not (t.annotations and t.annotations.read_only_hint)}
    check(writes_listed == WRITES, f"[{label}] untested write tools: {sorted(writes_listed - WRITES)}")
    called = set()

    async def act(name, args, sent=True):
        progress = []

        async def on_progress(value, total, message):
            progress.append((value, total, message))

        result = await client.call_tool(name, args, progress_callback=on_progress)
        check(not result.is_error, f"[{label}] {name}({args}) failed: {text_of(result)}")
        sc = result.structured_content
        if sent is not None:
            check(sc.get("sent") is sent, f"[{label}] {name}: sent is {sc.get('sent')}: {sc}")
        if args.get("wait"):
            end = (sc.get("task") or {}).get("end") or {}
            check(end.get("outcome") in ("ok", "warning"), f"[{label}] {name}: the task did not end ok: {sc}")
            # The host's own notices name the tool; the task's come from its log.
            from_task = [m for _, _, m in progress if m and not m.startswith(name)]
            check(from_task, f"[{label}] {name}: no progress from the task while waiting: {progress}")
        called.add(name)
        return sc

    await act("pve_start_vm", {"vmid": 104, "wait": True})
    await act("pve_suspend_vm", {"vmid": 104, "wait": True})
    await act("pve_resume_vm", {"vmid": 104, "wait": True})
    await act("pve_reboot_vm", {"vmid": 104, "wait": True})
    await act("pve_shutdown_vm", {"vmid": 104, "timeout": 30, "force_stop": True, "wait": True})
    await act("pve_stop_vm", {"vmid": 101, "wait": True})
    started = await act("pve_start_vm", {"vmid": 101})
    waited = await client.call_tool("pve_wait_task", {"upid": started["task"]["upid"], "timeout": 60})
    check(waited.structured_content["outcome"] == "ok", f"[{label}] pve_wait_task: {waited.structured_content}")
    plan = await act("pve_stop_vm", {"vmid": 101, "dry_run": True}, sent=False)
    check(plan["requests"][0]["method"] == "POST", f"[{label}] dry run plan: {plan}")
    # The demo cluster's backup that has run on pve2 since yesterday.
    running = (await client.call_tool("pve_list_tasks", {"node": "pve2", "running": True})).structured_content
    hung = next(t["upid"] for t in running["tasks"] if t["type"] == "vzdump")
    await act("pve_stop_task", {"upid": hung})
    ended = (await client.call_tool("pve_get_task_status", {"upid": hung})).structured_content
    check(ended["exitstatus"] == "interrupted by signal", f"[{label}] the stopped task: {ended}")

    await act("pve_create_snapshot", {"vmid": 104, "snapname": "py-snap", "wait": True})
    await act("pve_rollback_snapshot", {"vmid": 104, "snapname": "py-snap", "wait": True})
    await act("pve_delete_snapshot", {"vmid": 104, "snapname": "py-snap", "wait": True})
    await act("pve_set_vm_config", {"vmid": 104, "config": {"memory": 3072, "onboot": True}})
    config = (await client.call_tool("pve_get_vm_config", {"vmid": 104})).structured_content
    disk = next(k for k in ("scsi0", "virtio0", "sata0", "ide0") if k in config["config"])
    await act("pve_resize_disk", {"vmid": 104, "disk": disk, "size": "+1G", "wait": True})
    await act("pve_migrate_vm", {"vmid": 104, "target": "pve2", "wait": True})
    await act("pve_clone_vm", {"source_vmid": 900, "newid": 160, "name": "py-clone", "wait": True})
    await act("pve_create_qemu_vm", {"node": "pve1", "vmid": 161, "name": "py-vm", "memory": 1024,
                                     "scsi0": "local-lvm:4", "net0": "virtio,bridge=vmbr0", "wait": True})
    await act("pve_create_lxc", {"node": "pve1", "vmid": 162, "ostemplate": TEMPLATE, "storage": "local-lvm",
                                 "hostname": "py-ct", "wait": True})
    await act("pve_backup_vm", {"vmid": 161, "storage": "local", "wait": True})
    backups = (await client.call_tool("pve_list_backups", {"node": "pve1", "storage": "local", "vmid": 161})).structured_content
    archive = backups["backups"][0]["volid"]
    await act("pve_restore_vm", {"archive": archive, "vmid": 163, "node": "pve1", "wait": True})
    await act("pve_delete_vm", {"vmid": 163, "purge": True, "wait": True})
    await act("pve_move_disk", {"vmid": 161, "disk": "scsi0", "storage": "nfs-images", "wait": True})
    await act("pve_convert_to_template", {"vmid": 161})
    # Provisioning: cloud-init on the clone, a download, an appliance.
    await act("pve_set_cloudinit", {"vmid": 160, "ipconfig0": "ip=dhcp", "ciuser": "py"})
    await act("pve_regenerate_cloudinit", {"vmid": 160})
    meta = await act("pve_dump_cloudinit", {"vmid": 160, "type": "meta"}, sent=None)
    check(meta.get("content", "").startswith("instance-id:"), f"[{label}] cloud-init meta data: {meta}")
    await act("pve_download_to_storage", {"node": "pve1", "storage": "local", "content": "iso", "wait": True,
                                          "url": "https://mirror.example.org/py.iso", "filename": "py.iso"})
    await act("pve_delete_volume", {"node": "pve1", "storage": "local", "volid": "local:iso/py.iso"})
    index = (await client.call_tool("pve_list_appliances", {"node": "pve1", "query": "alpine"})).structured_content
    alpine = index["appliances"][0]["template"]
    await act("pve_download_appliance", {"node": "pve1", "storage": "local", "template": alpine, "wait": True})
    # Operations: a replication job run now.
    await act("pve_run_replication", {"job": "101-0"})
    await act("pve_create_pool", {"poolid": "py", "comment": "python"})
    await act("pve_update_pool", {"poolid": "py", "vms": "162"})
    await act("pve_update_pool", {"poolid": "py", "vms": "162", "remove": True})
    await act("pve_delete_pool", {"poolid": "py"})
    # Firewall at guest scope (a write), then the destructive ones.
    await act("pve_add_firewall_rule", {"scope": "guest", "vmid": 100, "type": "in", "action": "ACCEPT",
                                        "proto": "tcp", "dport": "8080"})
    digest = (await client.call_tool("pve_get_firewall", {"scope": "guest", "vmid": 100})).structured_content["digest"]
    await act("pve_update_firewall_rule", {"scope": "guest", "vmid": 100, "pos": 0, "comment": "py", "digest": digest})
    digest = (await client.call_tool("pve_get_firewall", {"scope": "guest", "vmid": 100})).structured_content["digest"]
    await act("pve_delete_firewall_rule", {"scope": "guest", "vmid": 100, "pos": 0, "digest": digest})
    await act("pve_set_firewall_options", {"scope": "guest", "vmid": 100, "log_level_in": "info"})
    # HA: a guest under HA, moved by the HA manager, taken out again.
    await act("pve_set_ha_resource", {"sid": "ct:106", "comment": "python"})
    await act("pve_ha_migrate", {"sid": "ct:106", "node": "pve2", "mode": "relocate"})
    await act("pve_remove_ha_resource", {"sid": "ct:106"})
    log = await act("pve_get_node_log", {"node": "pve2", "service": "chrony", "lines": 5}, sent=None)
    check(len(log.get("lines", [])) == 5, f"[{label}] node log: {log}")
    # The generic tool: the clone made above, started through its own path.
    await act("pve_api_request", {"method": "POST", "path": "/nodes/pve1/qemu/160/status/start", "wait": True})

    # Inside a guest: only what the demo's policy names runs, once a person
    # saw the exact argv or path in the form.
    ran = await act("pve_guest_exec", {"vmid": 100, "command": ["df", "-h"]}, sent=None)
    check(ran.get("exit_code") == 0 and "Filesystem" in ran.get("stdout", ""), f"[{label}] exec: {ran}")
    check(any('["df","-h"]' in m for m in person.asked), f"[{label}] the exec form did not show the argv: {person.asked}")
    forms = len(person.asked)
    refused = await client.call_tool("pve_guest_exec", {"vmid": 100, "command": ["rm", "-rf", "/"]})
    check(refused.is_error and "closest" in text_of(refused), f"[{label}] rm was not refused: {text_of(refused)}")
    check(len(person.asked) == forms, f"[{label}] a refused exec asked a person")
    await act("pve_guest_file_write", {"vmid": 100, "path": "/tmp/py-note", "content": "hello"}, sent=None)
    read = await act("pve_guest_file_read", {"vmid": 100, "path": "/tmp/py-note"}, sent=None)
    check(read.get("content") == "hello", f"[{label}] file read: {read}")

    check(called == WRITES, f"[{label}] not called: {sorted(WRITES - called)}")
    check(len(person.asked) == len(DESTRUCTIVE), f"[{label}] {len(person.asked)} approval forms for {len(DESTRUCTIVE)} destructive calls: {person.asked}")
    # A write's form shows the request its dry run planned; a guarded read
    # (a guest file read) has no dry run, and its form names the file.
    def shows_what_runs(m):
        if "pve_dump_cloudinit" in m:
            # A guarded read: no dry run; its arguments name what it reads.
            return '"type":"meta"' in m and "Will send" not in m
        if "pve_get_node_log" in m:
            return '"service":"chrony"' in m and "Will send" not in m
        if "pve_guest_file_read" in m:
            return 'Path (exactly): "/tmp/py-note"' in m and "Will send" not in m
        return "Will send" in m and any(verb in m for verb in ("POST", "PUT", "DELETE"))
    check(all(shows_what_runs(m) for m in person.asked),
          f"[{label}] an approval form did not show what would run: {person.asked}")
    print(f"python-sdk writes [{label}]: all {len(WRITES)} write tools ok, {len(person.asked)} approved by form")


async def over_stdio(binary):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PVE_MCP_CACHE_DIR")}
    params = StdioServerParameters(command=binary, args=["demo", "--writes"], env=env)
    person = Person()
    # The 2025-era handshake: pve-mcp asks for approval with a server-to-client
    # elicitation request, which a session carries. A 2026-07-28 client is
    # asked inside the call instead (python_sdk_mrtr.py tests that).
    async with Client(params, mode="legacy", read_timeout_seconds=120, elicitation_callback=person) as client:
        await exercise(client, "stdio", person)


async def over_http(binary):
    token = secrets.token_hex(32)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PVE_MCP_CACHE_DIR")}
    env["MCP_AUTH_TOKEN"] = token
    server = subprocess.Popen(
        [binary, "demo", "--writes", "--http", "127.0.0.1:0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = None
    for line in server.stderr:
        if line.startswith(ENDPOINT_LINE):
            url = line[len(ENDPOINT_LINE):].strip()
            break
    if url is None:
        server.kill()
        raise SystemExit("python-sdk writes: pve-mcp never announced its endpoint")
    try:
        await wait_ready(url)
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx2.Timeout(30, read=300),
            trust_env=False,
        )
        person = Person()
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy",
                                read_timeout_seconds=120, elicitation_callback=person) as client:
            await exercise(client, "http", person)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


async def main():
    binary = sys.argv[1]
    await over_stdio(binary)
    await over_http(binary)


if __name__ == "__main__":
    asyncio.run(main())
