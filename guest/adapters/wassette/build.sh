#!/usr/bin/env bash
# Builds the wassette component: the WASI-only tool component and the
# adapter (profile `wasm`), composed by compose.sh with the descriptions.
#
#   build.sh OUT.wasm
#
# wasm-tools comes from target/wassette (install.sh installs it there).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=$1
here=$root/guest/adapters/wassette
wasm_tools=$root/target/wassette/bin/wasm-tools
[ -x "$wasm_tools" ] || bash "$here/install.sh" --wasm-tools-only "$root/target/wassette" >/dev/null
cd "$root"
cargo build -q --profile wasm --target wasm32-wasip2 -p pve-mcp-guest --features no-progress-import \
    --target-dir "$root/target/component-cli"
cargo build -q --profile wasm --target wasm32-wasip2 -p pve-mcp-wassette --target-dir "$root/target"
mkdir -p "$(dirname "$out")"
bash "$here/compose.sh" "$wasm_tools" "$root/target/wasm32-wasip2/wasm/pve_mcp_wassette.wasm" \
    "$root/target/component-cli/wasm32-wasip2/wasm/pve_mcp_guest.wasm" "$out"
echo "wrote $out ($(wc -c <"$out") bytes)"
