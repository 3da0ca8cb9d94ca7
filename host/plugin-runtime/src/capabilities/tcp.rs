//! The `tcp` capability (WIT 0.5.1): bytes written to a TCP or TLS server
//! through the [`EgressGuard`](crate::egress::EgressGuard) with the
//! plugin's granted hosts, under the call's deadline.

use std::time::Duration;

use wasmtime::component::{HasData, Linker};

use crate::context::{CallContext, Phase};
use crate::egress::{StreamDestination, StreamError};

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/deps/tcp"],
        interfaces: "
            import plateau:tcp/tcp@0.5.1;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::tcp::tcp as v0_5;

/// What `tcp` sees of the store: the call, whose deadline bounds each
/// send.
pub(crate) struct TcpView<'a> {
    pub call: &'a mut CallContext,
}

struct HasTcp;

impl HasData for HasTcp {
    type Data<'a> = TcpView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> TcpView<'_>,
) -> wasmtime::Result<()> {
    v0_5::add_to_linker::<T, HasTcp>(linker, view)
}

impl TcpView<'_> {
    /// One send; `Err(trap)` only when the call's deadline passed.
    async fn send(
        &mut self,
        destination: StreamDestination,
        payload: Vec<u8>,
    ) -> wasmtime::Result<Result<u64, StreamError>> {
        if self.call.phase == Phase::Describe {
            return Ok(Err(StreamError::Invalid(
                "tcp is not available in describe".into(),
            )));
        }
        let plugin = self.call.plugin.clone();
        let limit = plugin.settings.limits.http_timeout;
        let send = plugin.egress.send_stream(
            &plugin.settings.outbound_hosts,
            destination,
            &payload,
            limit,
        );
        match tokio::time::timeout(self.call.remaining(), send).await {
            Ok(result) => Ok(result),
            Err(_) => Err(self.call.deadline_trap()),
        }
    }
}

impl v0_5::Host for TcpView<'_> {
    async fn send(
        &mut self,
        destination: v0_5::Destination,
        payload: Vec<u8>,
    ) -> wasmtime::Result<Result<u64, v0_5::Error>> {
        use v0_5::Error as E;
        let destination = StreamDestination {
            host: destination.host,
            port: destination.port,
            tls: destination.tls,
            timeout: Duration::from_millis(u64::from(destination.timeout_ms)),
        };
        Ok(TcpView::send(self, destination, payload)
            .await?
            .map_err(|e| match e {
                StreamError::HostNotAllowed(m) => E::HostNotAllowed(m),
                StreamError::AddressRefused(m) => E::AddressRefused(m),
                StreamError::ConnectionFailed(m) => E::ConnectionFailed(m),
                StreamError::TlsFailed(m) => E::TlsFailed(m),
                StreamError::Timeout => E::Timeout,
                StreamError::Invalid(m) => E::Invalid(m),
            }))
    }
}
