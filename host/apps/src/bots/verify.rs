//! Forward-confirmed reverse DNS of a client claiming to be a search
//! engine's crawler: the PTR names of its address, then the A (or AAAA)
//! records of each name, which must include the address. The confirmed
//! name is then checked against the claimed crawler's suffixes
//! (`plateau_waf_expr::bots::Bot::owns_host`).
//!
//! Lookups go to the resolver the operator configures
//! (`PLATEAU_DNS_RESOLVER`: its `ip[:port]` servers, or the system's from
//! `/etc/resolv.conf`), one UDP question at a time with a deadline. They
//! are made here rather than through `hickory_resolver`, which answers
//! the loopback and other special-use reverse zones itself (RFC 6761)
//! instead of asking the servers.
//!
//! Results are cached per address: a confirmed name for [`CONFIRMED_FOR`],
//! none for [`UNCONFIRMED_FOR`], a failed lookup (a resolver down or
//! slow) for [`FAILED_FOR`]. The request path never waits on a slow
//! resolver: a request whose address is not cached starts the lookup (or
//! joins the one under way) and waits for it at most its `wait`; past
//! that, the client counts as unverified for this request, and the lookup
//! finishes in the background for the next.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hickory_resolver::proto::op::{Message, Query, ResponseCode};
use hickory_resolver::proto::rr::{Name, RData, RecordType};
use tokio::net::UdpSocket;
use tokio::sync::watch;

/// How long a confirmed name is trusted.
pub const CONFIRMED_FOR: Duration = Duration::from_secs(3600);
/// How long an address without one is not asked about again.
pub const UNCONFIRMED_FOR: Duration = Duration::from_secs(600);
/// How long a failed lookup counts as unconfirmed.
pub const FAILED_FOR: Duration = Duration::from_secs(30);
/// The deadline of one question to one server.
const QUESTION_DEADLINE: Duration = Duration::from_secs(2);
/// The most addresses cached.
const MAX_CACHED: usize = 100_000;
/// The most PTR names of one address tried.
const MAX_NAMES: usize = 4;

type Outcome = Option<Arc<str>>;

#[derive(Clone)]
enum Entry {
    Done { host: Outcome, until: Instant },
    Pending(watch::Receiver<Option<Outcome>>),
}

/// The verifier of one agent, shared by every app's bot policy.
pub struct Verifier {
    servers: Vec<SocketAddr>,
    cache: Mutex<HashMap<IpAddr, Entry>>,
}

impl Verifier {
    /// Asking `servers`; none: the system's (no server found: every
    /// lookup fails, so no crawler verifies).
    pub fn new(servers: Option<Vec<SocketAddr>>) -> Verifier {
        let servers = servers.unwrap_or_else(system_servers);
        if servers.is_empty() {
            tracing::warn!("bots: no DNS server to verify crawlers with");
        }
        Verifier {
            servers,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The forward-confirmed name of `ip`, waiting at most `wait` for a
    /// lookup; None when it has none, or when the lookup is not done.
    pub async fn confirmed_host(self: &Arc<Self>, ip: IpAddr, wait: Duration) -> Outcome {
        let ip = ip.to_canonical();
        let now = Instant::now();
        let mut rx = {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            match cache.get(&ip) {
                Some(Entry::Done { host, until }) if *until > now => return host.clone(),
                Some(Entry::Pending(rx)) => rx.clone(),
                _ => {
                    if cache.len() >= MAX_CACHED {
                        cache.retain(|_, e| matches!(e, Entry::Done { until, .. } if *until > now));
                        if cache.len() >= MAX_CACHED {
                            cache.clear();
                        }
                    }
                    let (tx, rx) = watch::channel(None);
                    cache.insert(ip, Entry::Pending(rx.clone()));
                    tokio::spawn(self.clone().look_up(ip, tx));
                    rx
                }
            }
        };
        match tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await {
            Ok(Ok(done)) => done.clone().flatten(),
            _ => None,
        }
    }

    async fn look_up(self: Arc<Self>, ip: IpAddr, tx: watch::Sender<Option<Outcome>>) {
        let (host, ttl) = match forward_confirmed(&self.servers, ip).await {
            Ok(Some(host)) => (Some(Arc::from(host)), CONFIRMED_FOR),
            Ok(None) => (None, UNCONFIRMED_FOR),
            Err(e) => {
                tracing::info!(%ip, error = %e, "bots: verifying a crawler's address");
                (None, FAILED_FOR)
            }
        };
        let entry = Entry::Done {
            host: host.clone(),
            until: Instant::now() + ttl,
        };
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(ip, entry);
        let _ = tx.send(Some(host));
    }
}

/// The system's name servers (`/etc/resolv.conf`), on port 53.
fn system_servers() -> Vec<SocketAddr> {
    match hickory_resolver::system_conf::read_system_conf() {
        Ok((config, _)) => {
            let mut servers: Vec<SocketAddr> = config
                .name_servers()
                .iter()
                .map(|ns| SocketAddr::new(ns.ip, 53))
                .collect();
            servers.dedup();
            servers
        }
        Err(e) => {
            tracing::warn!(error = %e, "bots: reading the system's resolver settings");
            Vec::new()
        }
    }
}

/// The first PTR name of `ip` whose addresses include `ip`.
async fn forward_confirmed(servers: &[SocketAddr], ip: IpAddr) -> Result<Option<String>, String> {
    let names: Vec<Name> = ask(servers, &Name::from(ip), RecordType::PTR)
        .await?
        .into_iter()
        .filter_map(|d| match d {
            RData::PTR(ptr) => Some(ptr.0),
            _ => None,
        })
        .take(MAX_NAMES)
        .collect();
    let family = if ip.is_ipv4() {
        RecordType::A
    } else {
        RecordType::AAAA
    };
    for name in names {
        let confirms = ask(servers, &name, family).await?.iter().any(|d| match d {
            RData::A(a) => IpAddr::V4(a.0) == ip,
            RData::AAAA(a) => IpAddr::V6(a.0) == ip,
            _ => false,
        });
        if confirms {
            return Ok(Some(name.to_string().trim_end_matches('.').to_owned()));
        }
    }
    Ok(None)
}

/// The answers of type `kind` at `name`, from the first server that
/// answers (an empty list for a name that does not exist).
async fn ask(servers: &[SocketAddr], name: &Name, kind: RecordType) -> Result<Vec<RData>, String> {
    let mut last = "no DNS server".to_owned();
    for server in servers {
        match tokio::time::timeout(QUESTION_DEADLINE, ask_one(*server, name, kind)).await {
            Ok(Ok(answers)) => return Ok(answers),
            Ok(Err(e)) => last = format!("{server}: {e}"),
            Err(_) => last = format!("{server}: no answer within {QUESTION_DEADLINE:?}"),
        }
    }
    Err(last)
}

async fn ask_one(server: SocketAddr, name: &Name, kind: RecordType) -> Result<Vec<RData>, String> {
    let local: SocketAddr = match server {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local).await.map_err(|e| e.to_string())?;
    socket.connect(server).await.map_err(|e| e.to_string())?;
    let mut question = Message::query();
    question.metadata.recursion_desired = true;
    question.add_query(Query::query(name.clone(), kind));
    let bytes = question.to_vec().map_err(|e| e.to_string())?;
    socket.send(&bytes).await.map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 4096];
    loop {
        let n = socket.recv(&mut buf).await.map_err(|e| e.to_string())?;
        let Ok(reply) = Message::from_vec(&buf[..n]) else {
            continue;
        };
        // Only the answer to this question (its id and name) counts.
        if reply.metadata.id != question.metadata.id
            || reply.queries.first().map(Query::name) != Some(name)
        {
            continue;
        }
        if reply.metadata.truncation {
            return Err("the answer does not fit a UDP message".to_owned());
        }
        return match reply.metadata.response_code {
            ResponseCode::NoError => Ok(reply
                .answers
                .into_iter()
                .map(|r| r.data)
                .filter(|d| d.record_type() == kind)
                .collect()),
            ResponseCode::NXDomain => Ok(Vec::new()),
            code => Err(format!("the server answered {code}")),
        };
    }
}
