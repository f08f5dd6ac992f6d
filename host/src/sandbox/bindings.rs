//! The host side of the `pve-tools` world in `wit/pve-tools.wit`, generated
//! at build time.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "pve-tools",
    exports: { default: async },
    with: {
        "wasi:http": wasmtime_wasi_http::p2::bindings::http,
        "wasi:io": wasmtime_wasi::p2::bindings::io,
        "wasi:cli": wasmtime_wasi::p2::bindings::cli,
        "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        "wasi:filesystem": wasmtime_wasi::p2::bindings::filesystem,
        "wasi:random": wasmtime_wasi::p2::bindings::random,
    },
});
