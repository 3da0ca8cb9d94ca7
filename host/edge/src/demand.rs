//! What the edge sees of each app's demand, and waking apps scaled to
//! zero.
//!
//! Every request to an app's name (its own or a custom domain) is counted
//! per slug ([`Demand::seen`]): requests, bytes in (the request's head and
//! body) and out (the answer's head and body, as they stream), requests
//! in flight (until the answer's body is done) and when the last one
//! came. The counters only grow; the apps crate reads them for the usage
//! series and for the autoscaler's idle rule.
//!
//! An app the autoscaler took to zero replicas is marked asleep
//! ([`Demand::sleep`]) while its name routes to [`crate::Target::Loading`]:
//! the first request to it calls the waker the apps crate set
//! ([`Demand::set_waker`]) once, and is held like any request to a loading
//! app (up to the edge's hold) until a replica serves it.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, Response, header};
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};
use plateau_listen::Body as ListenBody;
use plateau_runner::{Body, BoxError};

use crate::Edge;

/// Called with a slug when a request reaches an app that is asleep.
pub type Waker = Box<dyn Fn(&str) + Send + Sync>;

/// One app's counters, as read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    pub requests: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Requests whose answer is not yet done.
    pub in_flight: u64,
    /// How long ago the last request came; none before the first.
    pub idle_for: Option<Duration>,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    in_flight: AtomicU64,
    /// Milliseconds after the demand's start, plus one (0: never).
    last: AtomicU64,
}

/// The edge's view of demand, per slug.
pub struct Demand {
    started: Instant,
    apps: Mutex<HashMap<String, Arc<Counters>>>,
    asleep: Mutex<HashSet<String>>,
    waker: OnceLock<Waker>,
}

impl Default for Demand {
    fn default() -> Demand {
        Demand {
            started: Instant::now(),
            apps: Mutex::new(HashMap::new()),
            asleep: Mutex::new(HashSet::new()),
            waker: OnceLock::new(),
        }
    }
}

impl Demand {
    fn counters(&self, slug: &str) -> Arc<Counters> {
        let mut apps = self.apps.lock().unwrap_or_else(|e| e.into_inner());
        apps.entry(slug.to_owned()).or_default().clone()
    }

    /// What the edge has seen of `slug` since it started.
    pub fn seen(&self, slug: &str) -> Seen {
        let apps = self.apps.lock().unwrap_or_else(|e| e.into_inner());
        let Some(c) = apps.get(slug) else {
            return Seen::default();
        };
        let last = c.last.load(Ordering::Relaxed);
        Seen {
            requests: c.requests.load(Ordering::Relaxed),
            bytes_in: c.bytes_in.load(Ordering::Relaxed),
            bytes_out: c.bytes_out.load(Ordering::Relaxed),
            in_flight: c.in_flight.load(Ordering::Relaxed),
            idle_for: (last > 0).then(|| {
                self.started
                    .elapsed()
                    .saturating_sub(Duration::from_millis(last - 1))
            }),
        }
    }

    /// Sets what wakes an app that is asleep (once; later calls are ignored).
    pub fn set_waker(&self, waker: Waker) {
        let _ = self.waker.set(waker);
    }

    /// Marks `slug` asleep: its next request calls the waker.
    pub fn sleep(&self, slug: &str) {
        let mut asleep = self.asleep.lock().unwrap_or_else(|e| e.into_inner());
        asleep.insert(slug.to_owned());
    }

    /// Marks `slug` awake.
    pub fn awake(&self, slug: &str) {
        let mut asleep = self.asleep.lock().unwrap_or_else(|e| e.into_inner());
        asleep.remove(slug);
    }

    pub fn is_asleep(&self, slug: &str) -> bool {
        let asleep = self.asleep.lock().unwrap_or_else(|e| e.into_inner());
        asleep.contains(slug)
    }

    /// Calls the waker if `slug` is asleep, once until it sleeps again.
    fn wake(&self, slug: &str) {
        let was = {
            let mut asleep = self.asleep.lock().unwrap_or_else(|e| e.into_inner());
            asleep.remove(slug)
        };
        if was && let Some(waker) = self.waker.get() {
            waker(slug);
        }
    }

    /// Counts the body of a request to `slug` as it is read.
    pub(crate) fn count_in(&self, slug: &str, body: Body) -> Body {
        Counted {
            inner: body,
            counters: self.counters(slug),
            out: false,
            _in_flight: None,
        }
        .boxed_unsync()
    }
}

/// A body whose data frames are counted as bytes in or out of an app;
/// its size hint is the inner one (so a known length stays known).
struct Counted {
    inner: Body,
    counters: Arc<Counters>,
    out: bool,
    /// Held by an answer's body until it is done.
    _in_flight: Option<InFlight>,
}

impl hyper::body::Body for Counted {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            let counter = if this.out {
                &this.counters.bytes_out
            } else {
                &this.counters.bytes_in
            };
            counter.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Ends a request in flight when dropped (with the answer's body).
struct InFlight(Arc<Counters>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The bytes of a head's header lines, as HTTP/1.1 sends them.
fn head_bytes(headers: &HeaderMap, first_line: usize) -> u64 {
    let lines: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    (first_line + lines + 2) as u64
}

/// Answers `req` as [`crate::serve::route`] does, counting it for the app
/// its Host names and waking that app if it is asleep.
pub(crate) async fn route(
    edge: &Edge,
    req: Request<ListenBody>,
    peer: SocketAddr,
    secure: bool,
) -> Response<Body> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri().host())
        .unwrap_or("");
    let slug = match edge.slug_of(host) {
        Some(slug) => Some(slug.to_ascii_lowercase()),
        None => edge.custom_domain(host).map(|route| route.slug),
    };
    let Some(slug) = slug else {
        return crate::serve::route(edge, req, peer, secure).await;
    };
    let demand = edge.demand();
    let counters = demand.counters(&slug);
    let line = req.method().as_str().len() + req.uri().to_string().len() + 11;
    counters.requests.fetch_add(1, Ordering::Relaxed);
    counters
        .bytes_in
        .fetch_add(head_bytes(req.headers(), line), Ordering::Relaxed);
    counters.in_flight.fetch_add(1, Ordering::Relaxed);
    let now = demand.started.elapsed().as_millis() as u64 + 1;
    counters.last.store(now, Ordering::Relaxed);
    let guard = InFlight(counters.clone());
    demand.wake(&slug);
    let response = crate::serve::route(edge, req, peer, secure).await;
    counters
        .bytes_out
        .fetch_add(head_bytes(response.headers(), 17), Ordering::Relaxed);
    response.map(move |inner| {
        Counted {
            inner,
            counters,
            out: true,
            _in_flight: Some(guard),
        }
        .boxed_unsync()
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[test]
    fn an_asleep_app_wakes_once_per_sleep() {
        let demand = Demand::default();
        let woken = Arc::new(AtomicUsize::new(0));
        let count = woken.clone();
        demand.set_waker(Box::new(move |slug| {
            assert_eq!(slug, "web");
            count.fetch_add(1, Ordering::Relaxed);
        }));
        demand.wake("web");
        assert_eq!(woken.load(Ordering::Relaxed), 0, "awake apps are not woken");
        demand.sleep("web");
        assert!(demand.is_asleep("web"));
        demand.wake("web");
        demand.wake("web");
        assert_eq!(woken.load(Ordering::Relaxed), 1);
        assert!(!demand.is_asleep("web"));
        assert_eq!(demand.seen("web"), Seen::default());
    }
}
