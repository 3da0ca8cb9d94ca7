//! Request coalescing against an app that holds its answers until the
//! test lets them go: concurrent misses of one key reach the app once
//! when the answer is storable, and each on its own when it is not.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Empty, Full};
use plateau_runner::{Body, Replicas, Result as RunnerResult};
use tokio::sync::Semaphore;

use super::{Cdn, Limits};

/// An app that answers each request once the gate gives it a permit,
/// with `cache-control: <cache_control>`; counts the requests it saw.
struct Gated {
    gate: Semaphore,
    cache_control: &'static str,
    calls: AtomicU64,
}

#[async_trait::async_trait]
impl Replicas for Gated {
    async fn handle(&self, _request: Request<Body>) -> RunnerResult<Response<Body>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.gate
            .acquire()
            .await
            .expect("the gate stays open")
            .forget();
        let body = Full::new(Bytes::from_static(b"page"))
            .map_err(|never| match never {})
            .boxed_unsync();
        Ok(Response::builder()
            .header("cache-control", self.cache_control)
            .header("content-length", "4")
            .body(body)
            .unwrap())
    }
    fn env_value(&self, _key: &str) -> Option<String> {
        None
    }
    fn set_replicas(&self, _replicas: u32) {}
    fn stop(&self) {}
}

/// Sends `n` concurrent `GET /page` while the app holds its first answer,
/// waits until the other `n - 1` wait for it, lets every answer go, and
/// answers each request's `X-Cache` and body.
async fn concurrent_misses(cdn: &Cdn, origin: &Arc<Gated>, n: usize) -> Vec<(String, String)> {
    cdn.set_enabled("app", true);
    let app = cdn.enabled("app").unwrap();
    let mut tasks = Vec::new();
    for _ in 0..n {
        let (cdn, app, origin) = (cdn.clone(), app.clone(), origin.clone());
        tasks.push(tokio::spawn(async move {
            let req = Request::builder()
                .method(Method::GET)
                .uri("/page")
                .header("host", "app.apps.localhost")
                .body(Empty::new().map_err(|never| match never {}).boxed_unsync())
                .unwrap();
            let replicas: Arc<dyn Replicas> = origin;
            let response = super::handle(&cdn, app, "app", replicas, req)
                .await
                .unwrap();
            let cache = response.headers()["x-cache"].to_str().unwrap().to_owned();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (cache, String::from_utf8(body.to_vec()).unwrap())
        }));
    }
    // Every request either reached the app or waits for the first.
    while (origin.calls.load(Ordering::SeqCst) as usize) + app.flights.waiting("/page") < n {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        origin.calls.load(Ordering::SeqCst),
        1,
        "the waiters did not go to the app while the first miss was under way"
    );
    origin.gate.add_permits(n);
    let mut got = Vec::new();
    for task in tasks {
        got.push(task.await.unwrap());
    }
    got
}

fn gated(cache_control: &'static str) -> Arc<Gated> {
    Arc::new(Gated {
        gate: Semaphore::new(0),
        cache_control,
        calls: AtomicU64::new(0),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_misses_of_a_storable_answer_reach_the_app_once() {
    let cdn = Cdn::new(Limits::memory(1 << 20)).unwrap();
    let origin = gated("max-age=60");
    let got = concurrent_misses(&cdn, &origin, 8).await;
    assert_eq!(
        origin.calls.load(Ordering::SeqCst),
        1,
        "one request reached the app"
    );
    assert!(got.iter().all(|(_, body)| body == "page"), "{got:?}");
    let misses = got.iter().filter(|(cache, _)| cache == "MISS").count();
    let hits = got.iter().filter(|(cache, _)| cache == "HIT").count();
    assert_eq!((misses, hits), (1, 7), "{got:?}");
    let stats = cdn.stats("app");
    assert_eq!((stats.misses, stats.hits, stats.coalesced), (1, 7, 7));
    assert_eq!(stats.bytes_served, 7 * 4);
    assert_eq!(cdn.enabled("app").unwrap().flights.waiting("/page"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_for_an_answer_not_stored_go_to_the_app_themselves() {
    let cdn = Cdn::new(Limits::memory(1 << 20)).unwrap();
    let origin = gated("no-store");
    let got = concurrent_misses(&cdn, &origin, 5).await;
    assert_eq!(
        origin.calls.load(Ordering::SeqCst),
        5,
        "each waiter asked the app once the first answer could not be stored"
    );
    assert!(
        got.iter()
            .all(|(cache, body)| cache == "MISS" && body == "page"),
        "{got:?}"
    );
    let stats = cdn.stats("app");
    assert_eq!((stats.misses, stats.hits, stats.coalesced), (5, 0, 0));
}
