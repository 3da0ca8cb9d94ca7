//! The HTTP client behind the guard: resolve once, check, connect to the
//! checked address, optionally TLS (rustls with ring), one HTTP/1.1
//! exchange with a deadline and a body cap.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use ipnet::IpNet;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::edge::LocalEdge;
use super::gates::Gates;
use super::pool::{Conn, Key, Pool};
use super::{check_address, host_granted};
use crate::error::Error;

/// A request to send; the timeout is already capped by the host.
#[derive(Debug, Clone)]
pub struct OutgoingRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout: Duration,
    /// Keep at most this many bytes of the response body and drop the
    /// rest (`body_truncated`); none fails a body over the cap instead.
    pub keep_body: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct IncomingResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body had more than the request's `keep_body` bytes.
    pub body_truncated: bool,
    /// Time to an established connection.
    pub connect: Duration,
    /// Time to the whole response.
    pub total: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    #[error("host `{0}` is not granted to the plugin")]
    HostNotAllowed(String),
    #[error("address refused: {0}")]
    AddressRefused(String),
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("the request timed out")]
    Timeout,
    #[error("the response body is over the host's cap")]
    ResponseTooLarge,
    #[error("connection failed: {0}")]
    ConnectionFailed(String),
}

/// Outbound HTTP and SMTP under the operator's address policy; at most
/// [`super::gates::PER_DESTINATION`] HTTP connections open to one
/// destination at once.
#[derive(Clone)]
pub struct EgressGuard {
    allow: Vec<IpNet>,
    tls: TlsConnector,
    /// The same roots and protocol versions, without ALPN (SMTP has none).
    smtp_tls: TlsConnector,
    /// The connections open to each destination, shared by the clones.
    gates: Arc<Gates>,
    /// Kept-alive connections, shared by the clones.
    pool: Arc<Pool>,
    /// This host's app edge, for requests to its apps.
    edge: Option<LocalEdge>,
}

impl std::fmt::Debug for EgressGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressGuard")
            .field("allow", &self.allow)
            .finish_non_exhaustive()
    }
}

impl EgressGuard {
    /// A guard with the operator's exemptions (see [`super::parse_allow_list`]),
    /// trusting Mozilla's roots for https.
    pub fn new(allow: Vec<IpNet>) -> Self {
        Self::with_extra_roots(allow, &[]).expect("the built-in roots are valid")
    }

    /// Like [`EgressGuard::new`], also trusting the DER certificates in
    /// `extra_roots` (an operator's internal CA).
    pub fn with_extra_roots(allow: Vec<IpNet>, extra_roots: &[Vec<u8>]) -> Result<Self, Error> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        for der in extra_roots {
            roots.add(CertificateDer::from(der.clone())).map_err(|e| {
                Error::Config(format!(
                    "an extra TLS root is not a usable certificate: {e}"
                ))
            })?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Config(format!("TLS setup: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = config.clone();
        http.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(EgressGuard {
            allow,
            tls: TlsConnector::from(Arc::new(http)),
            smtp_tls: TlsConnector::from(Arc::new(config)),
            gates: Arc::default(),
            pool: Arc::default(),
            edge: None,
        })
    }

    /// Sends plain-HTTP requests to the names `edge` serves to its address.
    pub fn with_local_edge(mut self, edge: LocalEdge) -> Self {
        self.edge = Some(edge);
        self
    }

    /// The TLS connector for SMTP: the guard's roots, no ALPN.
    pub(super) fn smtp_tls(&self) -> &TlsConnector {
        &self.smtp_tls
    }

    /// Sends `req` if its host is among `granted` and resolves to an allowed
    /// address; reads at most `max_body` bytes of the response.
    pub async fn send(
        &self,
        granted: &[String],
        req: OutgoingRequest,
        max_body: usize,
    ) -> Result<IncomingResponse, HttpError> {
        let start = Instant::now();
        let uri: http::Uri = req
            .url
            .parse()
            .map_err(|e| HttpError::InvalidRequest(format!("url: {e}")))?;
        let (port, tls) = match uri.scheme_str() {
            Some("http") => (uri.port_u16().unwrap_or(80), false),
            Some("https") => (uri.port_u16().unwrap_or(443), true),
            _ => {
                return Err(HttpError::InvalidRequest(
                    "the url must start with http:// or https://".into(),
                ));
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| HttpError::InvalidRequest("the url has no host".into()))?
            .clone();
        let host = authority
            .host()
            .trim_matches(|c| c == '[' || c == ']')
            .to_string();
        if !host_granted(&host, port, granted) {
            return Err(HttpError::HostNotAllowed(host));
        }
        let deadline = start + req.timeout;
        let _entered = tokio::time::timeout_at(deadline.into(), self.gates.enter(&host, port))
            .await
            .map_err(|_| HttpError::Timeout)?;
        let mut request = build_request(&req, &uri, &authority)?;
        let cap = BodyCap {
            max: max_body,
            keep: req.keep_body.map(|keep| keep.min(max_body)),
        };
        let key = Key { tls, host, port };
        let mut kept = self.pool.take(&key);
        loop {
            let (mut conn, connect, fresh) = match kept.take() {
                Some(conn) => (conn, Duration::ZERO, false),
                None => {
                    let conn = self.open(&key, deadline).await?;
                    (conn, start.elapsed(), true)
                }
            };
            let exchanged =
                tokio::time::timeout_at(deadline.into(), exchange(&mut conn.sender, request, cap))
                    .await
                    .map_err(|_| HttpError::Timeout)?;
            let answer = match exchanged {
                Ok(answer) => answer,
                // A kept connection the server closed before the request
                // was written: the request again, on a new one.
                Err(Unsent::Back(back)) if !fresh => {
                    request = *back;
                    continue;
                }
                Err(Unsent::Back(_)) => {
                    return Err(HttpError::ConnectionFailed(
                        "the connection closed before the request was written".into(),
                    ));
                }
                Err(Unsent::Failed(e)) => return Err(e),
            };
            if answer.reusable {
                self.pool.put(key, conn);
            }
            return Ok(IncomingResponse {
                status: answer.status,
                headers: answer.headers,
                body: answer.body,
                body_truncated: answer.truncated,
                connect,
                total: start.elapsed(),
            });
        }
    }

    /// A new connection to `key`: resolved once, to a checked address,
    /// TLS when asked, the HTTP/1.1 handshake done.
    async fn open(&self, key: &Key, deadline: Instant) -> Result<Conn, HttpError> {
        let edge = self.edge.as_ref().filter(|_| !key.tls);
        let addrs = match edge.and_then(|edge| edge.route(&key.host)) {
            Some(addr) => vec![addr],
            None => {
                self.resolve(
                    &key.host,
                    key.port,
                    deadline.saturating_duration_since(Instant::now()),
                )
                .await?
            }
        };
        let tcp = connect(&addrs, deadline).await?;
        if key.tls {
            let name = ServerName::try_from(key.host.clone()).map_err(|_| {
                HttpError::InvalidRequest(format!("`{}` is not a TLS server name", key.host))
            })?;
            let stream = tokio::time::timeout_at(deadline.into(), self.tls.connect(name, tcp))
                .await
                .map_err(|_| HttpError::Timeout)?
                .map_err(|e| HttpError::ConnectionFailed(format!("tls: {e}")))?;
            handshake(stream, deadline).await
        } else {
            handshake(tcp, deadline).await
        }
    }

    /// Resolves `host` once and keeps only the addresses the policy allows.
    pub(super) async fn resolve(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Vec<SocketAddr>, HttpError> {
        let resolved: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::time::timeout(timeout, tokio::net::lookup_host((host, port)))
                .await
                .map_err(|_| HttpError::Timeout)?
                .map_err(|e| HttpError::ConnectionFailed(format!("cannot resolve {host}: {e}")))?
                .collect(),
        };
        let mut refused = None;
        let allowed: Vec<SocketAddr> = resolved
            .into_iter()
            .filter(|addr| match check_address(addr.ip(), &self.allow) {
                Ok(()) => true,
                Err(reason) => {
                    refused.get_or_insert(reason);
                    false
                }
            })
            .collect();
        if allowed.is_empty() {
            return Err(match refused {
                Some(reason) => HttpError::AddressRefused(reason),
                None => HttpError::ConnectionFailed(format!("{host} has no address")),
            });
        }
        Ok(allowed)
    }
}

/// Connects to the first reachable checked address.
pub(super) async fn connect(
    addrs: &[SocketAddr],
    deadline: Instant,
) -> Result<TcpStream, HttpError> {
    let mut last_error = String::new();
    for addr in addrs {
        match tokio::time::timeout_at(deadline.into(), TcpStream::connect(addr)).await {
            Err(_) => return Err(HttpError::Timeout),
            Ok(Ok(stream)) => {
                // Small requests leave at once, not after a delayed ACK.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(e)) => last_error = format!("{addr}: {e}"),
        }
    }
    Err(HttpError::ConnectionFailed(last_error))
}

fn build_request(
    req: &OutgoingRequest,
    uri: &http::Uri,
    authority: &http::uri::Authority,
) -> Result<http::Request<Full<Bytes>>, HttpError> {
    let invalid = |e: http::Error| HttpError::InvalidRequest(e.to_string());
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    // A `host` header the plugin sets names the virtual host (as curl's
    // `-H Host:` does); the connection still goes where the url says.
    let host = req
        .headers
        .iter()
        .rev()
        .find(|(name, _)| name.eq_ignore_ascii_case("host"))
        .map_or(authority.as_str(), |(_, value)| value.as_str());
    let mut builder = http::Request::builder()
        .method(req.method.as_str())
        .uri(path)
        .header(http::header::HOST, host);
    for (name, value) in &req.headers {
        let lower = name.to_ascii_lowercase();
        if matches!(
            lower.as_str(),
            "host" | "connection" | "transfer-encoding" | "content-length"
        ) {
            continue;
        }
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder
        .body(Full::new(Bytes::from(req.body.clone())))
        .map_err(invalid)
}

/// How much of a response body is read: past `keep`, the rest is dropped
/// unread; without it, past `max` the request fails.
#[derive(Debug, Clone, Copy)]
struct BodyCap {
    max: usize,
    keep: Option<usize>,
}

struct Exchanged {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    truncated: bool,
    /// The body was read to its end and neither side closes: the
    /// connection can carry the next request.
    reusable: bool,
}

/// The HTTP/1.1 handshake on a connected stream, and its driver task.
async fn handshake<S>(stream: S, deadline: Instant) -> Result<Conn, HttpError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = tokio::time::timeout_at(
        deadline.into(),
        hyper::client::conn::http1::handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| HttpError::Timeout)?
    .map_err(|e| HttpError::ConnectionFailed(e.to_string()))?;
    let driver = tokio::spawn(connection).abort_handle();
    Ok(Conn { sender, driver })
}

/// Why an exchange gave no answer.
enum Unsent {
    /// The connection closed before the request was written: it is handed
    /// back, to send on another.
    Back(Box<http::Request<Full<Bytes>>>),
    Failed(HttpError),
}

/// One HTTP/1.1 exchange on an open connection.
async fn exchange(
    sender: &mut SendRequest<Full<Bytes>>,
    request: http::Request<Full<Bytes>>,
    cap: BodyCap,
) -> Result<Exchanged, Unsent> {
    let failed = |e: hyper::Error| Unsent::Failed(HttpError::ConnectionFailed(e.to_string()));
    if sender.ready().await.is_err() {
        return Err(Unsent::Back(Box::new(request)));
    }
    let response = match sender.try_send_request(request).await {
        Ok(response) => response,
        Err(mut e) => {
            return Err(match e.take_message() {
                Some(request) => Unsent::Back(Box::new(request)),
                None => failed(e.into_error()),
            });
        }
    };
    let (parts, mut body) = response.into_parts();
    if cap.keep.is_none()
        && let Some(length) = parts.headers.get(http::header::CONTENT_LENGTH)
        && length
            .to_str()
            .ok()
            .and_then(|l| l.parse::<usize>().ok())
            .is_some_and(|l| l > cap.max)
    {
        return Err(Unsent::Failed(HttpError::ResponseTooLarge));
    }
    let mut bytes = Vec::new();
    let mut truncated = false;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(failed)?.into_data() else {
            continue;
        };
        match cap.keep {
            Some(keep) if bytes.len() + data.len() > keep => {
                bytes.extend_from_slice(&data[..keep - bytes.len()]);
                truncated = true;
                break;
            }
            None if bytes.len() + data.len() > cap.max => {
                return Err(Unsent::Failed(HttpError::ResponseTooLarge));
            }
            _ => bytes.extend_from_slice(&data),
        }
    }
    let closes = parts.version != http::Version::HTTP_11
        || parts
            .headers
            .get_all(http::header::CONNECTION)
            .iter()
            .any(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
    let headers = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    Ok(Exchanged {
        status: parts.status.as_u16(),
        headers,
        body: bytes,
        reusable: !truncated && !closes,
        truncated,
    })
}
