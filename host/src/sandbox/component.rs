//! Compiling the tool component, with a cache of compiled artifacts so a
//! start-up does not pay Cranelift's ~250 ms every time.
//!
//! Artifacts are keyed by the component's SHA-256 and the engine's
//! compatibility hash, live in a directory only this user can write, and are
//! only loaded when this user owns them: `Component::deserialize` trusts its
//! input completely, so it must only ever see files this host wrote.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use anyhow::Context;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The tool component built from `guest/` and embedded at build time.
pub static GUEST_WASM: &[u8] = include_bytes!(env!("PVE_MCP_GUEST_WASM_PATH"));

/// Which component to run.
#[derive(Debug, Clone)]
pub enum ComponentSource {
    /// The one built from `guest/` and embedded in this binary.
    Embedded,
    /// Another build of a component implementing the same world.
    File(PathBuf),
}

/// Where compiled artifacts go, or nowhere.
#[derive(Debug, Clone)]
pub enum CacheDir {
    /// `$PVE_MCP_CACHE_DIR`, else the user's cache dir + `pve-mcp`.
    Default,
    /// A directory given explicitly.
    At(PathBuf),
    /// Compile every time.
    Disabled,
}

impl CacheDir {
    fn resolve(&self) -> Option<PathBuf> {
        match self {
            CacheDir::Disabled => None,
            CacheDir::At(p) => Some(p.clone()),
            CacheDir::Default => std::env::var_os("PVE_MCP_CACHE_DIR")
                .map(PathBuf::from)
                .or_else(|| dirs::cache_dir().map(|d| d.join("pve-mcp"))),
        }
    }
}

/// How a component was obtained, for the log and `--version`-style output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadedFrom {
    /// Loaded from a cached compiled artifact.
    Cache,
    /// Compiled now (and cached if possible).
    Compiled,
}

/// Compiles `wasm`, or loads its cached compiled form.
pub fn load(
    engine: &Engine,
    wasm: &[u8],
    cache: &CacheDir,
) -> anyhow::Result<(Component, LoadedFrom)> {
    let Some(dir) = cache.resolve() else {
        return Ok((compile(engine, wasm)?, LoadedFrom::Compiled));
    };
    let path = dir.join(artifact_name(engine, wasm));
    if trusted_artifact(&path) {
        // SAFETY: the file is in our private cache directory, owned by this
        // user and not writable by anyone else, and its name binds it to
        // this exact component and engine configuration.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => return Ok((component, LoadedFrom::Cache)),
            Err(e) => tracing::warn!("ignoring unusable cached artifact {}: {e}", path.display()),
        }
    }
    let component = compile(engine, wasm)?;
    if let Err(e) = store(&dir, &path, &component) {
        tracing::debug!(
            "could not cache the compiled component in {}: {e:#}",
            dir.display()
        );
    }
    Ok((component, LoadedFrom::Compiled))
}

fn compile(engine: &Engine, wasm: &[u8]) -> anyhow::Result<Component> {
    Component::new(engine, wasm)
        .map_err(anyhow::Error::from)
        .context("the file is not a valid WebAssembly component")
}

fn artifact_name(engine: &Engine, wasm: &[u8]) -> String {
    let digest = Sha256::digest(wasm);
    let mut hasher = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}-{:016x}.cwasm", hasher.finish())
}

fn store(dir: &Path, path: &Path, component: &Component) -> anyhow::Result<()> {
    create_private_dir(dir)?;
    let bytes = component.serialize()?;
    let tmp = dir.join(format!(".{}.tmp", std::process::id()));
    std::fs::write(&tmp, &bytes)?;
    // Rename is atomic, so a concurrent start never reads half a file.
    std::fs::rename(&tmp, path)?;
    Ok(())
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn trusted_artifact(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let dir_ok = path
        .parent()
        .and_then(|d| std::fs::metadata(d).ok())
        .is_some_and(|d| d.uid() == current_uid() && d.mode() & 0o022 == 0);
    meta.is_file() && meta.uid() == current_uid() && meta.mode() & 0o022 == 0 && dir_ok
}

#[cfg(not(unix))]
fn trusted_artifact(path: &Path) -> bool {
    path.is_file()
}

#[cfg(unix)]
fn current_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    // The owner of a file we just created is our effective uid; /proc/self is
    // always ours and avoids a libc dependency.
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX)
}
