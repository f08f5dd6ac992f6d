//! Compiling the tool component, with a cache of compiled artifacts so a
//! start-up does not pay Cranelift's half second every time.
//!
//! A server's first start (no artifact yet) need not pay it either: it can
//! compile with Winch, wasmtime's baseline compiler, which is several times
//! faster and makes slower code, and leave Cranelift to fill the cache in
//! the background for every later start ([`FirstCompile::Quick`]).
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

/// The SHA-256 of [`GUEST_WASM`], computed at build time.
pub const EMBEDDED_SHA256: &str = env!("PVE_MCP_COMPONENT_SHA256");

/// The WIT package the host implements, e.g. `pve-mcp:guest@0.2.0`.
pub const CONTRACT: &str = env!("PVE_MCP_WIT_PACKAGE");

/// The contract's WIT files, by path under `wit/`, as `pve-mcp component`
/// writes them next to the component.
pub const WIT_FILES: &[(&str, &str)] = &[
    ("pve-tools.wit", include_str!("../../../wit/pve-tools.wit")),
    (
        "deps/cli/cli.wit",
        include_str!("../../../wit/deps/cli/cli.wit"),
    ),
    (
        "deps/clocks/clocks.wit",
        include_str!("../../../wit/deps/clocks/clocks.wit"),
    ),
    (
        "deps/filesystem/filesystem.wit",
        include_str!("../../../wit/deps/filesystem/filesystem.wit"),
    ),
    (
        "deps/http/http.wit",
        include_str!("../../../wit/deps/http/http.wit"),
    ),
    (
        "deps/io/io.wit",
        include_str!("../../../wit/deps/io/io.wit"),
    ),
    (
        "deps/random/random.wit",
        include_str!("../../../wit/deps/random/random.wit"),
    ),
    (
        "deps/sockets/sockets.wit",
        include_str!("../../../wit/deps/sockets/sockets.wit"),
    ),
];

/// What a component imports, by name (`wasi:http/outgoing-handler@0.2.12`).
pub fn imports(wasm: &[u8]) -> anyhow::Result<Vec<String>> {
    let engine = Engine::default();
    let component = Component::new(&engine, wasm)
        .map_err(anyhow::Error::from)
        .context("not a component wasmtime loads")?;
    Ok(component
        .component_type()
        .imports(&engine)
        .map(|(name, _)| name.to_string())
        .collect())
}

/// The imports among `imports` that the world in `wit/pve-tools.wit` does
/// not declare (counting the interfaces its imports pull in): a host that
/// links exactly the world could not instantiate a component that has any.
pub fn undeclared(imports: &[String]) -> Vec<String> {
    let wit = WIT_FILES[0].1;
    let (namespace, version) = CONTRACT.split_once('@').unwrap_or((CONTRACT, ""));
    // `import progress;` names an interface of this package.
    let mut allowed: Vec<String> = wit
        .lines()
        .filter_map(|l| l.trim().strip_prefix("import "))
        .map(|l| l.trim_end_matches(';'))
        .map(|l| match l.contains(':') {
            true => l.to_string(),
            false => format!("{namespace}/{l}@{version}"),
        })
        .collect();
    for implied in [
        "wasi:io/error",
        "wasi:io/poll",
        "wasi:io/streams",
        "wasi:http/types",
        "wasi:filesystem/types",
    ] {
        allowed.push(format!("{implied}@0.2.12"));
    }
    imports
        .iter()
        .filter(|i| !allowed.contains(i))
        .cloned()
        .collect()
}

/// Which component to run.
#[derive(Debug, Clone)]
pub enum ComponentSource {
    /// The one built from `guest/` and embedded in this binary.
    Embedded,
    /// Another build of a component implementing the same world.
    File(PathBuf),
}

/// Which code runs: the component's hash and where it came from, for the
/// audit log's server-start record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentIdentity {
    /// Hex SHA-256 of the component's bytes.
    pub sha256: String,
    /// `embedded`, or the file `--component` named.
    pub source: String,
}

impl ComponentIdentity {
    /// The identity of `wasm`, loaded from `source`. The embedded
    /// component's hash was computed at build time.
    pub fn of(source: &ComponentSource, wasm: &[u8]) -> ComponentIdentity {
        match source {
            ComponentSource::Embedded => ComponentIdentity {
                sha256: EMBEDDED_SHA256.to_owned(),
                source: "embedded".to_owned(),
            },
            ComponentSource::File(path) => ComponentIdentity {
                sha256: Sha256::digest(wasm)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect(),
                source: path.display().to_string(),
            },
        }
    }
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
    /// Whether compiled artifacts are kept somewhere (not `--no-cache`).
    pub fn enabled(&self) -> bool {
        self.resolve().is_some()
    }

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
    /// Compiled now with Cranelift (and cached if possible).
    Compiled,
    /// Compiled now with Winch; Cranelift is filling the cache meanwhile.
    Quick,
}

/// How to compile when the cache has no artifact for the component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstCompile {
    /// With Cranelift, before going on: what one-shot commands do, since
    /// filling the cache is often why they run (`pve-mcp tools` in the
    /// Dockerfile), and what any start does without a cache directory.
    Optimised,
    /// With Winch, and Cranelift in the background into the cache: what a
    /// server does, so that its first start is as quick as the others.
    Quick,
}

/// The cached compiled form of `wasm` for this engine, if the cache has a
/// trusted one.
pub fn cached(engine: &Engine, wasm: &[u8], cache: &CacheDir) -> Option<Component> {
    let path = cache.resolve()?.join(artifact_name(engine, wasm));
    if !trusted_artifact(&path) {
        return None;
    }
    // SAFETY: the file is in our private cache directory, owned by this
    // user and not writable by anyone else, and its name binds it to this
    // exact component and engine configuration.
    match unsafe { Component::deserialize_file(engine, &path) } {
        Ok(component) => Some(component),
        Err(e) => {
            tracing::warn!("ignoring unusable cached artifact {}: {e}", path.display());
            None
        }
    }
}

/// Compiles `wasm` and stores the result in the cache, if there is one.
/// Not being able to cache is logged, not an error: the component runs.
pub fn compile_into_cache(
    engine: &Engine,
    wasm: &[u8],
    cache: &CacheDir,
) -> anyhow::Result<Component> {
    let component = compile(engine, wasm)?;
    let Some(dir) = cache.resolve() else {
        return Ok(component);
    };
    let path = dir.join(artifact_name(engine, wasm));
    let stored = component
        .serialize()
        .map_err(|e| NotCached::Failed(e.into()))
        .and_then(|bytes| store(&dir, &path, &bytes));
    match stored {
        Ok(()) => {}
        // An operator should hear about this one: the directory is unsafe.
        Err(refused @ NotCached::Unsafe(_)) => tracing::warn!("{refused}"),
        Err(e) => tracing::debug!(
            "could not cache the compiled component in {}: {e}",
            dir.display()
        ),
    }
    Ok(component)
}

/// Compiles `wasm` with `engine` (Cranelift) into the cache on a thread of
/// its own, for the next start, and hands the result to `install`, for
/// this process's calls from then on.
pub fn optimise_in_background(
    engine: Engine,
    wasm: Vec<u8>,
    cache: CacheDir,
    install: impl FnOnce(Engine, Component) + Send + 'static,
) {
    let spawned = std::thread::Builder::new()
        .name("pve-mcp-compile".into())
        .spawn(move || {
            let started = std::time::Instant::now();
            match compile_into_cache(&engine, &wasm, &cache) {
                Ok(component) => {
                    tracing::debug!(
                        ms = started.elapsed().as_millis() as u64,
                        "component compiled with Cranelift"
                    );
                    install(engine, component);
                }
                Err(e) => tracing::warn!("compiling the component with Cranelift failed: {e:#}"),
            }
        });
    if let Err(e) = spawned {
        tracing::debug!("not filling the compile cache in the background: {e}");
    }
}

/// Compiles `wasm` with whatever compiler `engine` was configured with.
pub fn compile(engine: &Engine, wasm: &[u8]) -> anyhow::Result<Component> {
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

/// Why a compiled component was not cached.
#[derive(Debug, thiserror::Error)]
enum NotCached {
    /// The directory is someone else's or others can write it, so an
    /// artifact there could be swapped for code this host would later load
    /// without checks; the text names the directory and the fix.
    #[error("{0}")]
    Unsafe(String),
    /// Writing the artifact failed.
    #[error("{0:#}")]
    Failed(anyhow::Error),
}

impl From<std::io::Error> for NotCached {
    fn from(e: std::io::Error) -> Self {
        NotCached::Failed(e.into())
    }
}

fn store(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), NotCached> {
    use std::io::Write;
    create_private_dir(dir)?;
    private_dir(dir).map_err(NotCached::Unsafe)?;
    // A fresh random name, created with O_EXCL: nothing planted in the
    // directory (a symlink at a name we could be predicted to use) is ever
    // opened, let alone written through.
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    // Rename is atomic, so a concurrent start never reads half a file, and
    // it replaces a symlink at `path` rather than following it.
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Whether `dir` may hold artifacts this host later loads: owned by this
/// user and writable by nobody else. Otherwise, why not and what to do.
#[cfg(unix)]
fn private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let shown = dir.display();
    let elsewhere =
        "point PVE_MCP_CACHE_DIR at a directory of your own (--no-cache turns caching off)";
    let meta = std::fs::metadata(dir)
        .map_err(|e| format!("not caching the compiled component: cannot read {shown}: {e}"))?;
    if meta.uid() != current_uid() {
        return Err(format!(
            "not caching the compiled component: {shown} is owned by uid {}, not by this \
             user (uid {}); {elsewhere}",
            meta.uid(),
            current_uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "not caching the compiled component: {shown} can be written by group or others \
             (mode {:o}); run `chmod 700 {shown}`, or {elsewhere}",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn private_dir(_dir: &Path) -> Result<(), String> {
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
    let dir_ok = path.parent().is_some_and(|d| private_dir(d).is_ok());
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

#[cfg(all(test, unix))]
mod tests {

    /// `WIT_FILES` is the whole of `wit/`, byte for byte: a file added
    /// there must be added to what `pve-mcp component` writes.
    #[test]
    fn the_embedded_wit_is_the_whole_contract() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
        let mut on_disk = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let name = path.strip_prefix(&root).unwrap().display().to_string();
                    on_disk.push((name, std::fs::read_to_string(&path).unwrap()));
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<(String, String)> = WIT_FILES
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
    }
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    const ARTIFACT: &str = "0123-abcd.cwasm";

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Symlinks planted at every name a store could predict (the old
    /// `.{pid}.tmp`, the artifact itself) are replaced or ignored, never
    /// written through.
    #[test]
    fn a_planted_symlink_is_never_followed() {
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, b"original").unwrap();
        let cache = private_dir();
        let dir = cache.path();
        for name in [format!(".{}.tmp", std::process::id()), ARTIFACT.into()] {
            symlink(&victim, dir.join(name)).unwrap();
        }
        let path = dir.join(ARTIFACT);
        // The store may succeed or fail, but never through the links.
        let _ = store(dir, &path, b"compiled");
        assert_eq!(std::fs::read(&victim).unwrap(), b"original");
        if let Ok(meta) = std::fs::symlink_metadata(&path)
            && meta.is_file()
        {
            assert_eq!(std::fs::read(&path).unwrap(), b"compiled");
        }
    }

    #[test]
    fn a_directory_others_can_write_is_refused() {
        let cache = private_dir();
        let dir = cache.path();
        for mode in [0o777, 0o770, 0o702] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = store(dir, &dir.join(ARTIFACT), b"compiled")
                .map(|_| ())
                .expect_err("a shared directory must be refused");
            let err = err.to_string();
            assert!(
                err.contains(&dir.display().to_string()) && err.contains("chmod 700"),
                "{mode:o}: {err}"
            );
            assert!(names(dir).is_empty(), "{mode:o}: {:?}", names(dir));
        }
    }

    #[test]
    fn a_directory_another_user_owns_is_refused() {
        let cache = private_dir();
        let dir = cache.path();
        // Only root can give a directory away; elsewhere there is nothing
        // to test.
        if std::os::unix::fs::chown(dir, Some(65534), None).is_err() {
            return;
        }
        let err = store(dir, &dir.join(ARTIFACT), b"compiled")
            .map(|_| ())
            .expect_err("another user's directory must be refused");
        assert!(err.to_string().contains("owned by"), "{err}");
        assert!(names(dir).is_empty(), "{:?}", names(dir));
    }

    #[test]
    fn a_private_directory_caches_the_artifact() {
        let cache = private_dir();
        let dir = cache.path();
        let path = dir.join(ARTIFACT);
        store(dir, &path, b"compiled").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"compiled");
        assert!(trusted_artifact(&path));
        // No temporary file is left behind.
        assert_eq!(names(dir), [ARTIFACT]);
    }
}
