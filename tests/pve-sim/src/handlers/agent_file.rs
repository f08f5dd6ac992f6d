//! `GET agent/file-read` and `POST agent/file-write` on the simulated
//! guest's files ([`crate::guest_os`]).

use serde_json::{Map, Value};

use super::agent::{agent_error, available, check_agent_error};
use super::{Ctx, pbool};
use crate::errors::{ApiError, HandlerResult, Reply};
use crate::util::base64;

/// PVE's `$MAX_READ_SIZE`: file-read's default and largest `count`.
pub(crate) const MAX_READ_SIZE: u64 = 16 * 1024 * 1024;

/// qemu-ga's `safe_open_or_create` error, as `check_agent_error` relays it.
fn open_failed(file: &str, mode: &str, why: &str) -> ApiError {
    agent_error(&format!(
        "failed to open file '{file}' (mode: '{mode}'): {why}"
    ))
}

/// Perl hands the read bytes to its JSON encoder as a byte string, one
/// character per byte; the simulator keeps valid UTF-8 as text (so what
/// file-write stored reads back the same) and maps other data byte by
/// byte to U+0000..U+00FF like Perl.
fn as_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

fn int_param(ctx: &Ctx<'_>, name: &str) -> Option<u64> {
    ctx.params.get(name).and_then(|v| v.trim().parse().ok())
}

/// `GET agent/file-read`: `{"content": ..., "truncated": 1?}`. PVE 9 reads
/// `count` bytes from `offset` and sends them base64-encoded with
/// `decode=0`; PVE 8 always reads from the start, up to 16 MiB, decoded.
pub(crate) fn file_read(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let pve8 = c.is_pve8(ctx.node);
    let vmid = {
        let g = available(&c, ctx)?;
        check_agent_error(g)?;
        g.vmid
    };
    let os = c
        .guest_os_mut(vmid)
        .ok_or_else(|| ApiError::new(500, "internal simulator error\n"))?;
    let file = ctx.params.get("file").unwrap_or("");
    let Some(data) = os.files.get(file) else {
        if os.dir_exists(file) {
            // fopen(dir, "r") succeeds on Linux; the first read fails.
            return Err(agent_error("failed to read file: Is a directory"));
        }
        return Err(open_failed(file, "r", "No such file or directory"));
    };
    let (offset, count, decode) = if pve8 {
        (0, MAX_READ_SIZE, true)
    } else {
        (
            int_param(ctx, "offset").unwrap_or(0),
            int_param(ctx, "count").unwrap_or(MAX_READ_SIZE),
            ctx.params.get("decode") != Some("0"),
        )
    };
    let start = (offset as usize).min(data.len());
    let avail = (data.len() - start) as u64;
    let n = count.min(avail) as usize;
    let chunk = &data[start..start + n];
    let mut m = Map::new();
    let content = if decode {
        as_text(chunk)
    } else {
        base64(chunk, true)
    };
    m.insert("content".into(), content.into());
    // qemu-ga's `eof` is feof(): set only by a read that asked for more
    // than was left, so reading exactly to the end still says truncated.
    if count <= avail {
        m.insert("truncated".into(), pbool(true));
    }
    Ok(Reply::Data(Value::Object(m)))
}

/// Standard base64 decoding (qemu-ga's `qbase64_decode`); `None` if
/// invalid.
fn unbase64(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for ch in s.bytes() {
        let v = match ch {
            b'A'..=b'Z' => ch - b'A',
            b'a'..=b'z' => ch - b'a' + 26,
            b'0'..=b'9' => ch - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    (bits < 6).then_some(out)
}

/// `POST agent/file-write`: replaces (or creates) the file; `null`.
pub(crate) fn file_write(ctx: &Ctx<'_>) -> HandlerResult {
    let mut c = ctx.cluster_mut();
    let vmid = {
        let g = available(&c, ctx)?;
        check_agent_error(g)?;
        g.vmid
    };
    let os = c
        .guest_os_mut(vmid)
        .ok_or_else(|| ApiError::new(500, "internal simulator error\n"))?;
    let file = ctx.params.get("file").unwrap_or("");
    let content = ctx.params.get("content").unwrap_or("");
    let bytes = if ctx.params.get("encode") == Some("0") {
        // The caller encoded it; qemu-ga decodes (message unverified
        // against qemu's util/base64.c).
        unbase64(content).ok_or_else(|| agent_error("Base64 data is not valid"))?
    } else {
        content.as_bytes().to_vec()
    };
    if os.dir_exists(file) {
        return Err(open_failed(file, "wb", "Is a directory"));
    }
    let parent = match file.rfind('/') {
        Some(0) => "/",
        Some(i) => &file[..i],
        None => "",
    };
    if !file.starts_with('/') || !os.dir_exists(parent) {
        return Err(open_failed(file, "wb", "No such file or directory"));
    }
    os.files.insert(file.to_string(), bytes);
    Ok(Reply::Data(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for data in [&b""[..], b"f", b"fo", b"foo", b"\xff\x00\xfe binary"] {
            assert_eq!(unbase64(&base64(data, true)).as_deref(), Some(data));
        }
        assert_eq!(unbase64("not base64!"), None);
        assert_eq!(unbase64("A"), None);
    }
}
