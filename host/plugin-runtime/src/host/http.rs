//! The `outbound-http` capability: requests go through the
//! [`EgressGuard`](crate::egress::EgressGuard) with the plugin's granted
//! hosts, timeouts and response cap.

use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_1::plateau::plugin::outbound_http as v0_1;
use crate::egress::{HttpError, IncomingResponse, OutgoingRequest};
use crate::state::{Phase, State};

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
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

impl v0_1::Host for State {
    async fn send(
        &mut self,
        req: v0_1::OutgoingRequest,
    ) -> wasmtime::Result<Result<v0_1::IncomingResponse, v0_1::HttpError>> {
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
            Ok(r) => Ok(v0_1::IncomingResponse {
                status: r.status,
                headers: r.headers,
                body: r.body,
                connect_ms: millis(r.connect),
                total_ms: millis(r.total),
            }),
            Err(e) => Err(match e {
                HttpError::HostNotAllowed(h) => v0_1::HttpError::HostNotAllowed(h),
                HttpError::AddressRefused(a) => v0_1::HttpError::AddressRefused(a),
                HttpError::InvalidRequest(m) => v0_1::HttpError::InvalidRequest(m),
                HttpError::Timeout => v0_1::HttpError::Timeout,
                HttpError::ResponseTooLarge => v0_1::HttpError::ResponseTooLarge,
                HttpError::ConnectionFailed(m) => v0_1::HttpError::ConnectionFailed(m),
            }),
        })
    }
}
