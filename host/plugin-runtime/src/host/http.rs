//! The `outbound-http` capability: requests go through the
//! [`EgressGuard`](crate::egress::EgressGuard) with the plugin's granted
//! hosts, timeouts and response cap.

use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_1::plateau::plugin::outbound_http as v0_1;
use crate::bindings::v0_2::plateau::plugin::outbound_http as v0_2;
use crate::egress::{HttpError, IncomingResponse, OutgoingRequest};
use crate::state::{Phase, State};

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<State, HasSelf<State>>(linker, |s| s)?;
    v0_2::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}

impl State {
    /// Sends one request; `Err(trap)` only when the call's deadline passed.
    pub(crate) async fn send_http(
        &mut self,
        mut req: OutgoingRequest,
    ) -> wasmtime::Result<Result<IncomingResponse, HttpError>> {
        if self.phase == Phase::Describe {
            return Ok(Err(HttpError::InvalidRequest(
                "outbound http is not available in describe".into(),
            )));
        }
        let limits = &self.plugin.settings.limits;
        req.timeout = req.timeout.min(limits.http_timeout);
        let max_body = limits.http_max_response_bytes;
        let plugin = self.plugin.clone();
        let send = plugin
            .egress
            .send(&plugin.settings.outbound_hosts, req, max_body);
        match tokio::time::timeout(self.remaining(), send).await {
            Ok(result) => Ok(result),
            Err(_) => Err(self.deadline_trap()),
        }
    }
}

fn millis(d: Duration) -> u32 {
    d.as_millis().min(u32::MAX as u128) as u32
}
/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($module:ident, $version:ident) => {
        mod $module {
            use super::$version as wit;
            use super::*;

            impl wit::Host for State {
                async fn send(
                    &mut self,
                    req: wit::OutgoingRequest,
                ) -> wasmtime::Result<Result<wit::IncomingResponse, wit::HttpError>> {
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
                    Ok(match self.send_http(req).await? {
                        Ok(r) => Ok(wit::IncomingResponse {
                            status: r.status,
                            headers: r.headers,
                            body: r.body,
                            connect_ms: millis(r.connect),
                            total_ms: millis(r.total),
                        }),
                        Err(e) => Err(match e {
                            HttpError::HostNotAllowed(h) => wit::HttpError::HostNotAllowed(h),
                            HttpError::AddressRefused(a) => wit::HttpError::AddressRefused(a),
                            HttpError::InvalidRequest(m) => wit::HttpError::InvalidRequest(m),
                            HttpError::Timeout => wit::HttpError::Timeout,
                            HttpError::ResponseTooLarge => wit::HttpError::ResponseTooLarge,
                            HttpError::ConnectionFailed(m) => wit::HttpError::ConnectionFailed(m),
                        }),
                    })
                }
            }
        }
    };
}

wit_impls!(impls_v0_1, v0_1);
wit_impls!(impls_v0_2, v0_2);
