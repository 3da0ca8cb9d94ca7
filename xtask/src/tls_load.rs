//! A closed-loop HTTPS load generator for `bench edge`: N clients, each
//! sending its next `GET /` when the last one was answered, on one
//! kept-alive connection or on a new one per request (a full handshake),
//! in rounds that alternate the scenarios; a table with each scenario
//! against the peer row before it, then what each scenario's errors were
//! (the step that failed and why: an I/O error's kind, a reset, an early
//! end of file, a status), so the error column explains itself.
//!
//! A client does what real ones do when an answer says
//! `Connection: close` (nginx's after `keepalive_requests`): it sends its
//! next request on a new connection. Those closes are not errors; each
//! scenario's count of them is printed beside the errors.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
        let mut tallies: Vec<Tally> = vec![Tally::default(); scenarios.len()];
        let mut per_round: Vec<Vec<f64>> = vec![Vec::new(); scenarios.len()];
        for _ in 0..opts.rounds {
            for (i, (_, addr, alive)) in scenarios.iter().enumerate() {
                let (l, e) = self
                    .measure(*addr, host, *alive, opts.connections, window)
                    .await?;
                per_round[i].push(l.len() as f64 / window.as_secs_f64());
                latencies[i].extend(l);
                tallies[i].add(e);
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
                tallies[i].errors.values().sum::<u64>()
            );
            rps.push(r);
        }
        for (tally, (name, _, alive)) in tallies.iter().zip(scenarios) {
            let mut kinds: Vec<String> = tally
                .errors
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect();
            if kinds.is_empty() {
                kinds.push("none".to_owned());
            }
            print!("  {name}: errors {}", kinds.join(", "));
            if *alive {
                print!("; {} answers closed with Connection: close", tally.closed);
            }
            println!();
        }
        let rows: Vec<(&str, Vec<f64>, Option<usize>)> = scenarios
            .iter()
            .zip(per_round)
            .enumerate()
            .map(|(i, ((name, _, _), rounds))| {
                let peer = i.checked_sub(1).filter(|_| !name.ends_with("(peer)"));
                (*name, rounds, peer)
            })
            .collect();
        load::print_rounds(&rows);
        Ok(rps)
    }

    /// `connections` clients for a short warm-up, then `window`: the
    /// latencies (microseconds) measured and the errors by kind.
    async fn measure(
        &self,
        addr: SocketAddr,
        host: &str,
        alive: bool,
        connections: usize,
        window: Duration,
    ) -> anyhow::Result<(Vec<u32>, Tally)> {
        let start = Instant::now() + Duration::from_millis(500);
        let until = start + window;
        let mut tasks = Vec::new();
        for _ in 0..connections {
            let connector = self.connector.clone();
            let host = host.to_owned();
            tasks.push(tokio::spawn(async move {
                let (mut latencies, mut tally) = (Vec::new(), Tally::default());
                let mut sender = None;
                loop {
                    let began = Instant::now();
                    if began >= until {
                        break;
                    }
                    let outcome = exchange(&connector, addr, &host, alive, &mut sender).await;
                    if outcome.is_err() {
                        sender = None;
                    }
                    if began >= start {
                        latencies.push(began.elapsed().as_micros() as u32);
                        match outcome {
                            Ok(closed) => tally.closed += u64::from(closed),
                            Err(kind) => *tally.errors.entry(kind).or_default() += 1,
                        }
                    }
                }
                (latencies, tally)
            }));
        }
        let (mut latencies, mut tally) = (Vec::new(), Tally::default());
        for task in tasks {
            let (l, t) = task.await?;
            latencies.extend(l);
            tally.add(t);
        }
        Ok((latencies, tally))
    }
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

/// What a scenario's requests met besides answers.
#[derive(Clone, Default)]
struct Tally {
    /// Errors by kind: the step that failed and why.
    errors: BTreeMap<String, u64>,
    /// Kept-alive answers that said `Connection: close`.
    closed: u64,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        for (kind, n) in other.errors {
            *self.errors.entry(kind).or_default() += n;
        }
        self.closed += other.closed;
    }
}

/// One `GET /`: on `sender` when it is kept alive, else on a connection
/// of its own. Whether the server closed a kept-alive connection after
/// its answer (`Connection: close`: the next request opens another); a
/// failure is its kind ([`kind`]), or the status when it is not 2xx.
async fn exchange(
    connector: &TlsConnector,
    addr: SocketAddr,
    host: &str,
    alive: bool,
    sender: &mut Option<Sender>,
) -> Result<bool, String> {
    if sender.is_none() || !alive {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| kind("connect", &e))?;
        tcp.set_nodelay(true).map_err(|e| kind("connect", &e))?;
        let name = ServerName::try_from(host.to_owned()).map_err(|e| kind("connect", &e))?;
        let tls = connector
            .connect(name, tcp)
            .await
            .map_err(|e| kind("handshake", &e))?;
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| kind("handshake", &e))?;
        tokio::spawn(conn);
        *sender = Some(send);
    }
    let Some(send) = sender.as_mut() else {
        return Err("no connection".to_owned());
    };
    send.ready().await.map_err(|e| kind("reuse", &e))?;
    let mut req = hyper::Request::get("/").header("host", host);
    if !alive {
        req = req.header("connection", "close");
    }
    let req = req
        .body(Empty::new())
        .map_err(|e| format!("request: {e}"))?;
    let response = send
        .send_request(req)
        .await
        .map_err(|e| kind("response", &e))?;
    let status = response.status();
    let closed = response
        .headers()
        .get_all(hyper::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|o| o.trim().eq_ignore_ascii_case("close"));
    response
        .into_body()
        .collect()
        .await
        .map_err(|e| kind("body", &e))?;
    if !alive || closed {
        *sender = None;
    }
    if !status.is_success() {
        return Err(format!("status {}", status.as_u16()));
    }
    Ok(alive && closed)
}

/// What failed at `step`: the I/O error's kind somewhere in `e`'s chain
/// (a reset, an early end of file...), else what hyper says it was.
fn kind(step: &str, e: &(dyn std::error::Error + 'static)) -> String {
    let mut source = Some(e);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            let what = match io.kind() {
                std::io::ErrorKind::ConnectionReset => "reset".to_owned(),
                std::io::ErrorKind::UnexpectedEof => "early eof".to_owned(),
                other => format!("io {other:?}"),
            };
            return format!("{step}: {what}");
        }
        source = e.source();
    }
    let what = match e.downcast_ref::<hyper::Error>() {
        Some(h) if h.is_incomplete_message() => "closed mid-message".to_owned(),
        Some(h) if h.is_canceled() => "canceled (connection closed)".to_owned(),
        Some(h) if h.is_closed() => "connection closed".to_owned(),
        Some(h) if h.is_parse() => "unparsable answer".to_owned(),
        Some(h) if h.is_timeout() => "timeout".to_owned(),
        _ => e.to_string(),
    };
    format!("{step}: {what}")
}
