//! The `outbound-http` capability: requests go through the
//! [`EgressGuard`](crate::egress::EgressGuard) with the plugin's granted
//! hosts, timeouts and response cap. From 0.4.0 also `send-many`: a list
//! of requests sent concurrently, answered before the call's deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{HasData, Linker};

use crate::context::{CallContext, Phase, PluginContext};
use crate::egress::{HttpError, IncomingResponse, OutgoingRequest};

mod gen_ {
    wasmtime::component::bindgen!({
        path: [
            "../../wit/legacy/plugin@0.1.0",
            "../../wit/legacy/plugin@0.2.0",
            "../../wit/legacy/outbound-http@0.3.0",
            "../../wit/deps/outbound-http",
        ],
        interfaces: "
            import plateau:plugin/outbound-http@0.1.0;
            import plateau:plugin/outbound-http@0.2.0;
            import plateau:outbound-http/outbound-http@0.3.0;
            import plateau:outbound-http/outbound-http@0.4.0;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::{
    outbound_http0_3_0::outbound_http as v0_3, outbound_http0_4_0::outbound_http as v0_4,
    plugin0_1_0::outbound_http as v0_1, plugin0_2_0::outbound_http as v0_2,
};

/// The most requests of one `send-many` in flight at once.
const MANY_IN_FLIGHT: usize = 64;
/// The most requests one `send-many` takes.
const MANY_MAX: usize = 256;
/// The time `send-many` leaves before the call's deadline to hand its
/// answers back.
const MANY_MARGIN: Duration = Duration::from_millis(200);

/// What `outbound-http` sees of the store: the call, whose deadline bounds
/// each request.
pub(crate) struct HttpView<'a> {
    pub call: &'a mut CallContext,
}

struct HasHttp;

impl HasData for HasHttp {
    type Data<'a> = HttpView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> HttpView<'_>,
) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<T, HasHttp>(linker, view)?;
    v0_2::add_to_linker::<T, HasHttp>(linker, view)?;
    v0_3::add_to_linker::<T, HasHttp>(linker, view)?;
    v0_4::add_to_linker::<T, HasHttp>(linker, view)
}

impl HttpView<'_> {
    /// Sends one request; `Err(trap)` only when the call's deadline passed.
    async fn send(
        &mut self,
        req: OutgoingRequest,
    ) -> wasmtime::Result<Result<IncomingResponse, HttpError>> {
        if self.call.phase == Phase::Describe {
            return Ok(Err(not_in_describe()));
        }
        let send = through_guard(self.call.plugin.clone(), req, Duration::MAX);
        match tokio::time::timeout(self.call.remaining(), send).await {
            Ok(result) => Ok(result),
            Err(_) => Err(self.call.deadline_trap()),
        }
    }

    /// Sends `reqs`, up to [`MANY_IN_FLIGHT`] at once, each request's
    /// timeout cut to end [`MANY_MARGIN`] before the call's deadline; the
    /// answers in the order of `reqs`.
    async fn send_many(
        &mut self,
        reqs: Vec<OutgoingRequest>,
    ) -> wasmtime::Result<Vec<Result<IncomingResponse, HttpError>>> {
        let refused = |why: HttpError| (0..reqs.len()).map(|_| Err(why.clone())).collect();
        if self.call.phase == Phase::Describe {
            return Ok(refused(not_in_describe()));
        }
        if reqs.len() > MANY_MAX {
            return Ok(refused(HttpError::InvalidRequest(format!(
                "send-many takes at most {MANY_MAX} requests, not {}",
                reqs.len()
            ))));
        }
        let plugin = self.call.plugin.clone();
        let until = Instant::now() + self.call.remaining().saturating_sub(MANY_MARGIN);
        let permits = Arc::new(tokio::sync::Semaphore::new(MANY_IN_FLIGHT));
        let mut sends = tokio::task::JoinSet::new();
        let count = reqs.len();
        for (i, req) in reqs.into_iter().enumerate() {
            let (plugin, permits) = (plugin.clone(), permits.clone());
            sends.spawn(async move {
                let _permit = permits.acquire_owned().await;
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return (i, Err(HttpError::Timeout));
                }
                (i, through_guard(plugin, req, left).await)
            });
        }
        let mut answers: Vec<Option<Result<IncomingResponse, HttpError>>> =
            (0..count).map(|_| None).collect();
        let collect = async {
            while let Some(joined) = sends.join_next().await {
                let (i, answer) = joined?;
                answers[i] = Some(answer);
            }
            Ok::<_, tokio::task::JoinError>(())
        };
        match tokio::time::timeout(self.call.remaining(), collect).await {
            Ok(joined) => joined?,
            Err(_) => return Err(self.call.deadline_trap()),
        }
        Ok(answers
            .into_iter()
            .map(|a| a.unwrap_or(Err(HttpError::Timeout)))
            .collect())
    }
}

/// `req` through the egress guard with the plugin's hosts and caps, its
/// timeout cut to the host's and to `left`.
async fn through_guard(
    plugin: Arc<PluginContext>,
    mut req: OutgoingRequest,
    left: Duration,
) -> Result<IncomingResponse, HttpError> {
    let limits = &plugin.settings.limits;
    req.timeout = req.timeout.min(limits.http_timeout).min(left);
    plugin
        .egress
        .send(
            &plugin.settings.outbound_hosts,
            req,
            limits.http_max_response_bytes,
        )
        .await
}

fn not_in_describe() -> HttpError {
    HttpError::InvalidRequest("outbound http is not available in describe".into())
}

fn millis(d: Duration) -> u32 {
    d.as_millis().min(u32::MAX as u128) as u32
}

/// The error of every WIT version, from the guard's.
macro_rules! wit_errors {
    ($($wit:ident),+) => {$(
        impl From<HttpError> for $wit::HttpError {
            fn from(e: HttpError) -> Self {
                match e {
                    HttpError::HostNotAllowed(h) => Self::HostNotAllowed(h),
                    HttpError::AddressRefused(a) => Self::AddressRefused(a),
                    HttpError::InvalidRequest(m) => Self::InvalidRequest(m),
                    HttpError::Timeout => Self::Timeout,
                    HttpError::ResponseTooLarge => Self::ResponseTooLarge,
                    HttpError::ConnectionFailed(m) => Self::ConnectionFailed(m),
                }
            }
        }
    )+};
}

wit_errors!(v0_1, v0_2, v0_3, v0_4);

fn timeout(ms: Option<u32>) -> Duration {
    ms.map_or(Duration::MAX, |ms| Duration::from_millis(ms.into()))
}

/// The traits of the versions before 0.4.0 (one `send`, the whole body),
/// on the logic above.
macro_rules! wit_impls {
    ($($wit:ident),+) => {$(
        impl $wit::Host for HttpView<'_> {
            async fn send(
                &mut self,
                req: $wit::OutgoingRequest,
            ) -> wasmtime::Result<Result<$wit::IncomingResponse, $wit::HttpError>> {
                let req = OutgoingRequest {
                    timeout: timeout(req.timeout_ms),
                    method: req.method,
                    url: req.url,
                    headers: req.headers,
                    body: req.body,
                    keep_body: None,
                };
                Ok(HttpView::send(self, req).await?.map(|r| $wit::IncomingResponse {
                    status: r.status,
                    headers: r.headers,
                    body: r.body,
                    connect_ms: millis(r.connect),
                    total_ms: millis(r.total),
                }).map_err(Into::into))
            }
        }
    )+};
}

wit_impls!(v0_1, v0_2, v0_3);

impl From<v0_4::OutgoingRequest> for OutgoingRequest {
    fn from(req: v0_4::OutgoingRequest) -> Self {
        OutgoingRequest {
            timeout: timeout(req.timeout_ms),
            keep_body: req.keep_body_bytes.map(|n| n as usize),
            method: req.method,
            url: req.url,
            headers: req.headers,
            body: req.body,
        }
    }
}

fn v0_4_answer(
    answer: Result<IncomingResponse, HttpError>,
) -> Result<v0_4::IncomingResponse, v0_4::HttpError> {
    answer
        .map(|r| v0_4::IncomingResponse {
            status: r.status,
            headers: r.headers,
            body: r.body,
            body_truncated: r.body_truncated,
            connect_ms: millis(r.connect),
            total_ms: millis(r.total),
        })
        .map_err(Into::into)
}

impl v0_4::Host for HttpView<'_> {
    async fn send(
        &mut self,
        req: v0_4::OutgoingRequest,
    ) -> wasmtime::Result<Result<v0_4::IncomingResponse, v0_4::HttpError>> {
        Ok(v0_4_answer(HttpView::send(self, req.into()).await?))
    }

    async fn send_many(
        &mut self,
        reqs: Vec<v0_4::OutgoingRequest>,
    ) -> wasmtime::Result<Vec<Result<v0_4::IncomingResponse, v0_4::HttpError>>> {
        let reqs = reqs.into_iter().map(Into::into).collect();
        Ok(HttpView::send_many(self, reqs)
            .await?
            .into_iter()
            .map(v0_4_answer)
            .collect())
    }
}
