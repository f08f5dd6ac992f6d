//! A bug in the host's own code while it serves a guest's call (a host
//! function the guest calls, a hook) must end that call with an error, not
//! the task that answers the client: an unwinding panic there would leave
//! the MCP request without an answer. [`Contained`] turns such a panic into
//! a value.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Polls a future, catching a panic in any poll.
pub struct Contained<F>(pub Pin<Box<F>>);

impl<F: Future> Future for Contained<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The future is dropped right after a panic, so no state it left
        // half-updated is used again.
        match catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Ready(out)) => Poll::Ready(Ok(out)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_while_polling_becomes_an_error() {
        let ok = Contained(Box::pin(async { 7 })).await;
        assert_eq!(ok, Ok(7));
        let failed = Contained(Box::pin(async {
            tokio::task::yield_now().await;
            let v: Vec<u8> = Vec::new();
            v[3]
        }))
        .await;
        assert!(failed.unwrap_err().contains("index out of bounds"));
    }
}
