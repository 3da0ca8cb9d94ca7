//! A real SMTP server for tests, on 127.0.0.1 and a free port: plain,
//! STARTTLS or implicit TLS with a fresh self-signed certificate, AUTH PLAIN
//! and LOGIN, MAIL/RCPT/DATA with dot-unstuffing, RSET, NOOP and QUIT. It
//! records every accepted message and fails on demand (`fail_next`,
//! `reject_recipient`). One task per connection, so it keeps up with
//! throughput benchmarks.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::smtp_session::Session;

/// How clients reach the sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SinkTls {
    /// Plain SMTP; STARTTLS is not offered.
    #[default]
    None,
    /// Plain, STARTTLS offered and required before MAIL; AUTH is offered
    /// only once encrypted.
    StartTls,
    /// TLS from the first byte.
    Implicit,
}

#[derive(Debug, Clone, Default)]
pub struct SmtpSinkOptions {
    pub tls: SinkTls,
    /// A user name and password: AUTH is offered and required before MAIL;
    /// other credentials get 535.
    pub auth: Option<(String, String)>,
}

/// A message the sink accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedMail {
    /// The envelope sender (`MAIL FROM`), without angle brackets.
    pub from: String,
    /// The envelope recipients (`RCPT TO`), without angle brackets.
    pub recipients: Vec<String>,
    /// The data as received, dot-unstuffed, without the final `.` line.
    pub data: Vec<u8>,
    /// The user that authenticated on the connection, if any.
    pub user: Option<String>,
    /// Whether the connection was encrypted.
    pub tls: bool,
}

impl ReceivedMail {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }

    /// The header block, unfolded: one `(name, value)` a header.
    pub fn headers(&self) -> Vec<(String, String)> {
        let text = self.text();
        let head = text.split("\r\n\r\n").next().unwrap_or("");
        let unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ");
        unfolded
            .split("\r\n")
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.to_string(), value.trim().to_string()))
            .collect()
    }

    /// The first header called `name`, compared without case.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers()
            .into_iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, value)| value)
    }
}

/// What the connections share with the [`SmtpSink`].
#[derive(Default)]
pub(crate) struct State {
    pub messages: Mutex<Vec<ReceivedMail>>,
    /// Replies for the next ends of DATA, instead of accepting.
    pub failures: Mutex<VecDeque<(u16, String)>>,
    /// Lowercased address -> reply to its RCPT.
    pub rejected: Mutex<HashMap<String, (u16, String)>>,
    pub connections: AtomicUsize,
    pub attempts: AtomicUsize,
    pub arrived: Notify,
}

/// A running SMTP sink; it stops accepting when dropped.
pub struct SmtpSink {
    addr: SocketAddr,
    certificate: Vec<u8>,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl SmtpSink {
    /// Starts a sink; its certificate is for `localhost` and `127.0.0.1`.
    pub async fn start(options: SmtpSinkOptions) -> SmtpSink {
        let certified =
            rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
                .expect("a self-signed certificate");
        let certificate = certified.cert.der().to_vec();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certified.signing_key.serialize_der(),
        ));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![certified.cert.der().clone()], key)
            .expect("the certificate and key match");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(State::default());
        let shared = state.clone();
        let accept = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                shared.connections.fetch_add(1, Ordering::Relaxed);
                let session = Session::new(shared.clone(), options.clone());
                tokio::spawn(session.serve(socket, acceptor.clone()));
            }
        });
        SmtpSink {
            addr,
            certificate,
            state,
            accept,
        }
    }

    /// A plain sink without authentication.
    pub async fn plain() -> SmtpSink {
        Self::start(SmtpSinkOptions::default()).await
    }

    /// A sink in `tls` mode that requires the credentials `user`/`password`.
    pub async fn with_auth(tls: SinkTls, user: &str, password: &str) -> SmtpSink {
        Self::start(SmtpSinkOptions {
            tls,
            auth: Some((user.into(), password.into())),
        })
        .await
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The sink's self-signed certificate (DER), to trust as a root.
    pub fn certificate_der(&self) -> Vec<u8> {
        self.certificate.clone()
    }

    /// Every accepted message, oldest first.
    pub fn messages(&self) -> Vec<ReceivedMail> {
        self.state.messages.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.state.messages.lock().unwrap().len()
    }

    /// Waits until at least `n` messages were accepted, or `timeout`.
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> Vec<ReceivedMail> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.state.arrived.notified();
            if self.count() >= n {
                return self.messages();
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return self.messages();
            }
        }
    }

    /// Forgets the accepted messages.
    pub fn clear(&self) {
        self.state.messages.lock().unwrap().clear();
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::Relaxed)
    }

    /// Messages whose data was received, accepted or failed.
    pub fn attempts(&self) -> usize {
        self.state.attempts.load(Ordering::Relaxed)
    }

    /// Answers the next `n` ends of DATA with `code` and `message`, without
    /// keeping the message: `fail_next(1, 451, "try later")`.
    pub fn fail_next(&self, n: usize, code: u16, message: &str) {
        let mut failures = self.state.failures.lock().unwrap();
        failures.extend(std::iter::repeat_n((code, message.to_string()), n));
    }

    /// Answers `RCPT TO:<address>` with `code` and `message` from now on.
    pub fn reject_recipient(&self, address: &str, code: u16, message: &str) {
        self.state
            .rejected
            .lock()
            .unwrap()
            .insert(address.to_ascii_lowercase(), (code, message.to_string()));
    }
}
