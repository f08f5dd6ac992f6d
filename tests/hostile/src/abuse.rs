//! Resource abuse: CPU, memory, panics, log flooding, oversized results and
//! exiting. Each must end or be contained by the host, not take it down.

use std::hint::black_box;
use std::io::Write;

use serde_json::{Value, json};

const MIB: usize = 1 << 20;

/// `hostile_spin`: burns CPU until the host's epoch deadline traps it.
pub fn spin() -> ! {
    let mut n: u64 = 0;
    loop {
        // black_box keeps the optimiser from proving the loop side-effect
        // free (an infinite pure loop is UB-adjacent and may be removed).
        n = black_box(n.wrapping_add(1));
    }
}

/// `hostile_memory`: allocates and writes 1 MiB chunks until allocation
/// fails. Without `graceful` the failure aborts (a trap, which is the
/// realistic case); with it the tool reports how far it got, so a test can
/// compare that with the host's memory cap.
pub fn memory(graceful: bool) -> Value {
    // Room for 8 GiB of chunk pointers up front, so growing this vector is
    // never the allocation that fails.
    let mut chunks: Vec<Vec<u8>> = Vec::with_capacity(8192);
    let stopped_by = loop {
        if chunks.len() == chunks.capacity() {
            break "chunk limit (8 GiB) reached";
        }
        let mut chunk: Vec<u8> = Vec::new();
        if graceful {
            if chunk.try_reserve_exact(MIB).is_err() {
                break "allocation failed";
            }
        } else {
            chunk.reserve_exact(MIB);
        }
        // Write every byte so the pages are really committed, not just
        // reserved address space.
        chunk.resize(MIB, 0xA5);
        chunks.push(black_box(chunk));
        if chunks.len().is_multiple_of(16) {
            eprintln!("hostile_memory: {} MiB", chunks.len());
        }
    };
    let allocated = chunks.len();
    drop(chunks);
    json!({ "allocated_mib": allocated, "stopped_by": stopped_by })
}

/// `hostile_panic`: a Rust panic, which on wasm32-wasip2 aborts as a trap.
pub fn panic() -> ! {
    panic!("hostile panic");
}

/// `hostile_stderr_flood`: writes `mib` MiB of 1 KiB lines to stderr.
pub fn stderr_flood(mib: usize) -> Value {
    let total = mib.saturating_mul(MIB);
    let mut line = [b'E'; 1024];
    line[1023] = b'\n';
    let buf: Vec<u8> = line.iter().copied().cycle().take(64 * 1024).collect();
    let mut err = std::io::stderr().lock();
    let mut written = 0usize;
    let mut error = None;
    while written < total {
        let n = buf.len().min(total - written);
        match err.write_all(&buf[..n]) {
            Ok(()) => written += n,
            Err(e) => {
                error = Some(format!("{e:?}"));
                break;
            }
        }
    }
    json!({ "requested_bytes": total, "bytes_written": written, "error": error })
}

/// `hostile_big_output`: the `structured` text of about `mib` MiB,
/// `{"mib":N,"padding":"xxxx..."}`, or `None` when the size overflows.
pub fn big_output(mib: u64) -> Option<String> {
    let pad = usize::try_from(mib).ok()?.checked_mul(MIB)?;
    let head = format!("{{\"mib\":{mib},\"padding\":\"");
    // Exact capacity: a doubling String would need twice the memory and
    // hit the memory cap before the output cap this tool is aimed at.
    let mut s = String::with_capacity(head.len().checked_add(pad)?.checked_add(2)?);
    s.push_str(&head);
    s.extend(std::iter::repeat_n('x', pad));
    s.push_str("\"}");
    Some(s)
}

/// `hostile_exit`: calls `wasi:cli/exit`, which the host must turn into the
/// end of this call rather than of its own process.
pub fn exit(code: i64) -> ! {
    let code = i32::try_from(code).unwrap_or(i32::MAX);
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_output_is_json_of_the_asked_size() {
        let s = big_output(1).unwrap();
        let v: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["padding"].as_str().unwrap().len(), MIB);
        assert_eq!(s.len(), s.capacity());
        assert!(big_output(u64::MAX).is_none());
    }
}
