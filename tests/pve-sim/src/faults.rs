//! Injected faults ([`crate::Fault`]): which one a request or a new
//! connection meets, the broken answers the request faults produce, and the
//! connection that can end in a TCP reset.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::SizeHint;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

use crate::server::Shared;
use crate::util::lock;
use crate::{AuthSeen, Fault, FaultKind};

/// What the accept loop is told when connection faults change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ConnControl {
    /// Bumped when a connection fault is added: open connections close.
    pub generation: u64,
    /// A [`FaultKind::RefuseConnections`] fault is in force: stop listening.
    pub refuse: bool,
}

/// Adds a fault and tells the accept loop if it acts on connections.
pub(crate) fn add(shared: &Shared, fault: Fault) {
    let connection = fault.kind.is_connection_fault();
    let refuse = {
        let mut faults = lock(&shared.faults);
        faults.push(fault);
        refusing(&faults)
    };
    if connection {
        shared.conn_control.send_modify(|c| {
            c.generation += 1;
            c.refuse = refuse;
        });
    }
}

/// Removes every fault; a simulator that refused connections listens again.
pub(crate) fn clear(shared: &Shared) {
    lock(&shared.faults).clear();
    shared.conn_control.send_if_modified(|c| {
        let was = c.refuse;
        c.refuse = false;
        was
    });
}

fn refusing(faults: &[Fault]) -> bool {
    faults
        .iter()
        .any(|f| f.kind == FaultKind::RefuseConnections)
}

/// The request fault a request under `rel` meets, if any; consumes one of
/// its hits. [`FaultKind::ExpireTickets`] only meets requests with a ticket.
pub(crate) fn take_for_request(shared: &Shared, rel: &str, auth: &AuthSeen) -> Option<Fault> {
    let mut faults = lock(&shared.faults);
    let idx = faults.iter().position(|f| {
        let prefix = f.path_prefix.trim_end_matches('/');
        let hit = prefix.is_empty()
            || rel == prefix
            || rel.strip_prefix(prefix).is_some_and(|r| r.starts_with('/'));
        let applies = match f.kind {
            FaultKind::ExpireTickets => matches!(auth, AuthSeen::Ticket { .. }),
            kind => !kind.is_connection_fault(),
        };
        hit && applies && f.times != Some(0)
    })?;
    Some(consume(&mut faults[idx]))
}

/// The certificate fault a new connection's handshake meets, if any;
/// consumes one of its hits.
pub(crate) fn take_for_handshake(shared: &Shared) -> Option<FaultKind> {
    let mut faults = lock(&shared.faults);
    let f = faults.iter_mut().find(|f| {
        f.times != Some(0)
            && matches!(
                f.kind,
                FaultKind::ExpiredCertificate
                    | FaultKind::UntrustedCertificate
                    | FaultKind::WrongNameCertificate
            )
    })?;
    Some(consume(f).kind)
}

fn consume(f: &mut Fault) -> Fault {
    if let Some(n) = &mut f.times {
        *n -= 1;
    }
    f.clone()
}

/// A response as the server is about to send it.
pub(crate) struct Answer {
    pub status: u16,
    pub body: Payload,
    /// `Content-Type`, if the answer has one.
    pub content_type: Option<&'static str>,
}

const JSON: &str = "application/json;charset=UTF-8";

/// The login page a reverse proxy in front of PVE might answer with.
const LOGIN_PAGE: &str = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\
<body><form method=\"post\" action=\"/login\"><input name=\"user\"><input name=\"password\" \
type=\"password\"><button>Sign in</button></form></body></html>\n";

/// The answer a request fault of `kind` makes of the normal one (`status`,
/// `body`, JSON or not); `reset` is the connection's, for a reset.
pub(crate) fn shape(
    kind: FaultKind,
    status: u16,
    body: Option<Bytes>,
    is_json: bool,
    reset: &ResetSwitch,
) -> Answer {
    let body = body.unwrap_or_default();
    let json = |body: Payload| Answer {
        status,
        body,
        content_type: Some(JSON),
    };
    let half = || body.slice(..body.len() / 2);
    match kind {
        FaultKind::ResetMidBody => json(Payload::CutOff {
            first: Some(half()),
            declared: body.len() as u64,
            pause: None,
            reset: reset.clone(),
        }),
        FaultKind::MalformedJson => {
            let mut broken = body.to_vec();
            match broken.iter().rposition(|b| *b == b'}') {
                Some(at) => broken.insert(at, b','),
                None => broken.extend_from_slice(b",}"),
            }
            json(Payload::whole(Bytes::from(broken)))
        }
        FaultKind::TruncatedJson => json(Payload::whole(half())),
        FaultKind::HugeBody { bytes } => Answer {
            status: 200,
            body: Payload::huge(bytes),
            content_type: Some(JSON),
        },
        FaultKind::WrongContentType => Answer {
            status: 200,
            body: Payload::whole(Bytes::from_static(LOGIN_PAGE.as_bytes())),
            content_type: Some("text/html;charset=UTF-8"),
        },
        FaultKind::SlowLoris { interval } => json(Payload::Trickle {
            rest: body,
            interval,
            sleep: None,
        }),
        // Status, ExpireTickets and the connection faults never get here.
        _ => Answer {
            status,
            body: Payload::whole(body),
            content_type: is_json.then_some(JSON),
        },
    }
}

/// A response body, normal or broken.
pub(crate) enum Payload {
    /// All of it in one frame (`None` once sent, or for no body).
    Whole(Option<Bytes>),
    /// `first`, then the connection is reset before the `declared` length.
    CutOff {
        first: Option<Bytes>,
        declared: u64,
        pause: Option<Pin<Box<Sleep>>>,
        reset: ResetSwitch,
    },
    /// One byte per `interval`.
    Trickle {
        rest: Bytes,
        interval: Duration,
        sleep: Option<Pin<Box<Sleep>>>,
    },
    /// `{"data":[` , padding strings, `""]}`: `left` bytes still to send.
    Huge { left: u64, total: u64 },
}

/// How long a connection cut off mid-body waits between the part it sends
/// and the reset.
const RESET_PAUSE: Duration = Duration::from_millis(100);

/// Chunk of a huge body: one JSON string and a comma.
const HUGE_CHUNK: usize = 64 * 1024;
const HUGE_HEAD: &[u8] = b"{\"data\":[";
const HUGE_TAIL: &[u8] = b"\"\"]}";

impl Payload {
    pub fn whole(body: Bytes) -> Payload {
        Payload::Whole((!body.is_empty()).then_some(body))
    }

    fn huge(bytes: u64) -> Payload {
        let total = bytes.max((HUGE_HEAD.len() + HUGE_TAIL.len()) as u64);
        Payload::Huge { left: total, total }
    }

    /// The next frame; `Ok(None)` at the end of the body.
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        match self {
            Payload::Whole(data) => Poll::Ready(data.take().map(Ok)),
            Payload::CutOff {
                first,
                pause,
                reset,
                ..
            } => {
                if let Some(data) = first.take() {
                    // Time for the head and this much of the body to
                    // reach the client before the reset, which would
                    // otherwise discard them in flight.
                    *pause = Some(Box::pin(tokio::time::sleep(RESET_PAUSE)));
                    return Poll::Ready(Some(Ok(data)));
                }
                if let Some(p) = pause
                    && p.as_mut().poll(cx).is_pending()
                {
                    return Poll::Pending;
                }
                reset.trip();
                Poll::Ready(Some(Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "injected fault: connection reset mid-body",
                ))))
            }
            Payload::Trickle {
                rest,
                interval,
                sleep,
            } => {
                if rest.is_empty() {
                    return Poll::Ready(None);
                }
                if let Some(s) = sleep {
                    if s.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    *sleep = None;
                    Poll::Ready(Some(Ok(rest.split_to(1))))
                } else {
                    *sleep = Some(Box::pin(tokio::time::sleep(*interval)));
                    self.poll_next(cx)
                }
            }
            Payload::Huge { left, total } => {
                if *left == 0 {
                    return Poll::Ready(None);
                }
                let chunk = huge_chunk(*left, *total);
                *left -= chunk.len() as u64;
                Poll::Ready(Some(Ok(chunk)))
            }
        }
    }

    pub fn is_end_stream(&self) -> bool {
        match self {
            Payload::Whole(data) => data.is_none(),
            Payload::CutOff { .. } => false,
            Payload::Trickle { rest, .. } => rest.is_empty(),
            Payload::Huge { left, .. } => *left == 0,
        }
    }

    pub fn size_hint(&self) -> SizeHint {
        match self {
            Payload::Whole(data) => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            Payload::CutOff { declared, .. } => SizeHint::with_exact(*declared),
            Payload::Trickle { rest, .. } => SizeHint::with_exact(rest.len() as u64),
            Payload::Huge { left, .. } => SizeHint::with_exact(*left),
        }
    }
}

/// The next piece of a huge body with `left` of `total` bytes to go: the
/// head first, then strings of padding, then the tail, each piece ending
/// exactly where the JSON allows.
fn huge_chunk(left: u64, total: u64) -> Bytes {
    if left == total {
        return Bytes::from_static(HUGE_HEAD);
    }
    let tail = HUGE_TAIL.len() as u64;
    if left <= tail {
        return Bytes::from_static(&HUGE_TAIL[HUGE_TAIL.len() - left as usize..]);
    }
    // A string `"xxx",` of at most HUGE_CHUNK bytes (3 of them quotes and
    // comma), leaving the tail; a remainder under 3 bytes goes into the
    // string before it, so every piece is whole JSON.
    let room = left - tail;
    let len = if room <= HUGE_CHUNK as u64 {
        room
    } else if room - (HUGE_CHUNK as u64) < 3 {
        HUGE_CHUNK as u64 - 3
    } else {
        HUGE_CHUNK as u64
    } as usize;
    if len < 3 {
        // Only a whitespace remainder fits: JSON allows it between values.
        return Bytes::from(vec![b' '; len]);
    }
    let mut chunk = Vec::with_capacity(len);
    chunk.push(b'"');
    chunk.resize(len - 2, b'x');
    chunk.extend_from_slice(b"\",");
    Bytes::from(chunk)
}

/// Trips a connection's reset: once tripped, the connection is closed with
/// a TCP reset (`SO_LINGER` 0) rather than an orderly close.
#[derive(Clone, Default)]
pub(crate) struct ResetSwitch(Arc<AtomicBool>);

impl ResetSwitch {
    fn trip(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn tripped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A client connection that resets instead of closing once its switch is
/// tripped.
pub(crate) struct ConnIo {
    tcp: TcpStream,
    reset: ResetSwitch,
}

impl ConnIo {
    pub fn new(tcp: TcpStream, reset: ResetSwitch) -> ConnIo {
        ConnIo { tcp, reset }
    }

    fn check(&self) -> io::Result<()> {
        if self.reset.tripped() {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "injected fault: connection reset",
            ));
        }
        Ok(())
    }
}

impl Drop for ConnIo {
    fn drop(&mut self) {
        if self.reset.tripped() {
            let _ = self.tcp.set_zero_linger();
        }
    }
}

impl AsyncRead for ConnIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.check()?;
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for ConnIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check()?;
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?;
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?;
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mut p: Payload) -> Vec<u8> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        while let Poll::Ready(Some(chunk)) = p.poll_next(&mut cx) {
            out.extend_from_slice(&chunk.unwrap());
        }
        out
    }

    #[test]
    fn huge_bodies_are_exactly_as_long_as_asked_and_valid_json() {
        let sizes = [
            0,
            13,
            14,
            20,
            HUGE_CHUNK as u64 + 13,
            HUGE_CHUNK as u64 + 14,
            HUGE_CHUNK as u64 + 15,
            HUGE_CHUNK as u64 + 16,
            3 * HUGE_CHUNK as u64 + 1000,
        ];
        for size in sizes {
            let p = Payload::huge(size);
            let expected = p.size_hint().exact().unwrap();
            let body = drain(p);
            assert_eq!(body.len() as u64, expected, "size {size}");
            assert_eq!(expected, size.max(13), "size {size}");
            let v: serde_json::Value =
                serde_json::from_slice(&body).unwrap_or_else(|e| panic!("size {size}: {e}"));
            assert!(v["data"].is_array(), "size {size}");
        }
    }

    #[test]
    fn malformed_and_truncated_bodies_are_not_json() {
        let body = Bytes::from_static(br#"{"data":{"vmid":100}}"#);
        for kind in [FaultKind::MalformedJson, FaultKind::TruncatedJson] {
            let a = shape(kind, 200, Some(body.clone()), true, &ResetSwitch::default());
            let out = drain(a.body);
            assert!(
                serde_json::from_slice::<serde_json::Value>(&out).is_err(),
                "{kind:?}"
            );
        }
    }
}
