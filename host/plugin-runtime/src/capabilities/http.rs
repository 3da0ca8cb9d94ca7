//! The `outbound-http` capability: requests go through the
//! [`EgressGuard`](crate::egress::EgressGuard) with the plugin's granted
//! hosts, timeouts and response cap.

use std::time::Duration;

use wasmtime::component::{HasData, Linker};

use crate::context::{CallContext, Phase};
use crate::egress::{HttpError, IncomingResponse, OutgoingRequest};

mod gen_ {
    wasmtime::component::bindgen!({
        path: [
            "../../wit/plugin@0.1.0",
            "../../wit/plugin@0.2.0",
            "../../wit/outbound-http@0.3.0",
        ],
        interfaces: "
            import plateau:plugin/outbound-http@0.1.0;
            import plateau:plugin/outbound-http@0.2.0;
            import plateau:outbound-http/outbound-http@0.3.0;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::{
    outbound_http::outbound_http as v0_3, plugin0_1_0::outbound_http as v0_1,
    plugin0_2_0::outbound_http as v0_2,
};

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
    v0_3::add_to_linker::<T, HasHttp>(linker, view)
}

impl HttpView<'_> {
    /// Sends one request; `Err(trap)` only when the call's deadline passed.
    async fn send(
        &mut self,
        mut req: OutgoingRequest,
    ) -> wasmtime::Result<Result<IncomingResponse, HttpError>> {
        if self.call.phase == Phase::Describe {
            return Ok(Err(HttpError::InvalidRequest(
                "outbound http is not available in describe".into(),
            )));
        }
        let plugin = self.call.plugin.clone();
        let limits = &plugin.settings.limits;
        req.timeout = req.timeout.min(limits.http_timeout);
        let send = plugin.egress.send(
            &plugin.settings.outbound_hosts,
            req,
            limits.http_max_response_bytes,
        );
        match tokio::time::timeout(self.call.remaining(), send).await {
            Ok(result) => Ok(result),
            Err(_) => Err(self.call.deadline_trap()),
        }
    }
}

fn millis(d: Duration) -> u32 {
    d.as_millis().min(u32::MAX as u128) as u32
}

/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($($wit:ident),+) => {$(
        impl $wit::Host for HttpView<'_> {
            async fn send(
                &mut self,
                req: $wit::OutgoingRequest,
            ) -> wasmtime::Result<Result<$wit::IncomingResponse, $wit::HttpError>> {
                use $wit::HttpError as E;
                let timeout = req
                    .timeout_ms
                    .map_or(Duration::MAX, |ms| Duration::from_millis(ms.into()));
                let req = OutgoingRequest {
                    method: req.method,
                    url: req.url,
                    headers: req.headers,
                    body: req.body,
                    timeout,
                };
                Ok(match HttpView::send(self, req).await? {
                    Ok(r) => Ok($wit::IncomingResponse {
                        status: r.status,
                        headers: r.headers,
                        body: r.body,
                        connect_ms: millis(r.connect),
                        total_ms: millis(r.total),
                    }),
                    Err(e) => Err(match e {
                        HttpError::HostNotAllowed(h) => E::HostNotAllowed(h),
                        HttpError::AddressRefused(a) => E::AddressRefused(a),
                        HttpError::InvalidRequest(m) => E::InvalidRequest(m),
                        HttpError::Timeout => E::Timeout,
                        HttpError::ResponseTooLarge => E::ResponseTooLarge,
                        HttpError::ConnectionFailed(m) => E::ConnectionFailed(m),
                    }),
                })
            }
        }
    )+};
}

wit_impls!(v0_1, v0_2, v0_3);
