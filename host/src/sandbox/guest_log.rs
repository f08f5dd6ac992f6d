//! The guest's stdout and stderr: kept in memory up to a cap, then logged
//! by the host. Past the cap, writes are accepted and dropped, so a chatty
//! or hostile guest neither fills the host's memory nor fails (Rust's
//! `eprintln!` panics when a write fails).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// A shared, capped in-memory sink for one call's guest output.
#[derive(Clone)]
pub struct CappedPipe {
    inner: Arc<Mutex<Buffer>>,
}

struct Buffer {
    bytes: Vec<u8>,
    cap: usize,
    dropped: usize,
}

impl CappedPipe {
    /// A pipe keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Buffer {
                bytes: Vec::new(),
                cap,
                dropped: 0,
            })),
        }
    }

    /// What the guest wrote, lossily decoded, with a note of what was cut.
    pub fn contents(&self) -> String {
        let Ok(buffer) = self.inner.lock() else {
            return String::new();
        };
        let mut text = String::from_utf8_lossy(&buffer.bytes).into_owned();
        if buffer.dropped > 0 {
            text.push_str(&format!("\n[... {} more bytes dropped]", buffer.dropped));
        }
        text
    }

    fn write(&self, data: &[u8]) {
        if let Ok(mut buffer) = self.inner.lock() {
            let room = buffer.cap.saturating_sub(buffer.bytes.len());
            let keep = room.min(data.len());
            buffer.bytes.extend_from_slice(&data[..keep]);
            buffer.dropped += data.len() - keep;
        }
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for CappedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.write(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_up_to_the_cap_and_counts_the_rest() {
        let pipe = CappedPipe::new(4);
        pipe.write(b"abc");
        pipe.write(b"defgh");
        assert_eq!(pipe.contents(), "abcd\n[... 4 more bytes dropped]");
    }
}
