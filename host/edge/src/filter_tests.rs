//! The edge's filter chain over a real listener: a block answers without
//! the app, header changes reach the app in order, the response phase
//! changes the answer, and a failing filter fails open or closed as
//! configured, counted. Prints the edge's overhead of a pass filter.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use plateau_contract::edge::{FailMode, HeaderChanges, RequestHead, ResponseHead, Verdict};
use plateau_listen::Timeouts;
use plateau_runner::{Body, Replicas, Result as RunnerResult};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::filters::{FailureKind, Filter, FilterError, FilterFuture};
use crate::{Chain, Edge, Enabled, Target, serve};

/// An app that answers 200 with the request's `x-*` headers in its body.
struct Mirror;

#[async_trait::async_trait]
impl Replicas for Mirror {
    async fn handle(&self, request: Request<Body>) -> RunnerResult<Response<Body>> {
        let mut seen: Vec<String> = request
            .headers()
            .iter()
            .filter(|(n, _)| {
                n.as_str().starts_with("x-") && !n.as_str().starts_with("x-forwarded-")
            })
            .map(|(n, v)| format!("{n}={}", v.to_str().unwrap_or("?")))
            .collect();
        seen.sort();
        let body = Full::new(Bytes::from(seen.join(",")))
            .map_err(|never| match never {})
            .boxed_unsync();
        Ok(Response::builder()
            .header("x-app", "mirror")
            .body(body)
            .unwrap())
    }
    fn env_value(&self, _key: &str) -> Option<String> {
        None
    }
    fn set_replicas(&self, _replicas: u32) {}
    fn stop(&self) {}
}

/// A native filter answering by the path.
struct Rule {
    name: String,
    answer: fn(&RequestHead) -> Result<Verdict, FilterError>,
    response: bool,
}

impl Filter for Rule {
    fn name(&self) -> &str {
        &self.name
    }
    fn on_request(&self, head: RequestHead) -> FilterFuture<'_, Verdict> {
        let answer = (self.answer)(&head);
        Box::pin(async move { answer })
    }
    fn response_phase(&self) -> bool {
        self.response
    }
    fn on_response(&self, _: RequestHead, _: ResponseHead) -> FilterFuture<'_, HeaderChanges> {
        Box::pin(async {
            Ok(HeaderChanges {
                set: vec![("x-filtered".into(), "yes".into())],
                remove: vec!["x-app".into()],
            })
        })
    }
}

fn rule(name: &str, answer: fn(&RequestHead) -> Result<Verdict, FilterError>) -> Arc<dyn Filter> {
    Arc::new(Rule {
        name: name.into(),
        answer,
        response: false,
    })
}

async fn get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req =
        format!("GET {path} HTTP/1.1\r\nHost: hello.apps.localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.to_ascii_lowercase(), body.to_owned())
}

async fn edge_with(chain: Option<Chain>) -> (Arc<Edge>, std::net::SocketAddr) {
    let edge = Arc::new(Edge::new("apps.localhost"));
    edge.set("hello", Target::Serving(Arc::new(Mirror)));
    edge.set_filters("hello", chain.map(Arc::new));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, edge.clone(), Timeouts::default()));
    (edge, addr)
}

#[tokio::test]
async fn filters_block_change_headers_in_order_and_change_the_answer() {
    let chain = Chain {
        app_id: "app_test".into(),
        filters: vec![
            Enabled::new(
                rule("no-admin", |h| {
                    Ok(if h.path.starts_with("/admin") {
                        Verdict::block(403, "no")
                    } else {
                        Verdict::set_header("x-first", "1")
                    })
                }),
                FailMode::Closed,
            ),
            Enabled::new(
                Arc::new(Rule {
                    name: "second".into(),
                    // Sees the first filter's header.
                    answer: |h| {
                        Ok(Verdict::set_header(
                            "x-second",
                            h.header("x-first").unwrap_or("none"),
                        ))
                    },
                    response: true,
                }),
                FailMode::Closed,
            ),
        ],
    };
    let (edge, addr) = edge_with(Some(chain)).await;
    let (head, body) = get(addr, "/admin/x").await;
    assert!(head.starts_with("http/1.1 403"), "{head}");
    assert_eq!(body, "no");
    let (head, body) = get(addr, "/").await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(body, "x-first=1,x-second=1");
    assert!(head.contains("x-filtered: yes"), "{head}");
    assert!(!head.contains("x-app:"), "{head}");
    let chain = edge.filters("hello").unwrap();
    assert_eq!(
        chain.filters[0].counters.answered.load(Ordering::Relaxed),
        1
    );
    assert_eq!(chain.filters[1].counters.passed.load(Ordering::Relaxed), 1);

    // Hot swap: the next request runs on the new chain.
    edge.set_filters("hello", None);
    let (head, _) = get(addr, "/admin/x").await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
}

#[tokio::test]
async fn a_failing_filter_fails_open_or_closed_as_configured() {
    let failing = || {
        rule("broken", |_| {
            Err(FilterError {
                kind: FailureKind::Trap,
                reason: "trapped".into(),
            })
        })
    };
    let slow = || {
        rule("slow", |_| {
            Err(FilterError {
                kind: FailureKind::Timeout,
                reason: "deadline".into(),
            })
        })
    };
    let refusing = || rule("refused", |_| Ok(Verdict::set_header("host", "evil")));
    let open = Chain {
        app_id: "app_test".into(),
        filters: vec![
            Enabled::new(failing(), FailMode::Open).with_id("f_trap"),
            Enabled::new(slow(), FailMode::Open),
            Enabled::new(refusing(), FailMode::Open),
        ],
    };
    let (edge, addr) = edge_with(Some(open)).await;
    let (head, _) = get(addr, "/").await;
    assert!(head.starts_with("http/1.1 200"), "fails open: {head}");
    let chain = edge.filters("hello").unwrap();
    let ids: Vec<&str> = chain.filters.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["f_trap", "slow", "refused"]);
    let stats: Vec<_> = chain.filters.iter().map(|e| e.counters.stats()).collect();
    for s in &stats {
        assert_eq!((s.runs, s.failed_open, s.failures()), (1, 1, 1), "{s:?}");
    }
    let by_kind: Vec<(u64, u64)> = stats.iter().map(|s| (s.traps, s.timeouts)).collect();
    assert_eq!(
        by_kind,
        [(1, 0), (0, 1), (0, 0)],
        "a refused verdict is neither"
    );

    edge.set_filters(
        "hello",
        Some(Arc::new(Chain {
            app_id: "app_test".into(),
            filters: vec![Enabled::new(failing(), FailMode::Closed)],
        })),
    );
    let (head, body) = get(addr, "/").await;
    assert!(head.starts_with("http/1.1 503"), "fails closed: {head}");
    assert!(
        body.contains("filter_failed") && body.contains("broken"),
        "{body}"
    );
    let chain = edge.filters("hello").unwrap();
    assert_eq!(
        chain.filters[0]
            .counters
            .failed_closed
            .load(Ordering::Relaxed),
        1
    );
}

#[tokio::test]
async fn the_edge_overhead_of_a_pass_filter() {
    let n = 300;
    let mut per_request = Vec::new();
    for chain in [
        None,
        Some(Chain {
            app_id: "app_test".into(),
            filters: vec![Enabled::new(
                rule("pass", |_| Ok(Verdict::pass())),
                FailMode::Open,
            )],
        }),
    ] {
        let (_edge, addr) = edge_with(chain).await;
        let started = Instant::now();
        for _ in 0..n {
            let (head, _) = get(addr, "/").await;
            assert!(head.starts_with("http/1.1 200"), "{head}");
        }
        per_request.push(started.elapsed().as_secs_f64() * 1e6 / n as f64);
    }
    eprintln!(
        "edge: {:.1} µs per request without filters, {:.1} µs with one native pass filter ({n} requests each, a new connection each)",
        per_request[0], per_request[1]
    );
}

#[tokio::test]
async fn a_filters_cpu_time_is_counted_per_request() {
    // A filter that burns CPU in its synchronous part, as a host-native
    // filter decides before its future.
    let busy = rule("busy", |h| {
        let mut x = 0u64;
        for i in 0..200_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        Ok(if x == 1 && h.path == "/never" {
            Verdict::block(403, "no")
        } else {
            Verdict::pass()
        })
    });
    let chain = Chain {
        app_id: "app_test".into(),
        filters: vec![
            Enabled::new(busy, FailMode::Open),
            Enabled::new(rule("pass", |_| Ok(Verdict::pass())), FailMode::Open),
        ],
    };
    let (edge, addr) = edge_with(Some(chain)).await;
    for _ in 0..5 {
        let (head, _) = get(addr, "/").await;
        assert!(head.starts_with("http/1.1 200"), "{head}");
    }
    let chain = edge.filters("hello").unwrap();
    let (busy, pass) = (
        chain.filters[0].counters.stats(),
        chain.filters[1].counters.stats(),
    );
    assert_eq!((busy.runs, busy.passed, pass.runs), (5, 5, 5));
    assert!(busy.cpu_ns > 0, "{busy:?}");
    assert!(busy.cpu_ns > pass.cpu_ns, "{busy:?} {pass:?}");
    eprintln!(
        "filter CPU per request: busy {:.1} µs, pass {:.2} µs",
        busy.cpu_us_per_request(),
        pass.cpu_us_per_request()
    );
}
