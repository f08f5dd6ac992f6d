//! `POST /nodes/{node}/storage/{storage}/download-url` (pve-storage's
//! `download_url`) and the `download` task it shares with appliance
//! downloads: `PVE::Tools::download_file_from_url`, i.e. `wget` with
//! `--progress=dot:giga`, an optional checksum, then the file in place.
//!
//! The simulated web serves [`download_bytes`] at every URL, so tests can
//! compute the checksum a download verifies ([`download_checksum`]). A URL
//! with a path segment `404` answers `404 Not Found`. The size the listing
//! and wget's log show is a plausible one derived from the URL; the bytes
//! hashed are the short text.

use sha2::Digest;

use super::Ctx;
use super::act::{self, die};
use super::storage_cfg::{self, check_enabled, fs_base, has_content};
use crate::digests;
use crate::errors::{ApiError, HandlerResult};
use crate::state::{Cluster, Volume};
use crate::work::{self, Spec, stamp};

/// What the simulator's web serves at `url` (any URL, but those with a
/// `404` path segment): the bytes a download's checksum is computed over.
pub fn download_bytes(url: &str) -> Vec<u8> {
    format!("pve-sim download of {url}\n").into_bytes()
}

/// The checksum PVE would compute for a download of `url` with
/// `checksum-algorithm` `algorithm` (`md5`, `sha1`, `sha224`, `sha256`,
/// `sha384`, `sha512`); `None` for another algorithm.
pub fn download_checksum(url: &str, algorithm: &str) -> Option<String> {
    digests::hex_digest(algorithm, &download_bytes(url))
}

/// Whether the simulated web answers `404 Not Found` for `url`.
fn not_found(url: &str) -> bool {
    path_of(url).split('/').any(|seg| seg == "404")
}

fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let hostport = &rest[..end];
    hostport.rsplit_once('@').map_or(hostport, |(_, h)| h)
}

fn path_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    path.split(['?', '#']).next().unwrap_or("")
}

fn hash64(s: &str) -> u64 {
    let d = sha2::Sha256::digest(s.as_bytes());
    u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// A plausible size for the file at `url`, by content type.
fn size_of(url: &str, content: &str) -> u64 {
    let h = hash64(url);
    let mib = 1u64 << 20;
    match content {
        "vztmpl" => 80 * mib + h % (320 * mib),
        "import" => 512 * mib + h % (4096 * mib),
        _ => 300 * mib + h % (3072 * mib),
    }
}

/// `PVE::Tools::cmd2string`: arguments quoted for a shell when needed.
fn shell_quote(args: &[&str]) -> String {
    args.iter()
        .map(|a| {
            let safe = !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_./:=+-@%,".contains(&b));
            if safe {
                a.to_string()
            } else {
                format!("'{}'", a.replace('\'', "'\"'\"'"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A file to fetch into a storage.
pub(crate) struct Fetch {
    pub url: String,
    /// Path of the file on the node.
    pub dest: String,
    pub volid: String,
    pub storage: String,
    pub shared: bool,
    pub content: &'static str,
    pub format: &'static str,
    /// `(algorithm, expected)`: the strongest given wins, as in PVE.
    pub checksum: Option<(String, String)>,
    pub verify_certificates: bool,
    /// `compression` (ISO only).
    pub compression: Option<String>,
}

/// The bytes of a file already in a storage: what it was downloaded from,
/// or, for a file the simulator did not fetch, a text naming it.
fn existing_bytes(c: &Cluster, volid: &str) -> Vec<u8> {
    match c.file_origins.get(volid) {
        Some(url) => download_bytes(url),
        None => format!("pve-sim file {volid}\n").into_bytes(),
    }
}

/// Starts a `download` task with id `task_id` fetching `f` on `node`.
pub(crate) fn spawn(c: &mut Cluster, node: &str, task_id: &str, user: &str, f: Fetch) -> String {
    let mut spec = Spec::new(node, "download", task_id, user);
    spec.line(0.0, format!("downloading {} to {}", f.url, f.dest));
    let existing = storage_cfg::volume_on(c, &f.volid, node).is_some();
    if existing {
        let Some((algo, expected)) = &f.checksum else {
            let spec = spec.fail(format!("refusing to override existing file '{}'", f.dest));
            return work::spawn(c, spec);
        };
        let got = digests::hex_digest(algo, &existing_bytes(c, &f.volid)).unwrap_or_default();
        if got.eq_ignore_ascii_case(expected) {
            spec.line(
                0.5,
                "calculating checksum of existing file...OK, got correct file already, no need to download",
            );
            return work::spawn(c, spec);
        }
        spec.line(0.5, "calculating checksum of existing file...");
        let spec = spec.fail(format!(
            "checksum mismatch: got '{got}' != expect '{expected}', aborting"
        ));
        return work::spawn(c, spec);
    }
    if f.compression.is_some() && f.content != "iso" {
        let spec = spec.fail(format!("decompression not supported for {}", f.content));
        return work::spawn(c, spec);
    }
    let tmp = format!("{}.tmp_dwnl.{}", f.dest, work::next_pid(c));
    let mut cmd = vec!["wget", "--progress=dot:giga", "-O", &tmp, &f.url];
    if !f.verify_certificates {
        cmd.push("--no-check-certificate");
    }
    let cmdline = shell_quote(&cmd);
    let host = host_of(&f.url).to_string();
    let (name, port) = match host.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => (h.to_string(), p.to_string()),
        _ => {
            let port = if f.url.starts_with("https") {
                "443"
            } else {
                "80"
            };
            (host.clone(), port.to_string())
        }
    };
    let ip = format!("203.0.113.{}", 10 + hash64(&name) % 200);
    spec.line(0.02, format!("--{}--  {}", stamp(0), f.url));
    spec.line(0.03, format!("Resolving {name} ({name})... {ip}"));
    spec.line(
        0.04,
        format!("Connecting to {name} ({name})|{ip}|:{port}... connected."),
    );
    if not_found(&f.url) {
        spec.line(0.1, "HTTP request sent, awaiting response... 404 Not Found");
        spec.line(0.11, format!("{} ERROR 404: Not Found.", stamp(1)));
        spec.line(0.12, "");
        let spec = spec.fail(format!(
            "download failed: command '{cmdline}' failed: exit code 8"
        ));
        return work::spawn(c, spec);
    }
    let size = size_of(&f.url, f.content);
    let gib = size as f64 / (1u64 << 30) as f64;
    let human = if gib >= 1.0 {
        format!("{gib:.1}G")
    } else {
        format!("{}M", size >> 20)
    };
    let mime = if f.content == "iso" {
        "application/x-iso9660-image"
    } else {
        "application/octet-stream"
    };
    spec.line(0.1, "HTTP request sent, awaiting response... 200 OK");
    spec.line(0.11, format!("Length: {size} ({human}) [{mime}]"));
    spec.line(0.12, format!("Saving to: '{tmp}'"));
    spec.line(0.13, "");
    // dot:giga: a dot per MiB, 32 to a line; a sample of the lines.
    let lines = size.div_ceil(32 << 20).max(1);
    let shown = lines.min(10);
    for i in 0..shown {
        let line = if i + 1 == shown {
            lines - 1
        } else {
            i * lines / shown
        };
        let done = ((line + 1) * (32 << 20)).min(size);
        let pct = done * 100 / size.max(1);
        let eta = if done >= size {
            "=27s".to_string()
        } else {
            format!(" {}s", (size - done) / (96 << 20))
        };
        spec.line(
            0.15 + 0.7 * (i + 1) as f64 / shown as f64,
            format!(
                "{:>7}K ........ ........ ........ ........ {pct:>3}% 96.4M{eta}",
                line * 32 * 1024
            ),
        );
    }
    spec.line(
        0.9,
        format!("{} (96.4 MB/s) - '{tmp}' saved [{size}/{size}]", stamp(27)),
    );
    spec.line(0.9, "");
    if let Some((algo, expected)) = &f.checksum {
        let got = download_checksum(&f.url, algo).unwrap_or_default();
        if !got.eq_ignore_ascii_case(expected) {
            spec.line(0.92, "calculating checksum...");
            let spec = spec.fail(format!(
                "checksum mismatch: got '{got}' != expect '{expected}'"
            ));
            return work::spawn(c, spec);
        }
        spec.line(0.92, "calculating checksum...OK, checksum verified");
    }
    if f.compression.is_some() {
        let decomp = format!("{}.tmp_dcom.{}", f.dest, work::next_pid(c));
        spec.line(0.94, format!("decompressing {tmp} to {decomp}"));
    }
    spec.line(
        0.98,
        format!("download of '{}' to '{}' finished", f.url, f.dest),
    );
    let volume = Volume {
        storage: f.storage.clone(),
        node: (!f.shared).then(|| node.to_string()),
        volid: f.volid.clone(),
        content: f.content,
        format: f.format,
        size,
        ctime: None,
        vmid: None,
        notes: None,
        protected: false,
        subtype: None,
        verification: None,
        encrypted: None,
    };
    let (volid, url) = (f.volid, f.url);
    let spec = spec.effect(move |c: &mut Cluster| {
        let mut v = volume;
        v.ctime = Some(crate::util::now_secs());
        storage_cfg::put_volume(c, v);
        c.file_origins.insert(volid, url);
    });
    work::spawn(c, spec)
}

/// `normalize_content_filename`: the last path component, with every
/// character but `[a-zA-Z0-9_.-]` made `_`.
fn normalize(name: &str) -> String {
    let name = name.strip_suffix('\n').unwrap_or(name);
    let last = name.rsplit(['/', '\\']).next().unwrap_or(name);
    last.chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '-') {
                ch
            } else {
                '_'
            }
        })
        .collect()
}

/// The format of a file name for a content type, if its extension fits
/// (`$ISO_EXT_RE_0`, `$VZTMPL_EXT_RE_1`, `$UPLOAD_IMPORT_EXT_RE_1`).
fn file_format(content: &str, name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    let stem_ok = |ext: &str| name.len() > ext.len();
    match content {
        "iso" => [".iso", ".img"]
            .iter()
            .any(|e| lower.ends_with(e) && stem_ok(e))
            .then_some("iso"),
        "vztmpl" => [
            (".tar", "tar"),
            (".tar.gz", "tgz"),
            (".tar.xz", "txz"),
            (".tar.zst", "tzst"),
            (".tar.bz2", "tbz2"),
        ]
        .iter()
        .find(|(e, _)| lower.ends_with(e) && stem_ok(e))
        .map(|(_, f)| *f),
        "import" => ["ova", "qcow2", "raw", "vmdk"]
            .iter()
            .find(|e| name.ends_with(&format!(".{e}")) && stem_ok(e))
            .map(|e| storage_cfg::leak_format(e)),
        _ => None,
    }
}

/// The subdirectory of a file storage a content type lives in.
pub(crate) fn content_dir(content: &str) -> &'static str {
    match content {
        "iso" => "template/iso",
        "vztmpl" => "template/cache",
        "import" => "import",
        _ => "",
    }
}

/// `POST /nodes/{node}/storage/{storage}/download-url`.
pub(crate) fn download_url(ctx: &Ctx<'_>) -> HandlerResult {
    // The schema's `['or', ['perm', '/', [Sys.Audit, Sys.Modify]], ['perm',
    // '/nodes/{node}', [Sys.AccessNetwork]]]` half; the router checked the
    // storage half.
    let sys = ctx.can("/", "Sys.Audit") && ctx.can("/", "Sys.Modify");
    if !sys && !ctx.can(&format!("/nodes/{}", ctx.node), "Sys.AccessNetwork") {
        return Err(ApiError::new(403, "Permission check failed\n"));
    }
    let p = ctx.params;
    let mut c = ctx.cluster_mut();
    let id = p.path("storage");
    let s = check_enabled(&c, id, ctx.node)?;
    let Some(base) = fs_base(s) else {
        return Err(die(format!(
            "can't upload to storage type '{}', not a file based storage!",
            s.plugintype
        )));
    };
    let content: &'static str = match p.get("content").unwrap_or("") {
        "iso" => "iso",
        "vztmpl" => "vztmpl",
        _ => "import",
    };
    if !has_content(s, content) {
        return Err(die(format!(
            "storage '{id}' is not configured for content-type '{content}'"
        )));
    }
    let filename = normalize(p.get("filename").unwrap_or(""));
    let Some(format) = file_format(content, &filename) else {
        let msg = if content == "import" {
            "invalid filename or wrong extension"
        } else {
            "wrong file extension"
        };
        return Err(ApiError::param("filename", msg));
    };
    let checksum = match (p.get("checksum"), p.get("checksum-algorithm")) {
        (Some(sum), Some(algo)) if !sum.is_empty() => Some((algo.to_string(), sum.to_string())),
        _ => None,
    };
    let fetch = Fetch {
        url: p.get("url").unwrap_or("").to_string(),
        dest: format!("{base}/{}/{filename}", content_dir(content)),
        volid: format!("{id}:{content}/{filename}"),
        storage: id.to_string(),
        shared: s.shared,
        content,
        format,
        checksum,
        verify_certificates: p.get("verify-certificates") != Some("0"),
        compression: p.get("compression").map(str::to_string),
    };
    let user = act::user(ctx);
    // `encode_text` leaves a normalised name as it is.
    act::upid(spawn(&mut c, ctx.node, &filename, &user, fetch))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_urls() {
        assert_eq!(normalize("../a b/c d?.iso"), "c_d_.iso");
        assert_eq!(file_format("iso", "x.ISO"), Some("iso"));
        assert_eq!(file_format("iso", ".iso"), None);
        assert_eq!(file_format("vztmpl", "x.tar.zst"), Some("tzst"));
        assert_eq!(file_format("vztmpl", "x.tar.gz.sig"), None);
        assert_eq!(file_format("import", "disk.qcow2"), Some("qcow2"));
        assert_eq!(file_format("import", "disk.QCOW2"), None);
        assert_eq!(
            host_of("https://u@mirror.example:8443/x"),
            "mirror.example:8443"
        );
        assert!(not_found("https://example.com/404/x.iso"));
        assert!(!not_found("https://example.com/x404.iso"));
        assert_eq!(
            shell_quote(&["wget", "-O", "/tmp/x", "https://e.x/a?b=1&c"]),
            "wget -O /tmp/x 'https://e.x/a?b=1&c'"
        );
    }
}
