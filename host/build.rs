//! Builds the tool component (and the hostile test component) for
//! `wasm32-wasip2` with a nested cargo, so that `cargo build` of the host is
//! the only step a fresh checkout needs. The tool component is embedded in the
//! binary; the hostile one is only pointed to, for the end-to-end tests.
//!
//! `PVE_MCP_GUEST_WASM=/path/to/component.wasm` embeds a prebuilt component
//! instead (an audited build, or an offline packaging step).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .parent()
        .expect("host/ lives in the workspace")
        .to_path_buf();
    for watched in [
        "guest",
        "wit",
        "tests/hostile",
        "Cargo.toml",
        "Cargo.lock",
        "rust-toolchain.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=PVE_MCP_GUEST_WASM");

    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    // <target>/<profile>/build/<pkg>/out -> <target>: one wasm build shared by
    // debug and release host builds.
    let target_root = out_dir.ancestors().nth(4).unwrap_or(&out_dir).join("wasm");

    println!(
        "cargo:rustc-env=PVE_MCP_WIT_PACKAGE={}",
        wit_package(&root.join("wit/pve-tools.wit"))
    );

    if let Ok(prebuilt) = env::var("PVE_MCP_GUEST_WASM") {
        let prebuilt = PathBuf::from(prebuilt);
        if !prebuilt.is_file() {
            fail(&format!(
                "PVE_MCP_GUEST_WASM={} is not a file; unset it to build the component from guest/",
                prebuilt.display()
            ));
        }
        println!(
            "cargo:rustc-env=PVE_MCP_GUEST_WASM_PATH={}",
            prebuilt.display()
        );
        emit_sha256(&prebuilt);
        build_components(&root, &target_root, &["pve-mcp-hostile"]);
    } else {
        build_components(&root, &target_root, &["pve-mcp-guest", "pve-mcp-hostile"]);
        let guest = target_root.join(TARGET).join("wasm/pve_mcp_guest.wasm");
        println!(
            "cargo:rustc-env=PVE_MCP_GUEST_WASM_PATH={}",
            guest.display()
        );
        emit_sha256(&guest);
    }
    let hostile = target_root.join(TARGET).join("wasm/pve_mcp_hostile.wasm");
    println!(
        "cargo:rustc-env=PVE_MCP_HOSTILE_WASM_PATH={}",
        hostile.display()
    );
}

/// The embedded component's SHA-256, for `pve-mcp --version` and the
/// audit log's server-start record, computed once here rather than at every
/// start.
fn emit_sha256(wasm: &Path) {
    use sha2::{Digest, Sha256};
    let bytes =
        std::fs::read(wasm).unwrap_or_else(|e| fail(&format!("reading {}: {e}", wasm.display())));
    let hex: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("cargo:rustc-env=PVE_MCP_COMPONENT_SHA256={hex}");
}

/// The WIT package the component implements, e.g. `pve-mcp:guest@0.2.0`,
/// from the contract's `package` line.
fn wit_package(wit: &Path) -> String {
    let text = std::fs::read_to_string(wit)
        .unwrap_or_else(|e| fail(&format!("reading {}: {e}", wit.display())));
    text.lines()
        .find_map(|l| l.trim().strip_prefix("package "))
        .map(|p| p.trim_end_matches(';').trim().to_owned())
        .unwrap_or_else(|| fail(&format!("{} has no `package` line", wit.display())))
}

fn build_components(root: &Path, target_dir: &Path, packages: &[&str]) {
    ensure_target_installed();
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["build", "--profile", "wasm", "--target", TARGET])
        .arg("--target-dir")
        .arg(target_dir);
    for package in packages {
        cmd.args(["-p", package]);
    }
    if packages.contains(&"pve-mcp-hostile") {
        // The socket attempts import wasi:sockets, outside the world: they
        // prove the host's WASI context denies them even though it links them.
        cmd.args(["--features", "pve-mcp-hostile/sockets"]);
    }
    // The outer build's flags and wrappers are for the host target (and
    // clippy's wrapper would lint the guest twice); the nested build must not
    // inherit them.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "CARGO_PRIMARY_PACKAGE",
        "__CARGO_FIX_PLZ",
    ] {
        cmd.env_remove(var);
    }
    for (key, _) in env::vars() {
        if key.starts_with("CARGO_PROFILE_") || key.starts_with("CARGO_CFG_") {
            cmd.env_remove(key);
        }
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| fail(&format!("could not run cargo: {e}")));
    if !status.success() {
        fail(&format!(
            "building the wasm components ({}) failed; see the cargo output above",
            packages.join(", ")
        ));
    }
}

/// Installs the wasm target with rustup when it is missing. Rustup does not
/// do this by itself when `RUSTUP_AUTO_INSTALL=0`.
fn ensure_target_installed() {
    let toolchain = env::var("RUSTUP_TOOLCHAIN").ok();
    let mut list = Command::new("rustup");
    list.args(["target", "list", "--installed"]);
    if let Some(tc) = &toolchain {
        list.args(["--toolchain", tc]);
    }
    let Ok(output) = list.output() else {
        // No rustup: trust that the target is there, and let cargo say so if not.
        return;
    };
    if String::from_utf8_lossy(&output.stdout)
        .lines()
        .any(|l| l.trim() == TARGET)
    {
        return;
    }
    println!("cargo:warning=installing the {TARGET} target with rustup");
    let mut add = Command::new("rustup");
    add.args(["target", "add", TARGET]);
    if let Some(tc) = &toolchain {
        add.args(["--toolchain", tc]);
    }
    match add.status() {
        Ok(s) if s.success() => {}
        _ => fail(&format!(
            "the {TARGET} target is missing and `rustup target add {TARGET}` failed; install it and rebuild"
        )),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}
