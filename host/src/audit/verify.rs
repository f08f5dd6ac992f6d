//! `pve-mcp audit verify`: walks the chain through one or more files and
//! names the first record that was edited, dropped, reordered or cut off.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::chain::{GENESIS, line_hash, parse_link};

/// Options of a verification.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// Accept a chain that does not start at the genesis record (older
    /// files were removed on purpose).
    pub partial: bool,
    /// A record hash saved earlier (e.g. the last hash a previous
    /// verification printed): the log must still contain it, which is what
    /// detects a dropped or edited tail.
    pub anchor: Option<String>,
}

/// A line in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file.
    pub file: PathBuf,
    /// Its line number, from 1.
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// One file's part of the chain.
#[derive(Debug, Clone)]
pub struct FilePart {
    /// The file.
    pub path: PathBuf,
    /// Its first and last seq.
    pub seqs: (u64, u64),
}

/// A chain that verified.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Records checked.
    pub records: u64,
    /// The files, in chain order (empty files left out).
    pub files: Vec<FilePart>,
    /// The hash of the last line: save it to detect a dropped tail later.
    pub last_hash: String,
}

/// Why verification failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The files could not be read or none were given (exit code 2).
    #[error("{0}")]
    Input(String),
    /// The chain is broken at this line (exit code 1).
    #[error("{at}: {problem}")]
    Broken {
        /// The first line at fault.
        at: Location,
        /// What happened to it.
        problem: String,
    },
}

fn broken(file: &Path, line: usize, problem: impl Into<String>) -> VerifyError {
    VerifyError::Broken {
        at: Location {
            file: file.to_path_buf(),
            line,
        },
        problem: problem.into(),
    }
}

/// The last record seen.
struct Previous {
    seq: u64,
    hash: String,
    at: Location,
}

/// Verifies the chain across `inputs` (files, or directories whose
/// `*.jsonl*` files are taken). Files are put in chain order by their first
/// record's seq, so a shell glob's order does not matter.
pub fn verify(inputs: &[PathBuf], options: &VerifyOptions) -> Result<Summary, VerifyError> {
    if let Some(anchor) = &options.anchor {
        let hex = anchor.strip_prefix("sha256:").unwrap_or_default();
        if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(VerifyError::Input(format!(
                "--anchor {anchor:?} is not a record hash; give one as verify prints it: sha256: and 64 hex digits"
            )));
        }
    }
    let files = order_by_first_seq(collect_files(inputs)?)?;
    let mut previous: Option<Previous> = None;
    let mut parts = Vec::new();
    let mut records = 0u64;
    let mut anchor_seen = false;
    for path in &files {
        let mut reader = BufReader::new(open(path)?);
        let mut buf = Vec::new();
        let mut number = 0usize;
        let mut first_seq = None;
        loop {
            buf.clear();
            let n = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| VerifyError::Input(format!("reading {}: {e}", path.display())))?;
            if n == 0 {
                break;
            }
            number += 1;
            if buf.last() != Some(&b'\n') {
                return Err(broken(
                    path,
                    number,
                    "the record is incomplete (no newline at its end): the file was truncated inside it, or a write was cut off",
                ));
            }
            buf.pop();
            let Some(link) = parse_link(&buf) else {
                return Err(broken(
                    path,
                    number,
                    "not an audit record (a JSON object with seq and prev): the line was edited or damaged",
                ));
            };
            let here = Location {
                file: path.clone(),
                line: number,
            };
            match &previous {
                None => check_start(&here, link.seq, &link.prev, options.partial)?,
                Some(p) => {
                    // A seq of u64::MAX can only be an edit; nothing follows it.
                    let Some(expected) = p.seq.checked_add(1) else {
                        return Err(VerifyError::Broken {
                            at: p.at.clone(),
                            problem: format!(
                                "record seq {} was edited: no record can follow the largest seq",
                                p.seq
                            ),
                        });
                    };
                    if link.seq != expected {
                        return Err(out_of_sequence(&files, &here, link.seq, expected));
                    }
                    if link.prev != p.hash {
                        return Err(VerifyError::Broken {
                            at: p.at.clone(),
                            problem: format!(
                                "record seq {} was edited: its line hashes to {} but the next record ({here}) says {}",
                                p.seq, p.hash, link.prev
                            ),
                        });
                    }
                }
            }
            let hash = line_hash(&buf);
            if options.anchor.as_deref() == Some(hash.as_str()) {
                anchor_seen = true;
            }
            first_seq.get_or_insert(link.seq);
            records += 1;
            previous = Some(Previous {
                seq: link.seq,
                hash,
                at: here,
            });
        }
        if let (Some(first), Some(p)) = (first_seq, &previous) {
            parts.push(FilePart {
                path: path.clone(),
                seqs: (first, p.seq),
            });
        }
    }
    let Some(last) = previous else {
        return Err(VerifyError::Input(
            "the audit files hold no records".to_string(),
        ));
    };
    if let Some(anchor) = &options.anchor
        && !anchor_seen
    {
        return Err(VerifyError::Broken {
            at: Location {
                file: last.at.file.clone(),
                line: last.at.line + 1,
            },
            problem: format!(
                "the anchored record {anchor} is not in the log, which ends at seq {} on the line before: records after it were dropped (or the last ones edited)",
                last.seq
            ),
        });
    }
    Ok(Summary {
        records,
        files: parts,
        last_hash: last.hash,
    })
}

fn check_start(here: &Location, seq: u64, prev: &str, partial: bool) -> Result<(), VerifyError> {
    if partial {
        return Ok(());
    }
    if seq == 0 {
        return Err(VerifyError::Broken {
            at: here.clone(),
            problem:
                "the log starts at seq 0, which no record has (the first is seq 1): it was edited"
                    .into(),
        });
    }
    if seq != 1 {
        return Err(VerifyError::Broken {
            at: here.clone(),
            problem: format!(
                "the log starts at seq {seq}, not at the genesis record: records 1..{} are missing (dropped); if older files were removed on purpose, pass --partial",
                seq - 1
            ),
        });
    }
    if prev != GENESIS {
        return Err(VerifyError::Broken {
            at: here.clone(),
            problem: format!(
                "the first record's prev is {prev}, not the genesis value: it was edited"
            ),
        });
    }
    Ok(())
}

/// Says whether a seq out of place means reordered or dropped records.
fn out_of_sequence(files: &[PathBuf], here: &Location, seq: u64, expected: u64) -> VerifyError {
    let problem = if seq > expected {
        match find_seq(files, expected) {
            Some(at) => format!(
                "records are out of order: this line holds seq {seq} where seq {expected} belongs, which is at {at}"
            ),
            None if seq == expected + 1 => {
                format!("record seq {expected} is missing before this line (dropped)")
            }
            None => format!(
                "records seq {expected}..{} are missing before this line (dropped)",
                seq - 1
            ),
        }
    } else {
        match find_seq(files, seq) {
            Some(at) if at != *here => format!(
                "records are out of order: this line holds seq {seq}, already at {at}, where seq {expected} belongs (moved or duplicated)"
            ),
            _ => format!("this line holds seq {seq} where seq {expected} belongs"),
        }
    };
    VerifyError::Broken {
        at: here.clone(),
        problem,
    }
}

/// Where a seq first appears, if anywhere.
fn find_seq(files: &[PathBuf], seq: u64) -> Option<Location> {
    for path in files {
        let reader = BufReader::new(File::open(path).ok()?);
        for (i, line) in reader.split(b'\n').enumerate() {
            let line = line.ok()?;
            if parse_link(&line).is_some_and(|l| l.seq == seq) {
                return Some(Location {
                    file: path.clone(),
                    line: i + 1,
                });
            }
        }
    }
    None
}

fn open(path: &Path) -> Result<File, VerifyError> {
    File::open(path).map_err(|e| VerifyError::Input(format!("cannot open {}: {e}", path.display())))
}

/// Files as given, directories expanded to their `*.jsonl*` files.
fn collect_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, VerifyError> {
    if inputs.is_empty() {
        return Err(VerifyError::Input(
            "no audit files given: name the files (e.g. audit.jsonl*) or their directory".into(),
        ));
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input)
            .map_err(|e| VerifyError::Input(format!("cannot read {}: {e}", input.display())))?;
        if meta.is_dir() {
            let entries = std::fs::read_dir(input)
                .map_err(|e| VerifyError::Input(format!("cannot list {}: {e}", input.display())))?;
            let before = files.len();
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if path.is_file() && name.contains(".jsonl") {
                    files.push(path);
                }
            }
            if files.len() == before {
                return Err(VerifyError::Input(format!(
                    "{} holds no audit files (*.jsonl*); name the files instead",
                    input.display()
                )));
            }
        } else {
            files.push(input.clone());
        }
    }
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())));
    Ok(files)
}

/// Chain order: by the seq of each file's first record; empty files drop out.
fn order_by_first_seq(files: Vec<PathBuf>) -> Result<Vec<PathBuf>, VerifyError> {
    let mut keyed = Vec::with_capacity(files.len());
    for path in files {
        let mut reader = BufReader::new(open(&path)?);
        let mut first = Vec::new();
        reader
            .read_until(b'\n', &mut first)
            .map_err(|e| VerifyError::Input(format!("reading {}: {e}", path.display())))?;
        if first.is_empty() {
            continue;
        }
        if first.last() == Some(&b'\n') {
            first.pop();
        }
        let Some(link) = parse_link(&first) else {
            return Err(broken(
                &path,
                1,
                "not an audit record (a JSON object with seq and prev): the line was edited, damaged or cut off",
            ));
        };
        keyed.push((link.seq, path));
    }
    keyed.sort_by_key(|(seq, _)| *seq);
    Ok(keyed.into_iter().map(|(_, p)| p).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::Head;
    use crate::audit::chain::tests::call;

    /// A log of `n` records in one file; returns its lines.
    fn log(dir: &Path, name: &str, head: &mut Head, n: usize) -> Vec<String> {
        let lines: Vec<String> = (0..n)
            .map(|i| head.link(&call(&format!("t{i}"))).unwrap())
            .collect();
        write(dir, name, &lines);
        lines
    }

    fn write(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
        let path = dir.join(name);
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        path
    }

    fn fails_at(inputs: &[PathBuf], options: &VerifyOptions) -> (usize, String) {
        match verify(inputs, options) {
            Err(VerifyError::Broken { at, problem }) => (at.line, problem),
            other => panic!("expected a broken chain, got {other:?}"),
        }
    }

    #[test]
    fn an_intact_chain_verifies_and_each_kind_of_tampering_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut head = Head::genesis();
        let lines = log(dir.path(), "a.jsonl", &mut head, 6);
        let path = dir.path().join("a.jsonl");
        let summary = verify(std::slice::from_ref(&path), &VerifyOptions::default()).unwrap();
        assert_eq!(summary.records, 6);
        assert_eq!(summary.last_hash, head.hash);

        let opts = VerifyOptions::default();
        let mut edited = lines.clone();
        edited[2] = edited[2].replace("\"t2\"", "\"tX\"");
        let (line, problem) = fails_at(&[write(dir.path(), "e.jsonl", &edited)], &opts);
        assert_eq!(line, 3, "{problem}");
        assert!(problem.contains("edited"), "{problem}");

        let mut dropped = lines.clone();
        dropped.remove(3);
        let (line, problem) = fails_at(&[write(dir.path(), "d.jsonl", &dropped)], &opts);
        assert_eq!(line, 4, "{problem}");
        assert!(problem.contains("seq 4 is missing"), "{problem}");

        let mut swapped = lines.clone();
        swapped.swap(1, 2);
        let (line, problem) = fails_at(&[write(dir.path(), "s.jsonl", &swapped)], &opts);
        assert_eq!(line, 2, "{problem}");
        assert!(problem.contains("out of order"), "{problem}");

        let mut first_gone = lines.clone();
        first_gone.remove(0);
        let (line, problem) = fails_at(&[write(dir.path(), "f.jsonl", &first_gone)], &opts);
        assert_eq!(line, 1, "{problem}");
        assert!(problem.contains("missing"), "{problem}");
        let partial = VerifyOptions {
            partial: true,
            ..VerifyOptions::default()
        };
        assert!(verify(&[dir.path().join("f.jsonl")], &partial).is_ok());

        let cut = dir.path().join("c.jsonl");
        let whole = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&cut, &whole[..whole.len() - 10]).unwrap();
        let (line, problem) = fails_at(&[cut], &opts);
        assert_eq!(line, 6, "{problem}");
        assert!(problem.contains("incomplete"), "{problem}");

        // A dropped tail shows only against an anchor.
        let tail = write(dir.path(), "t.jsonl", &lines[..4]);
        assert!(verify(std::slice::from_ref(&tail), &opts).is_ok());
        let anchored = VerifyOptions {
            anchor: Some(head.hash.clone()),
            ..VerifyOptions::default()
        };
        let (line, problem) = fails_at(&[tail], &anchored);
        assert_eq!(line, 5, "{problem}");
        assert!(problem.contains("dropped"), "{problem}");
        assert!(verify(&[path], &anchored).is_ok());
    }

    #[test]
    fn files_are_put_in_chain_order_and_a_missing_file_is_a_gap() {
        let dir = tempfile::tempdir().unwrap();
        let mut head = Head::genesis();
        log(dir.path(), "audit.jsonl.000000000003", &mut head, 3);
        log(dir.path(), "audit.jsonl.000000000005", &mut head, 2);
        log(dir.path(), "audit.jsonl", &mut head, 2);
        std::fs::write(dir.path().join("notes.txt"), "not audit").unwrap();
        let summary = verify(&[dir.path().to_path_buf()], &VerifyOptions::default()).unwrap();
        assert_eq!(summary.records, 7);
        let seqs: Vec<_> = summary.files.iter().map(|f| f.seqs).collect();
        assert_eq!(seqs, [(1, 3), (4, 5), (6, 7)]);
        std::fs::remove_file(dir.path().join("audit.jsonl.000000000005")).unwrap();
        let (line, problem) = fails_at(&[dir.path().to_path_buf()], &VerifyOptions::default());
        assert_eq!(line, 1, "{problem}");
        assert!(problem.contains("seq 4..5 are missing"), "{problem}");
    }

    #[test]
    fn unreadable_input_is_an_input_error() {
        let err = verify(
            &[PathBuf::from("/nonexistent/audit.jsonl")],
            &VerifyOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(err, VerifyError::Input(_)), "{err:?}");
        assert!(matches!(
            verify(&[], &VerifyOptions::default()),
            Err(VerifyError::Input(_))
        ));
        let bad_anchor = VerifyOptions {
            anchor: Some("last-line".into()),
            ..VerifyOptions::default()
        };
        assert!(matches!(
            verify(&[PathBuf::from("x")], &bad_anchor),
            Err(VerifyError::Input(m)) if m.contains("--anchor")
        ));
    }
}
