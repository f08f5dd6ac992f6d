//! The wasi:http hook at the sandbox's edge: every request a guest makes
//! reaches `send_request`, which admits it (see [`super::admission`]),
//! counts it against the call's budget, records it and forwards it.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{HeaderName, Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use wasmtime_wasi_http::{
    DEFAULT_FORBIDDEN_HEADERS, Error as HttpError, ForbiddenHeaderFilter, RequestOptions, WasiBody,
    WasiHttpHooks,
};

use super::access::Access;
use super::admission::{admit_body, admit_head, admit_params};
use super::answer;
use super::binding::Binding;
use super::forward::forward;
use super::gate::Gate;
use super::record::{CallBudget, EgressLog, complete, count_sent, deny, deny_more, push};
use crate::upstream::UpstreamFailure;

/// A denied request's body is read (up to these bounds) before the denial
/// is returned: wstd writes the body while it waits for the response, and
/// dropping it early shows the guest "connection reset" instead.
const DRAIN_LIMIT: usize = 1 << 20;
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// What one call may consume upstream, from `[sandbox]`.
#[derive(Debug, Clone, Copy)]
pub struct CallCaps {
    /// Cap on one upstream response body.
    pub max_response_bytes: usize,
    /// Cap on the requests one call may send (`[sandbox] max_requests_per_call`).
    pub max_requests: usize,
}

/// The per-call hooks: the gate, the cluster and methods this call may
/// use, and where to record what it did.
pub struct CallHooks {
    gate: Arc<Gate>,
    tool: Arc<str>,
    access: Access,
    binding: Arc<Binding>,
    max_response_bytes: usize,
    log: EgressLog,
    budget: Arc<CallBudget>,
}

impl CallHooks {
    /// Hooks for one call of `tool` with this `access`, held to its
    /// `binding` (no cluster: every request is refused).
    pub fn new(
        gate: Arc<Gate>,
        tool: &str,
        access: Access,
        binding: Binding,
        caps: CallCaps,
        log: EgressLog,
    ) -> Self {
        Self {
            gate,
            tool: tool.into(),
            access,
            binding: Arc::new(binding),
            max_response_bytes: caps.max_response_bytes,
            log,
            budget: Arc::new(CallBudget::new(caps.max_requests)),
        }
    }

    /// The call's request and refusal counts, which the sandbox watches to
    /// end a call that sent too many requests or had too many refused.
    pub fn budget(&self) -> Arc<CallBudget> {
        self.budget.clone()
    }
}

/// Headers the guest may not set: the credentials are the host's alone.
fn is_forbidden(name: &HeaderName) -> bool {
    DEFAULT_FORBIDDEN_HEADERS.contains(name)
        || name == http::header::AUTHORIZATION
        || name == http::header::COOKIE
        || name == http::header::PROXY_AUTHORIZATION
        || name.as_str().eq_ignore_ascii_case("csrfpreventiontoken")
}

type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;
type SendFuture =
    Box<dyn Future<Output = Result<(Response<WasiBody>, IoFuture), HttpError>> + Send>;

impl WasiHttpHooks for CallHooks {
    fn forbidden_header_filter(&mut self) -> ForbiddenHeaderFilter {
        Arc::new(is_forbidden)
    }

    fn send_request(
        &mut self,
        request: Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        let started = Instant::now();
        let log = self.log.clone();
        let tool = self.tool.clone();
        let budget = self.budget.clone();
        // A call past its budget is being stopped: nothing more goes out,
        // and the request is not even looked at (nor its body read).
        if budget.exhausted() {
            deny_more(&log, &tool, &budget);
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        let (mut record, verdict) = admit_head(
            &self.gate,
            request.method(),
            request.uri(),
            self.access,
            self.binding.cluster,
            &self.binding.writes,
        );
        let index = match verdict {
            Ok(index) => index,
            Err(denial) => {
                deny(&log, &tool, &budget, record, denial);
                return Box::new(async move {
                    if !budget.exhausted() {
                        drain(request.into_body()).await;
                    }
                    Err(HttpError::HttpRequestDenied)
                });
            }
        };
        let gate = self.gate.clone();
        let binding = self.binding.clone();
        let max_response = self.max_response_bytes;
        Box::new(async move {
            let endpoint = gate.endpoint(index);
            let (parts, body) = request.into_parts();
            let body = match admit_body(&parts.method, body).await {
                Ok(body) => body,
                Err(denial) => {
                    deny(&log, &tool, &budget, record, denial);
                    return Err(HttpError::HttpRequestDenied);
                }
            };
            if let Err(denial) = admit_params(&gate, &mut record, &parts, &body, &binding) {
                deny(&log, &tool, &budget, record, denial);
                return Err(HttpError::HttpRequestDenied);
            }
            // Refused too often while the body was read: stopping.
            if budget.exhausted() {
                deny_more(&log, &tool, &budget);
                return Err(HttpError::HttpRequestDenied);
            }
            if !count_sent(&log, &tool, &budget, &record) {
                return Err(HttpError::HttpRequestDenied);
            }
            // The answers the gate reads: a write's when later requests may
            // carry what it answered, a guarded read's for its record.
            let keeps_answer = if parts.method == http::Method::GET {
                Gate::guards(&parts.method, &parts.uri)
            } else {
                !binding.answer_fields.is_empty()
            };
            let is_read = parts.method == http::Method::GET;
            let request = Request::from_parts(parts, Full::new(body));
            // Recorded as it leaves (no status yet) and completed when the
            // answer comes: a call cancelled while this waits still shows
            // that the request was sent.
            let slot = push(&log, record.clone());
            let result = match forward(
                &endpoint.upstream,
                binding.credential,
                request,
                max_response,
            )
            .await
            {
                Ok(response) if keeps_answer && response.status().is_success() => {
                    kept(response, |body| {
                        if is_read {
                            record.answer = answer::summary(body);
                        } else {
                            binding.history.remember(&binding.answer_fields, body);
                        }
                    })
                    .await
                }
                other => other,
            };
            record.elapsed = started.elapsed();
            match &result {
                Ok(response) => record.status = Some(response.status().as_u16()),
                Err((failure, _)) => record.failure = Some(failure.clone()),
            }
            tracing::debug!(
                tool = %tool,
                cluster = %endpoint.cluster,
                method = %record.method,
                path = %record.path,
                status = ?record.status,
                ms = record.elapsed.as_millis() as u64,
                "upstream request"
            );
            if let Some(failure) = &record.failure {
                tracing::warn!(tool = %tool, cluster = %endpoint.cluster, path = %record.path, "upstream failed: {failure}");
            }
            complete(&log, slot, record);
            let response = result.map_err(|(_, e)| e)?;
            Ok((response, Box::new(async { Ok(()) }) as IoFuture))
        })
    }
}

/// The response with its body read whole and shown to `keep` first, then
/// handed on as it came; a body that fails (over the cap, cut off) fails
/// the guest's read the same way it would have streamed.
async fn kept(
    response: Response<WasiBody>,
    keep: impl FnOnce(&[u8]),
) -> Result<Response<WasiBody>, (UpstreamFailure, HttpError)> {
    let (parts, body) = response.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            let failure = UpstreamFailure::Other(format!("the answer could not be read: {e}"));
            return Err((failure, e));
        }
    };
    keep(&bytes);
    let body = Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync();
    Ok(Response::from_parts(parts, body))
}

async fn drain(body: WasiBody) {
    let limited = Limited::new(body, DRAIN_LIMIT);
    let _ = tokio::time::timeout(DRAIN_TIME, limited.collect()).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::gate::Denial;
    use crate::egress::record::{MAX_RECORDED_LEN, MAX_REFUSALS, TRUNCATED};

    #[test]
    fn credential_headers_are_forbidden_to_the_guest() {
        for name in [
            "authorization",
            "cookie",
            "csrfpreventiontoken",
            "CSRFPreventionToken",
            "proxy-authorization",
            "host",
        ] {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            assert!(is_forbidden(&name), "{name}");
        }
        assert!(!is_forbidden(&HeaderName::from_static("accept")));
    }

    /// A GET to a host that is not the configured endpoint, with a long
    /// path: refused by the gate.
    fn refused_request() -> Request<WasiBody> {
        let uri = format!("https://203.0.113.7:8006/api2/json/{}", "a".repeat(10_000));
        let body = http_body_util::Empty::<bytes::Bytes>::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        Request::get(uri).body(body).unwrap()
    }

    #[tokio::test]
    async fn refusals_past_the_cap_end_the_call_and_are_only_counted() {
        let gate = Arc::new(Gate::new(Vec::new()));
        let log = EgressLog::default();
        let mut hooks = CallHooks::new(
            gate,
            "t",
            Access::Read,
            Binding::default(),
            CallCaps {
                max_response_bytes: 1 << 20,
                max_requests: crate::config::DEFAULT_MAX_REQUESTS_PER_CALL,
            },
            log.clone(),
        );
        let refusals = hooks.budget();
        for i in 0..1000 {
            let sent = hooks.send_request(refused_request(), None, Box::new(async { Ok(()) }));
            assert!(matches!(
                Box::into_pin(sent).await,
                Err(HttpError::HttpRequestDenied)
            ));
            assert_eq!(refusals.exhausted(), i >= MAX_REFUSALS, "after {i}");
        }
        // The sandbox's wait for the signal ends at once.
        tokio::time::timeout(Duration::from_secs(1), refusals.exhausted_signal())
            .await
            .expect("the stop signal");
        let records = log.lock().unwrap();
        assert_eq!(records.len(), MAX_REFUSALS + 1);
        for r in &records[..MAX_REFUSALS] {
            assert_eq!(r.denied, Some(Denial::Authority));
            assert_eq!(r.path.len(), MAX_RECORDED_LEN + TRUNCATED.len());
            assert!(r.path.ends_with(TRUNCATED));
        }
        assert_eq!(
            records[MAX_REFUSALS].denied,
            Some(Denial::RefusedMore(1000 - MAX_REFUSALS))
        );
    }
}
