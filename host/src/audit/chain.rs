//! The hash chain and the writer: every line carries `seq` (one more than
//! the line before) and `prev` (`sha256:` of the previous line's exact bytes,
//! without its newline; [`GENESIS`] for the first record of a chain). One
//! thread owns the file, so records are written in the order they are
//! linked, and each batch is written and flushed before its call is told
//! it is recorded.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::record::Record;

/// The `prev` of the first record of a chain.
pub const GENESIS: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// `sha256:<hex>` of one line's bytes (without the newline).
pub fn line_hash(line: &[u8]) -> String {
    let digest = Sha256::digest(line);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The link fields of a line: all the chain needs to read.
#[derive(Debug, Deserialize)]
pub struct Link {
    /// Position in the chain, from 1.
    pub seq: u64,
    /// Hash of the previous line.
    pub prev: String,
}

/// Reads the link fields of a line, if it is a record at all.
pub fn parse_link(line: &[u8]) -> Option<Link> {
    serde_json::from_slice(line).ok()
}

/// The end of a chain: the last record's seq (0 before the first) and the
/// hash of its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The last `seq` written.
    pub seq: u64,
    /// The hash the next record carries as `prev`.
    pub hash: String,
}

impl Head {
    /// The head of an empty chain.
    pub fn genesis() -> Head {
        Head {
            seq: 0,
            hash: GENESIS.to_string(),
        }
    }

    /// Formats a record as the next line and advances to it. The link
    /// fields come first so a reader sees the chain at a glance.
    pub fn link(&mut self, record: &Record) -> Result<String, serde_json::Error> {
        let body = serde_json::to_string(record)?;
        let seq = self.seq + 1;
        // `body` is a non-empty object (it always has `kind`), so splicing
        // after its `{` keeps it one valid object.
        let line = format!(
            "{{\"seq\":{seq},\"prev\":\"{}\",{}",
            self.hash,
            body.get(1..).unwrap_or("}")
        );
        self.seq = seq;
        self.hash = line_hash(line.as_bytes());
        Ok(line)
    }
}

/// Why the chain could not be resumed or the file opened.
#[derive(Debug)]
pub struct OpenError {
    /// What is wrong.
    pub problem: String,
    /// What to do.
    pub fix: String,
}

/// The audit file: appended to under an exclusive lock, rotated by size.
///
/// Several pve-mcp processes may share one file (an MCP client starts one
/// server per connection): each batch is written while holding the file's
/// lock, after checking where the chain in the file ends, so they all
/// extend one chain.
pub struct FileSink {
    path: PathBuf,
    file: Option<File>,
    /// The file's length after this process's last write. While it still
    /// is, nobody else wrote and the cached head is the file's.
    synced_len: Option<u64>,
    /// Rotation threshold; 0 (and anything but a regular file) never rotates.
    max_bytes: u64,
    regular: bool,
    fsync: bool,
}

impl FileSink {
    /// Opens (or creates) the file and finds where its chain ends, so a
    /// restarted server continues it instead of starting a new one.
    pub fn open(path: &Path, max_bytes: u64, fsync: bool) -> Result<(FileSink, Head), OpenError> {
        let head = resume(path)?;
        let file = open_append(path).map_err(|e| OpenError {
            problem: format!("cannot open {} for appending: {e}", path.display()),
            fix: "create its directory and make it writable for pve-mcp, or set another path"
                .into(),
        })?;
        let meta = file.metadata().map_err(|e| OpenError {
            problem: format!("cannot read {}: {e}", path.display()),
            fix: "check the path".into(),
        })?;
        Ok((
            FileSink {
                path: path.to_path_buf(),
                regular: meta.is_file(),
                file: Some(file),
                // Another process may write before this one's first batch.
                synced_len: None,
                max_bytes,
                fsync,
            },
            head,
        ))
    }

    /// Links and appends a batch in one write; returns the bytes written.
    /// A failed write is cut back off, so the file never keeps half a
    /// record, and `head` only moves once the file has the lines.
    fn append(&mut self, head: &mut Head, records: &mut [Record]) -> io::Result<Vec<u8>> {
        if !self.regular {
            // A device or pipe: no lock, no rotation, no chain to re-read.
            let (bytes, next) = format_batch(head, records)?;
            let file = self.handle()?;
            let written = file.write_all(&bytes).and_then(|()| file.flush());
            if written.is_err() {
                self.file = None;
            }
            written?;
            *head = next;
            return Ok(bytes);
        }
        loop {
            let file = self.handle()?;
            file.lock()?;
            match self.append_locked(head, records) {
                Ok(Some(bytes)) => return Ok(bytes),
                // Rotated meanwhile: the file was closed (so unlocked).
                Ok(None) => continue,
                Err(e) => {
                    // Closing the file releases its lock, so other
                    // processes sharing the log are not left waiting; it is
                    // reopened (and the head re-read) on the next write.
                    self.file = None;
                    self.synced_len = None;
                    return Err(e);
                }
            }
        }
    }

    /// One attempt while holding the file's lock: the bytes written, or
    /// `None` when the file was rotated and the caller must start again.
    fn append_locked(
        &mut self,
        head: &mut Head,
        records: &mut [Record],
    ) -> io::Result<Option<Vec<u8>>> {
        if !self.is_current()? {
            // Rotated by another process while this one waited. The length
            // this process last saw was the old file's: a new file of the
            // same length (records of fixed size, such as call-start ones,
            // make that likely) must not pass for unchanged.
            self.file = None;
            self.synced_len = None;
            return Ok(None);
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(None);
        };
        let len = file.metadata()?.len();
        if self.synced_len != Some(len) {
            *head = resume(&self.path)
                .map_err(|e| io::Error::other(format!("{} {}", e.problem, e.fix)))?;
        }
        let (bytes, next) = format_batch(head, records)?;
        if self.max_bytes > 0 && len > 0 && len + bytes.len() as u64 > self.max_bytes {
            self.rotate(head.seq)?;
            return Ok(None);
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(None);
        };
        let result = file.write_all(&bytes).and_then(|()| {
            file.flush()?;
            if self.fsync { file.sync_data() } else { Ok(()) }
        });
        if let Err(e) = result {
            let _ = file.set_len(len);
            return Err(e);
        }
        let _ = file.unlock();
        self.synced_len = Some(len + bytes.len() as u64);
        *head = next;
        Ok(Some(bytes))
    }

    /// The open file, opened (or created) again if needed.
    fn handle(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            self.file = Some(open_append(&self.path)?);
        }
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("the audit file is not open"))
    }

    /// Whether the open file is still the one at the path.
    fn is_current(&self) -> io::Result<bool> {
        let Some(file) = &self.file else {
            return Ok(false);
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let open = file.metadata()?;
            Ok(std::fs::metadata(&self.path)
                .is_ok_and(|at_path| at_path.dev() == open.dev() && at_path.ino() == open.ino()))
        }
        #[cfg(not(unix))]
        {
            let _ = file;
            Ok(self.path.exists())
        }
    }

    /// Renames the full file to `NAME.<last seq, 12 digits>`; the next
    /// write creates a new one and the chain carries on into it. Called
    /// with the lock held, which closing the old file releases.
    fn rotate(&mut self, last_seq: u64) -> io::Result<()> {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "audit.jsonl".into());
        let mut target = self.path.with_file_name(format!("{name}.{last_seq:012}"));
        let mut n = 1;
        while target.exists() {
            target = self
                .path
                .with_file_name(format!("{name}.{last_seq:012}-{n}"));
            n += 1;
        }
        std::fs::rename(&self.path, &target)?;
        self.file = None;
        // The new file starts empty; if it still is when this process
        // writes, the head it has is the chain's.
        self.synced_len = Some(0);
        tracing::info!(rotated = %target.display(), "audit log rotated");
        Ok(())
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Records may hold argument values; only the owner reads them.
        options.mode(0o600);
    }
    options.open(path)
}

/// Where the chain in `path` ends: its last line, or the newest rotated
/// sibling's when the file itself is gone.
fn resume(path: &Path) -> Result<Head, OpenError> {
    let source = match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() > 0 => path.to_path_buf(),
        // A device or pipe (e.g. /dev/stderr) has no chain to continue.
        Ok(meta) if !meta.is_file() => return Ok(Head::genesis()),
        // Missing, or empty because it was just rotated (or a write after a
        // rotation failed): the chain goes on from the newest rotated file.
        _ => match newest_rotated(path) {
            Some(p) => p,
            None => return Ok(Head::genesis()),
        },
    };
    let unreadable = |e: io::Error| OpenError {
        problem: format!(
            "cannot read {} to continue its chain: {e}",
            source.display()
        ),
        fix: "make it readable for pve-mcp, or move it aside to start a new chain".into(),
    };
    let (line, complete) = last_line(&source).map_err(unreadable)?;
    let damaged = |what: &str| OpenError {
        problem: format!(
            "the last line of {} {what}, so pve-mcp cannot continue its hash chain",
            source.display()
        ),
        fix: format!(
            "run `pve-mcp audit verify {}` to see what happened, then move the file aside (a new file starts a new chain)",
            source.display()
        ),
    };
    let Some(line) = line else {
        return Ok(Head::genesis());
    };
    if !complete {
        return Err(damaged("is incomplete (no newline: a write was cut off)"));
    }
    let link = parse_link(&line).ok_or_else(|| damaged("is not an audit record"))?;
    Ok(Head {
        seq: link.seq,
        hash: line_hash(&line),
    })
}

/// The rotated file with the highest seq next to `path`.
fn newest_rotated(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let prefix = format!("{name}.");
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let file_name = e.file_name().to_string_lossy().into_owned();
            let rest = file_name.strip_prefix(&prefix)?;
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            let seq: u64 = digits.parse().ok()?;
            Some(((seq, file_name.clone()), e.path()))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, p)| p)
}

/// The last line of a file (without its newline) and whether it ended
/// with one; read backwards, so a large file costs no more than its tail.
pub fn last_line(path: &Path) -> io::Result<(Option<Vec<u8>>, bool)> {
    let mut file = File::open(path)?;
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok((None, true));
    }
    let mut tail: Vec<u8> = Vec::new();
    let mut pos = len;
    const CHUNK: u64 = 64 << 10;
    loop {
        let start = pos.saturating_sub(CHUNK);
        let mut chunk = vec![0u8; (pos - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        pos = start;
        let complete = tail.last() == Some(&b'\n');
        let body = if complete {
            &tail[..tail.len() - 1]
        } else {
            &tail[..]
        };
        if let Some(i) = body.iter().rposition(|&b| b == b'\n') {
            return Ok((Some(body[i + 1..].to_vec()), complete));
        }
        if pos == 0 {
            return Ok((Some(body.to_vec()), complete));
        }
    }
}

/// One group of records written together (a call's start record, or its
/// end record and its egress decisions), and who is waiting for them to be
/// on disk.
pub struct Batch {
    /// The records, the call's first.
    pub records: Vec<Record>,
    /// Told once the batch is written (or why not).
    pub ack: Option<tokio::sync::oneshot::Sender<Result<(), String>>>,
}

/// The writer thread's outputs.
pub struct Sinks {
    /// The file, if any.
    pub file: Option<FileSink>,
    /// Whether every line goes to stderr as well.
    pub stderr: bool,
}

/// Starts the writer thread. It runs until every sender is gone, writing
/// what is still queued.
pub fn start_writer(
    mut sinks: Sinks,
    mut head: Head,
) -> io::Result<(mpsc::Sender<Batch>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<Batch>();
    let handle = std::thread::Builder::new()
        .name("pve-mcp-audit".into())
        .spawn(move || {
            for mut batch in rx {
                let result = write_batch(&mut sinks, &mut head, &mut batch.records);
                if let Err(e) = &result {
                    tracing::error!("audit log: a record could not be written: {e}");
                }
                if let Some(ack) = batch.ack {
                    let _ = ack.send(result);
                }
            }
        })?;
    Ok((tx, handle))
}

/// The lines of a batch linked after `head`, and the head after them.
fn format_batch(head: &Head, records: &mut [Record]) -> io::Result<(Vec<u8>, Head)> {
    let mut next = head.clone();
    let mut bytes = Vec::new();
    let mut call_seq = 0;
    for record in records.iter_mut() {
        match record {
            Record::Call(_) => call_seq = next.seq + 1,
            Record::Egress(entry) => entry.call_seq = call_seq,
            Record::CallStart(_) | Record::ServerStart(_) | Record::Task(_) => {}
        }
        let line = next
            .link(record)
            .map_err(|e| io::Error::other(format!("cannot format a record: {e}")))?;
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    Ok((bytes, next))
}

/// Writes a batch to the file (if any), then the same lines to stderr (if
/// asked). The head only moves once the file has the lines, so a failed
/// write leaves no gap in the chain.
fn write_batch(sinks: &mut Sinks, head: &mut Head, records: &mut [Record]) -> Result<(), String> {
    let bytes = match &mut sinks.file {
        Some(file) => file
            .append(head, records)
            .map_err(|e| format!("writing {}: {e}", file.path.display()))?,
        None => {
            let (bytes, next) = format_batch(head, records).map_err(|e| e.to_string())?;
            *head = next;
            bytes
        }
    };
    if sinks.stderr {
        let mut stderr = io::stderr().lock();
        stderr
            .write_all(&bytes)
            .and_then(|()| stderr.flush())
            .map_err(|e| format!("writing to stderr: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::audit::record::{CallHead, CallRecord, EgressEntry};

    pub(crate) fn call(tool: &str) -> Record {
        Record::Call(CallRecord {
            head: CallHead {
                approver: None,
                via: None,
                pve_token: None,
                traceparent: None,
                time: "2026-01-01T00:00:00.000Z".into(),
                call_id: "call-1".into(),
                session: "stdio".into(),
                client: None,
                token: None,
                tool: tool.into(),
                args_hash: "sha256:x".into(),
                args: None,
                decision: "allow".into(),
                rule: "none".into(),
            },
            outcome: "ok".into(),
            ms: 1.0,
            result_bytes: 2,
            upstream: vec![],
            task: None,
        })
    }

    fn egress() -> Record {
        Record::Egress(EgressEntry {
            time: "t".into(),
            call_id: "call-1".into(),
            call_seq: 0,
            session: "stdio".into(),
            token: None,
            tool: "x".into(),
            cluster: None,
            method: "GET".into(),
            authority: "a".into(),
            path: "/p".into(),
            params: None,
            answer: None,
            decision: "allow",
            rule: "egress.gate",
            reason: None,
            status: Some(200),
            failure: None,
            ms: 1.5,
        })
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }

    #[test]
    fn each_line_carries_the_hash_of_the_one_before() {
        let mut head = Head::genesis();
        let a = head.link(&call("a")).unwrap();
        let b = head.link(&call("b")).unwrap();
        assert!(a.starts_with(&format!(
            "{{\"seq\":1,\"prev\":\"{GENESIS}\",\"kind\":\"call\""
        )));
        let link = parse_link(b.as_bytes()).unwrap();
        assert_eq!(link.seq, 2);
        assert_eq!(link.prev, line_hash(a.as_bytes()));
        assert_eq!(head.hash, line_hash(b.as_bytes()));
        // Each line is one JSON object.
        let v: serde_json::Value = serde_json::from_str(&b).unwrap();
        assert_eq!(v["tool"], "b");
        // Known answer, so the definition cannot drift silently.
        assert_eq!(
            line_hash(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn batches_link_egress_to_their_call_and_a_restart_continues() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let (file, head) = FileSink::open(&path, 0, false).unwrap();
        assert_eq!(head, Head::genesis());
        let mut sinks = Sinks {
            file: Some(file),
            stderr: false,
        };
        let mut head = head;
        write_batch(&mut sinks, &mut head, &mut [call("a")]).unwrap();
        write_batch(&mut sinks, &mut head, &mut [call("b"), egress(), egress()]).unwrap();
        let written = lines(&path);
        assert_eq!(written.len(), 4);
        let v: serde_json::Value = serde_json::from_str(&written[3]).unwrap();
        assert_eq!(v["call_seq"], 2);
        drop(sinks);
        // A new writer picks up where the file ends.
        let (_, resumed) = FileSink::open(&path, 0, false).unwrap();
        assert_eq!(resumed, head);
        assert_eq!(resumed.seq, 4);
        assert_eq!(resumed.hash, line_hash(written[3].as_bytes()));
    }

    #[test]
    fn rotation_keeps_the_chain_and_resumes_from_the_newest_rotated_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let (file, mut head) = FileSink::open(&path, 600, false).unwrap();
        let mut sinks = Sinks {
            file: Some(file),
            stderr: false,
        };
        for _ in 0..6 {
            write_batch(&mut sinks, &mut head, &mut [call("tool")]).unwrap();
        }
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert!(names.len() >= 3, "{names:?}");
        assert_eq!(names[0], "audit.jsonl");
        assert!(names[1].starts_with("audit.jsonl.0000000000"), "{names:?}");
        // The first line of the active file links to the last rotated line.
        let newest = dir.path().join(names.last().unwrap());
        let last_rotated = lines(&newest).pop().unwrap();
        let first_active = lines(&path).remove(0);
        assert_eq!(
            parse_link(first_active.as_bytes()).unwrap().prev,
            line_hash(last_rotated.as_bytes())
        );
        drop(sinks);
        // With the active file gone, the newest rotated one is resumed.
        let active = lines(&path);
        std::fs::remove_file(&path).unwrap();
        let (_, resumed) = FileSink::open(&path, 600, false).unwrap();
        assert_eq!(resumed.hash, line_hash(last_rotated.as_bytes()));
        assert_eq!(resumed.seq, head.seq - active.len() as u64);
    }

    #[test]
    fn two_processes_on_one_file_extend_one_chain_across_rotations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut writers: Vec<(Sinks, Head)> = (0..2)
            .map(|_| {
                let (file, head) = FileSink::open(&path, 900, false).unwrap();
                (
                    Sinks {
                        file: Some(file),
                        stderr: false,
                    },
                    head,
                )
            })
            .collect();
        for i in 0..12 {
            let (sinks, head) = &mut writers[i % 2];
            let mut batch = if i % 3 == 0 {
                vec![call("a"), egress()]
            } else {
                vec![call("b")]
            };
            write_batch(sinks, head, &mut batch).unwrap();
        }
        let files = std::fs::read_dir(dir.path()).unwrap().count();
        assert!(files >= 3, "rotated {files} times");
        let summary = crate::audit::verify::verify(
            &[dir.path().to_path_buf()],
            &crate::audit::verify::VerifyOptions::default(),
        )
        .unwrap();
        assert_eq!(summary.records, 16);
        // Each writer's head is where its last write left the chain.
        let last = &writers[1].1;
        assert_eq!(last.seq, 16);
        assert_eq!(summary.last_hash, last.hash);
    }

    #[test]
    fn an_incomplete_last_line_is_refused_not_continued() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut head = Head::genesis();
        let line = head.link(&call("a")).unwrap();
        std::fs::write(&path, format!("{line}\n{}", &line[..20])).unwrap();
        let err = FileSink::open(&path, 0, false).err().unwrap();
        assert!(err.problem.contains("incomplete"), "{}", err.problem);
        assert!(err.fix.contains("pve-mcp audit verify"), "{}", err.fix);
        std::fs::write(&path, "not json\n").unwrap();
        let err = FileSink::open(&path, 0, false).err().unwrap();
        assert!(
            err.problem.contains("not an audit record"),
            "{}",
            err.problem
        );
    }

    #[test]
    fn last_line_reads_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let long = "x".repeat(200_000);
        std::fs::write(&path, format!("first\n{long}\n")).unwrap();
        let (line, complete) = last_line(&path).unwrap();
        assert!(complete);
        assert_eq!(line.unwrap().len(), 200_000);
        std::fs::write(&path, "only").unwrap();
        assert_eq!(last_line(&path).unwrap(), (Some(b"only".to_vec()), false));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_failed_write_moves_nothing() {
        // /dev/full accepts the open and fails every write with ENOSPC.
        let (file, mut head) = FileSink::open(Path::new("/dev/full"), 0, false).unwrap();
        let mut sinks = Sinks {
            file: Some(file),
            stderr: false,
        };
        let err = write_batch(&mut sinks, &mut head, &mut [call("a")]).unwrap_err();
        assert!(err.contains("/dev/full"), "{err}");
        assert_eq!(head, Head::genesis());
    }
}
