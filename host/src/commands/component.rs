//! `pve-mcp component --out DIR`: the embedded tool component and its WIT,
//! for another host to run (see docs/hosting.md). The bytes are exactly
//! the ones this binary runs, so the file's SHA-256 is the one
//! `pve-mcp --version` prints and the audit log's `server-start` records.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use super::exit::failure;
use crate::sandbox::component::{CONTRACT, EMBEDDED_SHA256, GUEST_WASM, WIT_FILES};

/// The component's file name in `DIR`.
pub const WASM_NAME: &str = "pve_tools.wasm";

/// Writes `DIR/pve_tools.wasm` and `DIR/wit/`.
pub fn run(out: &Path) -> ExitCode {
    match write(out) {
        Ok(()) => {
            println!(
                "wrote {} (sha256:{EMBEDDED_SHA256}) and {} ({CONTRACT})",
                out.join(WASM_NAME).display(),
                out.join("wit").display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => failure(&e),
    }
}

fn write(out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let wasm = out.join(WASM_NAME);
    std::fs::write(&wasm, GUEST_WASM).with_context(|| format!("writing {}", wasm.display()))?;
    for (name, text) in WIT_FILES {
        let path = out.join("wit").join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
