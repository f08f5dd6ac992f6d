//! Which files a call may touch inside a guest: a rule's `paths`, glob
//! patterns over the normalised absolute path.
//!
//! A path is judged only once it is normalised ([`GuestPath::parse`]):
//! absolute (`/...`, or a Windows drive `C:\...` / `C:/...`), with no `.`
//! or `..` segment, no empty segment and no control character. A path the
//! policy cannot read one way only is refused, never repaired: the guest
//! might read it another way. The component checks this too; the policy
//! does not rely on it.
//!
//! In a pattern, `*` stands for any characters within one segment, and a
//! whole segment `**` for any number of segments (zero included); nothing
//! else is special, and matching is exact and case-sensitive.

use super::shown::show_value;

/// The most segments one pattern may have.
pub const MAX_SEGMENTS: usize = 64;

/// The longest path judged: longer ones are refused, not matched.
const MAX_PATH_BYTES: usize = 4096;

/// A path as the policy reads it: its root and its segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestPath {
    /// `None` for `/...`; the drive letter as written for `C:\...`.
    drive: Option<char>,
    segments: Vec<String>,
}

impl GuestPath {
    /// Reads an absolute, normalised path; the error says what keeps it
    /// from being one.
    pub fn parse(path: &str) -> Result<GuestPath, String> {
        if path.len() > MAX_PATH_BYTES {
            return Err(format!("it is longer than {MAX_PATH_BYTES} bytes"));
        }
        if let Some(c) = path.chars().find(|c| c.is_control()) {
            return Err(format!("it holds the control character {c:?}"));
        }
        let bytes = path.as_bytes();
        let (drive, rest, separators): (Option<char>, &str, &[char]) = if let Some(rest) =
            path.strip_prefix('/')
        {
            // On a Windows guest `\` separates too, and elsewhere it is a
            // file name's character: which file it names depends on the
            // guest, so the policy cannot judge it.
            if path.contains('\\') {
                return Err(
                    "it holds a backslash, which separates segments on a Windows guest and not elsewhere, so which file it names depends on the guest".into(),
                );
            }
            (None, rest, &['/'])
        } else if bytes.len() >= 3
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b':'
            && (bytes[2] == b'/' || bytes[2] == b'\\')
        {
            (Some(bytes[0] as char), &path[3..], &['/', '\\'])
        } else {
            return Err("it is not absolute: it must start with / or a drive such as C:\\".into());
        };
        // The root alone has no segment.
        if rest.is_empty() {
            return Ok(GuestPath {
                drive,
                segments: Vec::new(),
            });
        }
        let segments: Vec<String> = rest.split(separators).map(str::to_string).collect();
        for segment in &segments {
            if segment.is_empty() {
                return Err(
                    "it has an empty segment (two separators in a row, or one at the end)".into(),
                );
            }
            // `.` and `..` move within the tree; a Windows guest also reads
            // `...` as a parent, so any segment of only dots is refused.
            if segment.chars().all(|c| c == '.') {
                return Err(format!("it has a {} segment", show_value(segment)));
            }
            if drive.is_some() {
                // Windows drops a trailing dot or space (`a.txt.` opens
                // `a.txt`) and reads `name:stream` as another stream.
                if segment.ends_with(['.', ' ']) {
                    return Err(format!(
                        "its segment {} ends with a dot or a space, which Windows drops",
                        show_value(segment)
                    ));
                }
                if segment.contains(':') {
                    return Err(format!(
                        "its segment {} holds a colon, which Windows reads as a stream name",
                        show_value(segment)
                    ));
                }
            }
        }
        Ok(GuestPath { drive, segments })
    }
}

/// One checked path pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    drive: Option<char>,
    /// `None` stands for a `**` segment.
    segments: Vec<Option<String>>,
    written: String,
}

impl PathPattern {
    /// Checks one pattern as written; the error is the problem and the fix.
    pub fn parse(written: &str) -> Result<PathPattern, (String, String)> {
        let path = GuestPath::parse(written).map_err(|why| {
            (
                format!("the pattern {} is not a normalised absolute path: {why}", show_value(written)),
                "write an absolute path such as \"/var/log/*\" or \"C:\\\\Logs\\\\*\", without . or .. segments".into(),
            )
        })?;
        if path.segments.len() > MAX_SEGMENTS {
            return Err((
                format!(
                    "the pattern {} has {} segments, more than {MAX_SEGMENTS}",
                    show_value(written),
                    path.segments.len()
                ),
                "use \"**\" for any number of segments".into(),
            ));
        }
        let segments = path
            .segments
            .into_iter()
            .map(|s| match s.as_str() {
                "**" => Ok(None),
                _ if s.contains("**") => Err((
                    format!(
                        "in the pattern {}, \"**\" is part of the segment {}; it stands for whole segments only",
                        show_value(written),
                        show_value(&s)
                    ),
                    "make \"**\" a segment of its own (\"/srv/app/**\"), or use \"*\" within a segment".into(),
                )),
                _ => Ok(Some(s)),
            })
            .collect::<Result<_, _>>()?;
        Ok(PathPattern {
            drive: path.drive,
            segments,
            written: written.to_string(),
        })
    }

    /// As written.
    pub fn written(&self) -> &str {
        &self.written
    }

    /// Whether the pattern matches the path.
    pub fn matches(&self, path: &GuestPath) -> bool {
        self.drive == path.drive && segments_match(&self.segments, &path.segments)
    }
}

/// Whole-segment matching, `None` being `**`. Patterns are short (at most
/// [`MAX_SEGMENTS`]) and so are paths, so the backtracking stays small; the
/// table keeps it polynomial whatever the patterns.
fn segments_match(pattern: &[Option<String>], path: &[String]) -> bool {
    // done[i][j]: pattern[i..] matches path[j..].
    let mut done = vec![vec![false; path.len() + 1]; pattern.len() + 1];
    done[pattern.len()][path.len()] = true;
    for i in (0..pattern.len()).rev() {
        for j in (0..=path.len()).rev() {
            done[i][j] = match &pattern[i] {
                None => done[i + 1][j] || (j < path.len() && done[i][j + 1]),
                Some(glob) => j < path.len() && glob_match(glob, &path[j]) && done[i + 1][j + 1],
            };
        }
    }
    done[0][0]
}

/// Whether `text` matches `glob`, where `*` is any run of characters.
fn glob_match(glob: &str, text: &str) -> bool {
    let parts: Vec<&str> = glob.split('*').collect();
    if parts.len() == 1 {
        return glob == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if text.len() < first.len() + last.len() || !text.starts_with(first) || !text.ends_with(last) {
        return false;
    }
    // Each middle part at its earliest place after the one before: greedy
    // is exact for `*`-only globs.
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// A rule's checked `paths`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPatterns {
    patterns: Vec<PathPattern>,
}

impl PathPatterns {
    /// The checked patterns.
    pub fn new(patterns: Vec<PathPattern>) -> PathPatterns {
        PathPatterns { patterns }
    }

    /// The patterns.
    pub fn patterns(&self) -> &[PathPattern] {
        &self.patterns
    }

    /// Whether some pattern matches the path.
    pub fn allows(&self, path: &GuestPath) -> bool {
        self.patterns.iter().any(|p| p.matches(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(patterns: &[&str], path: &str) -> bool {
        let p = PathPatterns::new(
            patterns
                .iter()
                .map(|p| PathPattern::parse(p).unwrap())
                .collect(),
        );
        p.allows(&GuestPath::parse(path).unwrap())
    }

    const EXAMPLE: &[&str] = &["/var/log/*", "/etc/hostname", "/srv/app/**"];

    #[test]
    fn a_literal_path_matches_exactly_and_case_sensitively() {
        assert!(allows(EXAMPLE, "/etc/hostname"));
        assert!(!allows(EXAMPLE, "/etc/Hostname"));
        assert!(!allows(EXAMPLE, "/etc/hostname2"));
        assert!(!allows(EXAMPLE, "/etc"));
        // `?` and brackets are not special.
        assert!(allows(&["/a/b?[c]"], "/a/b?[c]"));
        assert!(!allows(&["/a/b?"], "/a/bc"));
    }

    #[test]
    fn a_star_stays_within_one_segment() {
        assert!(allows(EXAMPLE, "/var/log/syslog"));
        assert!(!allows(EXAMPLE, "/var/log/nginx/access.log"));
        assert!(!allows(EXAMPLE, "/var/log"));
        assert!(allows(&["/var/log/*.log"], "/var/log/kern.log"));
        assert!(!allows(&["/var/log/*.log"], "/var/log/kern.log.1"));
        assert!(allows(&["/home/*/.ssh/a*b*c"], "/home/u/.ssh/abxbc"));
        assert!(!allows(&["/a/*x*y"], "/a/yx"));
        assert!(allows(&["/a/*"], "/a/.hidden"));
    }

    #[test]
    fn a_double_star_is_any_number_of_whole_segments() {
        assert!(allows(EXAMPLE, "/srv/app"));
        assert!(allows(EXAMPLE, "/srv/app/x"));
        assert!(allows(EXAMPLE, "/srv/app/a/b/c/d"));
        assert!(!allows(EXAMPLE, "/srv/apps/x"));
        assert!(allows(&["/**/*.conf"], "/etc/nginx/nginx.conf"));
        assert!(allows(&["/a/**/z"], "/a/z"));
        assert!(!allows(&["/a/**/z"], "/a/b/zz"));
        let e = PathPattern::parse("/srv/**app").unwrap_err();
        assert!(e.0.contains("whole segments only"), "{e:?}");
    }

    #[test]
    fn windows_paths_separate_on_both_slashes() {
        let p = &["C:\\Logs\\*", "D:/data/**"];
        assert!(allows(p, "C:\\Logs\\app.log"));
        assert!(allows(p, "C:/Logs/app.log"));
        assert!(allows(p, "C:\\Logs/app.log"));
        assert!(allows(p, "D:\\data\\x\\y"));
        assert!(!allows(p, "c:\\Logs\\app.log"));
        assert!(!allows(p, "C:\\Logs\\sub\\app.log"));
        assert!(!allows(p, "/Logs/app.log"));
        assert!(!allows(&["/Logs/*"], "C:\\Logs\\app.log"));
    }

    #[test]
    fn every_unnormalised_path_is_refused_with_its_reason() {
        for (path, says) in [
            ("var/log/syslog", "not absolute"),
            ("", "not absolute"),
            ("C:relative", "not absolute"),
            ("\\\\server\\share\\x", "not absolute"),
            ("~/x", "not absolute"),
            ("/var/log/../../etc/shadow", "\"..\" segment"),
            ("/var/./log", "\".\" segment"),
            ("/var/log/.", "\".\" segment"),
            ("C:\\a\\...\\b", "\"...\" segment"),
            ("/var//log", "empty segment"),
            ("/var/log/", "empty segment"),
            ("C:\\a\\\\b", "empty segment"),
            ("/var/log/a\0b", "control character"),
            ("/var/log/a\nb", "control character"),
            ("/var/log/a\u{7f}", "control character"),
            ("/var/log\\..\\x", "backslash"),
            ("C:\\a\\secret.txt.", "dot or a space"),
            ("C:\\a\\b ", "dot or a space"),
            ("C:\\a\\b:stream", "colon"),
        ] {
            let why = GuestPath::parse(path).unwrap_err();
            assert!(why.contains(says), "{path:?}: {why}");
        }
        assert!(GuestPath::parse(&format!("/{}", "a".repeat(5000))).is_err());
        assert!(GuestPath::parse("/").is_ok());
        assert!(GuestPath::parse("C:\\").is_ok());
        assert!(GuestPath::parse("/var/log/.hidden").is_ok());
    }

    #[test]
    fn a_pattern_must_be_an_absolute_normalised_path() {
        for bad in ["var/log/*", "", "/var/../etc", "/a//b"] {
            let (problem, _) = PathPattern::parse(bad).unwrap_err();
            assert!(problem.contains("not a normalised absolute path"), "{bad}");
        }
        let long = "/a".repeat(MAX_SEGMENTS + 1);
        assert!(
            PathPattern::parse(&long)
                .unwrap_err()
                .0
                .contains("65 segments")
        );
        assert!(PathPattern::parse(&"/a".repeat(MAX_SEGMENTS)).is_ok());
    }
}
