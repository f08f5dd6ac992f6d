// Hosts the pve-mcp tool component in Node.js through jco, a host that is
// not pve-mcp: the component was transpiled with `jco transpile` (its WASI
// imports served by @bytecodealliance/preview2-shim) and its endpoint is
// pve-mcp's egress proxy, which holds the Proxmox token and the gate.
//
// Usage: node jco_host.mjs OUT_DIR BASE_URL
// Prints one JSON object: the tools listed and the answers of
// pve_list_vms and pve_get_vm_status (vmid 100), or the error.

import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { _setEnv, _setArgs } from "@bytecodealliance/preview2-shim/cli";

const [outDir, baseUrl] = process.argv.slice(2);
if (!outDir || !baseUrl) {
  console.error("usage: node jco_host.mjs OUT_DIR BASE_URL");
  process.exit(2);
}

// The world gives a component no environment and no arguments; the
// shim's defaults are Node's own.
_setEnv({});
_setArgs([]);

const { tools } = await import(pathToFileURL(join(outDir, "pve_tools.js")));
const ctx = {
  endpoints: [{ name: "default", baseUrl }],
  requestId: "jco-1",
  waitLimitSecs: 60,
};

// A tool error is thrown as a ComponentError whose payload is the WIT
// `tool-error` variant.
function call(name, args) {
  try {
    const out = tools.callTool(ctx, name, JSON.stringify(args));
    return { ok: true, isError: out.isError, summary: out.summary, structured: JSON.parse(out.structured) };
  } catch (e) {
    return { ok: false, error: e.payload ?? String(e) };
  }
}

const listed = tools.listTools().map((t) => t.name);
const vms = call("pve_list_vms", {});
const status = call("pve_get_vm_status", { vmid: 100 });
const { reports } = await import("./jco_progress.mjs");
console.log(JSON.stringify({ listed, vms, status, progress_reports: reports.length }));
