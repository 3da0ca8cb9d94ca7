//! A closed-loop HTTPS load generator for `bench edge`: N clients, each
//! sending its next `GET /` when the last one was answered, on one
//! kept-alive connection or on a new one per request (a full handshake),
//! in rounds that alternate the scenarios; a table with each scenario
//! against the peer row before it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::TlsConnector;

use crate::harness::percentile;
use crate::load;

/// A closed-loop HTTPS load: each client sends its next `GET /` when the
/// answer to the last one arrived, on one kept-alive connection or on a
/// new one (a full handshake: resumption off) each time.
pub struct TlsLoad {
    connector: TlsConnector,
}

impl TlsLoad {
    pub fn new(ca: &str) -> anyhow::Result<TlsLoad> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_file(ca)?)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.resumption = rustls::client::Resumption::disabled();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsLoad {
            connector: TlsConnector::from(Arc::new(config)),
        })
    }

    /// Runs `scenarios` (name, address, kept alive) in turn, in rounds;
    /// prints a table with each row against the row before it when that
    /// is a peer; answers each scenario's req/s.
    pub async fn rounds(
        &self,
        scenarios: &[(&str, SocketAddr, bool)],
        host: &str,
        opts: &load::Options,
    ) -> anyhow::Result<Vec<f64>> {
        let window = Duration::from_secs(opts.seconds) / opts.rounds;
        let mut latencies: Vec<Vec<u32>> = vec![Vec::new(); scenarios.len()];
        let mut errors = vec![0u64; scenarios.len()];
        for _ in 0..opts.rounds {
            for (i, (_, addr, alive)) in scenarios.iter().enumerate() {
                let (l, e) = self
                    .measure(*addr, host, *alive, opts.connections, window)
                    .await?;
                latencies[i].extend(l);
                errors[i] += e;
            }
        }
        let measured = (window * opts.rounds).as_secs_f64();
        println!(
            "{:<34} {:>10} {:>10} {:>10} {:>10} {:>8}",
            "scenario", "req/s", "p50 ms", "p99 ms", "vs peer", "errors"
        );
        let mut rps = Vec::new();
        for (i, (name, _, _)) in scenarios.iter().enumerate() {
            let all = &mut latencies[i];
            all.sort_unstable();
            let ms: Vec<f64> = all.iter().map(|us| f64::from(*us) / 1000.0).collect();
            let r = all.len() as f64 / measured;
            let vs = if name.ends_with("(peer)") || i == 0 {
                "-".to_owned()
            } else {
                format!("{:.0}%", 100.0 * r / rps[i - 1])
            };
            println!(
                "{:<34} {:>10.0} {:>10.3} {:>10.3} {:>10} {:>8}",
                name,
                r,
                percentile(&ms, 0.50),
                percentile(&ms, 0.99),
                vs,
                errors[i]
            );
            rps.push(r);
        }
        Ok(rps)
    }

    /// `connections` clients for a short warm-up, then `window`: the
    /// latencies (microseconds) measured and the errors.
    async fn measure(
        &self,
        addr: SocketAddr,
        host: &str,
        alive: bool,
        connections: usize,
        window: Duration,
    ) -> anyhow::Result<(Vec<u32>, u64)> {
        let start = Instant::now() + Duration::from_millis(500);
        let until = start + window;
        let mut tasks = Vec::new();
        for _ in 0..connections {
            let connector = self.connector.clone();
            let host = host.to_owned();
            tasks.push(tokio::spawn(async move {
                let (mut latencies, mut errors) = (Vec::new(), 0u64);
                let mut sender = None;
                loop {
                    let began = Instant::now();
                    if began >= until {
                        break;
                    }
                    let ok = match exchange(&connector, addr, &host, alive, &mut sender).await {
                        Ok(ok) => ok,
                        Err(_) => {
                            sender = None;
                            false
                        }
                    };
                    if began >= start {
                        latencies.push(began.elapsed().as_micros() as u32);
                        errors += u64::from(!ok);
                    }
                }
                (latencies, errors)
            }));
        }
        let (mut latencies, mut errors) = (Vec::new(), 0);
        for task in tasks {
            let (l, e) = task.await?;
            latencies.extend(l);
            errors += e;
        }
        Ok((latencies, errors))
    }
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

/// One `GET /`: on `sender` when it is kept alive, else on a connection
/// of its own. Whether it answered 2xx.
async fn exchange(
    connector: &TlsConnector,
    addr: SocketAddr,
    host: &str,
    alive: bool,
    sender: &mut Option<Sender>,
) -> anyhow::Result<bool> {
    if sender.is_none() || !alive {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::try_from(host.to_owned())?;
        let tls = connector.connect(name, tcp).await?;
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        tokio::spawn(conn);
        *sender = Some(send);
    }
    let send = sender.as_mut().context("a connection")?;
    send.ready().await?;
    let mut req = hyper::Request::get("/").header("host", host);
    if !alive {
        req = req.header("connection", "close");
    }
    let response = send.send_request(req.body(Empty::new())?).await?;
    let ok = response.status().is_success();
    response.into_body().collect().await?;
    if !alive {
        *sender = None;
    }
    Ok(ok)
}
