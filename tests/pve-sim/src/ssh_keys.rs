//! `PVE::Tools::validate_ssh_public_keys`: PVE URI-unescapes `sshkeys`
//! and runs `ssh-keygen -l` on every non-blank line; any line it rejects
//! fails the request with `SSH public key validation error`. Here a line
//! passes when it holds a known key type followed by a base64 blob that
//! starts with that same type, which is what `ssh-keygen` parses first.

/// Public key types `ssh-keygen -l` accepts.
const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ssh-dss",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

/// `URI::Escape::uri_unescape`: only `%XX` sequences are decoded (a `+`
/// stays a `+`), so an unencoded key passes through unchanged.
pub(crate) fn uri_unescape(s: &str) -> String {
    crate::util::pct_decode(s)
}

/// Whether every non-blank line of the (already unescaped) text is a
/// public key.
pub(crate) fn valid_keys(text: &str) -> bool {
    text.split('\n')
        .filter(|l| !l.trim().is_empty())
        .all(valid_line)
}

/// One `authorized_keys` line: optional options, the key type, the blob,
/// an optional comment.
fn valid_line(line: &str) -> bool {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let Some(i) = tokens.iter().position(|t| KEY_TYPES.contains(t)) else {
        return false;
    };
    let Some(blob) = tokens.get(i + 1).and_then(|b| base64_decode(b)) else {
        return false;
    };
    blob_type(&blob) == Some(tokens[i]) && blob.len() > 4 + tokens[i].len()
}

/// The key type the blob starts with (an SSH string: 4-byte length, text).
fn blob_type(blob: &[u8]) -> Option<&str> {
    let len = u32::from_be_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    std::str::from_utf8(blob.get(4..4 + len)?).ok()
}

/// Standard base64 with optional `=` padding; `None` for anything else.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in s.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
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

#[cfg(test)]
mod tests {
    use super::*;

    const ED25519: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMq0b4m1jN3sH2d7Zx9yQ4cVv8rT6eW1aB2cD3eF4gH5 ops@example.com";

    #[test]
    fn keys_like_ssh_keygen() {
        assert!(valid_keys(ED25519));
        assert!(valid_keys(&format!("\n{ED25519}\n\n")));
        assert!(valid_keys(&format!("no-pty,from=\"10.0.0.0/8\" {ED25519}")));
        // The blob must name the type the line claims.
        assert!(!valid_keys(&ED25519.replace("ssh-ed25519 ", "ssh-rsa ")));
        assert!(!valid_keys("ssh-ed25519 not!base64 x"));
        assert!(!valid_keys("hello world"));
        assert!(!valid_keys(&format!("{ED25519}\ngarbage")));
        assert_eq!(uri_unescape("a%20b+c%0A"), "a b+c\n");
    }
}
