//! [`ContainerReplicas`]: one deployment's containers. Requests go to
//! them in turn over HTTP/1.1 (an upgrade the replica accepts, such as a
//! WebSocket, is spliced to the client's connection: [`splice_upgrade`]);
//! a scale change starts or stops containers;
//! `stop` (or the last reference going away) tears them all down once the
//! requests in flight are answered.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::replica::Replica;
use super::{Paths, Template, replica_id};
use crate::{Body, BoxError, Error, Replicas, Result};

/// Longest wait for requests in flight before a stop kills the containers.
const DRAIN_WITHIN: Duration = Duration::from_secs(30);
/// Longest time one request may take.
const REQUEST_DEADLINE: Duration = Duration::from_secs(60);

pub struct ContainerReplicas {
    shared: Arc<Shared>,
}

struct Shared {
    template: Template,
    paths: Arc<Paths>,
    next_id: Arc<AtomicU64>,
    running: Mutex<Vec<Arc<Replica>>>,
    turn: AtomicUsize,
    in_flight: AtomicUsize,
    stopped: AtomicBool,
    /// Set once a stop has torn every container down.
    torn_down: AtomicBool,
    client: Client<HttpConnector, Body>,
    /// Serialises scale changes.
    scaling: tokio::sync::Mutex<()>,
    /// CPU (µs) and bytes sent of the replicas stopped so far.
    retired: Arc<Retired>,
}

/// What stopped replicas used, so usage only grows.
#[derive(Default)]
struct Retired {
    cpu_usec: AtomicU64,
    sent_bytes: AtomicU64,
}

impl Retired {
    /// Adds what `replica` used; blocking (reads its firewall counters).
    fn add(&self, replica: &Replica) {
        self.cpu_usec
            .fetch_add(replica.used().cpu_usec, Ordering::Relaxed);
        self.sent_bytes
            .fetch_add(replica.sent_bytes(), Ordering::Relaxed);
    }
}

impl ContainerReplicas {
    pub(super) async fn start(
        template: Template,
        paths: Arc<Paths>,
        next_id: Arc<AtomicU64>,
        replicas: u32,
    ) -> Result<ContainerReplicas> {
        let shared = Arc::new(Shared {
            template,
            paths,
            next_id,
            running: Mutex::new(Vec::new()),
            turn: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
            torn_down: AtomicBool::new(false),
            client: Client::builder(TokioExecutor::new()).build_http(),
            scaling: tokio::sync::Mutex::new(()),
            retired: Arc::new(Retired::default()),
        });
        shared.scale_to(replicas).await?;
        Ok(ContainerReplicas { shared })
    }

    /// The addresses of the running replicas.
    pub fn addresses(&self) -> Vec<std::net::SocketAddr> {
        self.shared.running().iter().map(|r| r.addr).collect()
    }

    /// The container ids of the running replicas.
    pub fn container_ids(&self) -> Vec<String> {
        self.shared.running().iter().map(|r| r.id.clone()).collect()
    }
}

impl Shared {
    fn running(&self) -> Vec<Arc<Replica>> {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Starts or stops containers until `n` run.
    async fn scale_to(&self, n: u32) -> Result<()> {
        let _turn = self.scaling.lock().await;
        let n = n.max(1) as usize;
        loop {
            let have = self.running().len();
            if have >= n || self.stopped.load(Ordering::Acquire) {
                break;
            }
            let id = replica_id(&self.template, &self.next_id);
            let replica = Replica::start(id, &self.template, self.paths.clone()).await?;
            // A stop while it started has taken the running list already:
            // under the list's lock, either the stop's teardown gets it or
            // it is torn down here.
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if self.stopped.load(Ordering::Acquire) {
                drop(running);
                tokio::task::spawn_blocking(move || drop(replica));
                break;
            }
            running.push(Arc::new(replica));
        }
        let extra: Vec<Arc<Replica>> = {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            let keep = n.min(running.len());
            running.split_off(keep)
        };
        if !extra.is_empty() {
            // A removed replica finishes the requests it holds (they hold
            // an Arc of it) and is torn down when the last one ends; what
            // it used so far is kept.
            let retired = self.retired.clone();
            tokio::task::spawn_blocking(move || {
                for replica in &extra {
                    retired.add(replica);
                }
                drop(extra)
            });
        }
        Ok(())
    }

    fn pick(&self) -> Option<Arc<Replica>> {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.is_empty() {
            return None;
        }
        let i = self.turn.fetch_add(1, Ordering::Relaxed) % running.len();
        Some(running[i].clone())
    }

    fn teardown_all(&self) {
        let all: Vec<Arc<Replica>> =
            std::mem::take(&mut *self.running.lock().unwrap_or_else(|e| e.into_inner()));
        for replica in all {
            replica.teardown();
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let all: Vec<Arc<Replica>> =
            std::mem::take(&mut *self.running.lock().unwrap_or_else(|e| e.into_inner()));
        if !all.is_empty() {
            // Teardown runs commands: off the executor's threads.
            std::thread::spawn(move || drop(all));
        }
    }
}

/// Counts a request in flight while it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Once both sides of an accepted upgrade are handed over, copies bytes
/// both ways until either closes; the connection holds the replica.
fn splice_upgrade(
    client: hyper::upgrade::OnUpgrade,
    replica_side: hyper::upgrade::OnUpgrade,
    replica: Arc<Replica>,
) {
    tokio::spawn(async move {
        let (Ok(client), Ok(upstream)) = tokio::join!(client, replica_side) else {
            return;
        };
        let mut client = hyper_util::rt::TokioIo::new(client);
        let mut upstream = hyper_util::rt::TokioIo::new(upstream);
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        drop(replica);
    });
}

#[async_trait]
impl Replicas for ContainerReplicas {
    async fn handle(&self, request: http::Request<Body>) -> Result<http::Response<Body>> {
        let shared = &self.shared;
        shared.in_flight.fetch_add(1, Ordering::AcqRel);
        let _counted = InFlight(&shared.in_flight);
        if shared.stopped.load(Ordering::Acquire) {
            return Err(Error::Stopped);
        }
        let replica = shared.pick().ok_or(Error::Stopped)?;
        let (mut parts, body) = request.into_parts();
        // The client's side of an upgrade, taken before the request goes
        // on (hyper's client ignores it).
        let client_upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        parts.uri = format!("http://{}{path}", replica.addr)
            .parse()
            .map_err(|e| Error::Failed(format!("cannot address the replica: {e}")))?;
        let request = http::Request::from_parts(parts, body);
        let mut response = tokio::time::timeout(REQUEST_DEADLINE, shared.client.request(request))
            .await
            .map_err(|_| Error::Timeout(REQUEST_DEADLINE.as_secs()))?
            .map_err(|e| Error::Failed(format!("the replica did not answer: {e}")))?;
        if response.status() == http::StatusCode::SWITCHING_PROTOCOLS
            && let Some(client) = client_upgrade
        {
            splice_upgrade(client, hyper::upgrade::on(&mut response), replica.clone());
        }
        // The body streams after this returns: it keeps the replica alive.
        Ok(response.map(|body| {
            body.map_err(move |e| {
                let _ = &replica;
                Box::new(e) as BoxError
            })
            .boxed_unsync()
        }))
    }

    fn env_value(&self, key: &str) -> Option<String> {
        let t = &self.shared.template;
        t.env
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    fn set_replicas(&self, replicas: u32) {
        let shared = self.shared.clone();
        tokio::spawn(async move {
            if let Err(e) = shared.scale_to(replicas).await {
                tracing::warn!(error = %e, "apps: scaling containers");
            }
        });
    }

    fn usage(&self) -> crate::Usage {
        let running = self.shared.running();
        let mut usage = crate::Usage {
            cpu_usec: self.shared.retired.cpu_usec.load(Ordering::Relaxed),
            capacity_milli: running.len() as u64 * u64::from(self.shared.template.limits.milli_cpu),
            memory_bytes: 0,
            replicas: running.len() as u32,
        };
        for replica in &running {
            let used = replica.used();
            usage.cpu_usec += used.cpu_usec;
            usage.memory_bytes += used.memory_bytes;
        }
        usage
    }

    fn egress_bytes(&self) -> u64 {
        let running = self.shared.running();
        self.shared.retired.sent_bytes.load(Ordering::Relaxed)
            + running.iter().map(|r| r.sent_bytes()).sum::<u64>()
    }

    fn stop(&self) {
        if self.shared.stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = self.shared.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            while shared.in_flight.load(Ordering::Acquire) > 0 && started.elapsed() < DRAIN_WITHIN {
                std::thread::sleep(Duration::from_millis(20));
            }
            shared.teardown_all();
            shared.torn_down.store(true, Ordering::Release);
        });
    }

    fn drained(&self) -> bool {
        self.shared.torn_down.load(Ordering::Acquire)
    }
}
