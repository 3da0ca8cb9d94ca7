//! The CDN's behaviour against an app whose answers each test writes:
//! what is stored and for whom (`Cache-Control`, `Vary`, `Authorization`),
//! `Age`, revalidation with `ETag` and `Last-Modified`, a client's own
//! validators and stale-while-revalidate (`purge_tests`: purges and
//! bounds).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response};
use http_body_util::{BodyExt, Empty, Full};
use plateau_runner::{Body, Replicas, Result as RunnerResult};

use super::{Cdn, Limits};

type Answer = fn(&http::request::Parts, u64) -> (u16, Vec<(&'static str, String)>, String);

/// An app answering with `answer(request, call number)`, keeping the
/// headers of each request it saw.
pub(super) struct Origin {
    answer: Answer,
    calls: AtomicU64,
    seen: Mutex<Vec<HeaderMap>>,
}

impl Origin {
    pub(super) fn new(answer: Answer) -> Arc<Origin> {
        Arc::new(Origin {
            answer,
            calls: AtomicU64::new(0),
            seen: Mutex::new(Vec::new()),
        })
    }

    fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    fn last_seen(&self, name: &str) -> Option<String> {
        let seen = self.seen.lock().unwrap();
        seen.last()?
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    }
}

#[async_trait::async_trait]
impl Replicas for Origin {
    async fn handle(&self, request: Request<Body>) -> RunnerResult<Response<Body>> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let (parts, _) = request.into_parts();
        self.seen.lock().unwrap().push(parts.headers.clone());
        let (status, headers, body) = (self.answer)(&parts, n);
        let mut response = Response::builder().status(status);
        for (name, value) in headers {
            response = response.header(name, value);
        }
        let body = if parts.method == Method::HEAD {
            Bytes::new()
        } else {
            Bytes::from(body)
        };
        Ok(response
            .body(
                Full::new(body)
                    .map_err(|never| match never {})
                    .boxed_unsync(),
            )
            .unwrap())
    }
    fn env_value(&self, _key: &str) -> Option<String> {
        None
    }
    fn set_replicas(&self, _replicas: u32) {}
    fn stop(&self) {}
}

/// What one request got: status, `X-Cache`, `Age`, body, headers.
pub(super) struct Got {
    pub(super) status: u16,
    pub(super) cache: String,
    pub(super) age: Option<u64>,
    pub(super) body: String,
    pub(super) headers: HeaderMap,
}

async fn ask(
    cdn: &Cdn,
    origin: &Arc<Origin>,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
) -> Got {
    cdn.set_enabled("app", true);
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "app.apps.localhost");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let req = req
        .body(Empty::new().map_err(|never| match never {}).boxed_unsync())
        .unwrap();
    let app = cdn.enabled("app").unwrap();
    let replicas: Arc<dyn Replicas> = origin.clone();
    let response = super::handle(cdn, app, "app", replicas, req).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    Got {
        status: parts.status.as_u16(),
        cache: header("x-cache").unwrap_or_default(),
        age: header("age").map(|a| a.parse().unwrap()),
        body: String::from_utf8(body.to_vec()).unwrap(),
        headers: parts.headers,
    }
}

pub(super) async fn get(cdn: &Cdn, origin: &Arc<Origin>, path: &str) -> Got {
    ask(cdn, origin, Method::GET, path, &[]).await
}

pub(super) fn memory_cdn() -> Cdn {
    Cdn::new(Limits::memory(1 << 20)).unwrap()
}

/// The answer `cache-control: <the query>`, body `<path> #<call>`.
pub(super) fn by_query(
    parts: &http::request::Parts,
    n: u64,
) -> (u16, Vec<(&'static str, String)>, String) {
    let cc = parts.uri.query().unwrap_or("").replace("%20", " ");
    (
        200,
        vec![("cache-control", cc)],
        format!("{} #{n}", parts.uri.path()),
    )
}

#[tokio::test]
async fn fresh_responses_are_hits_with_their_age_and_the_rest_goes_to_the_app() {
    let cdn = memory_cdn();
    let origin = Origin::new(by_query);
    for (path, stored) in [
        ("/a?max-age=60", true),
        ("/b?s-maxage=60,%20max-age=0", true),
        ("/c?no-store", false),
        ("/d?private,%20max-age=60", false),
        ("/e?max-age=60,%20s-maxage=0", false),
        ("/f?no-cache", false),
    ] {
        let first = get(&cdn, &origin, path).await;
        assert_eq!(
            (first.status, first.cache.as_str()),
            (200, "MISS"),
            "{path}"
        );
        let second = get(&cdn, &origin, path).await;
        let want = if stored { "HIT" } else { "MISS" };
        assert_eq!(second.cache, want, "{path}");
        if stored {
            assert_eq!(second.body, first.body, "{path}: the stored body");
            assert_eq!(second.age, Some(0), "{path}");
            assert!(second.headers.contains_key("date"), "{path}");
        } else {
            assert_ne!(second.body, first.body, "{path}: the app answers again");
        }
    }
    assert_eq!(origin.calls(), 2 + 4 * 2);
    let stats = cdn.stats("app");
    assert_eq!((stats.hits, stats.misses), (2, 10));
    assert_eq!(stats.stored.entries, 2);
    assert_eq!(stats.bytes_served, ("/a #1".len() + "/b #2".len()) as u64);
    assert!((stats.hit_ratio() - 2.0 / 12.0).abs() < 1e-9);
}

#[tokio::test]
async fn age_counts_the_apps_age_and_the_time_in_the_cache() {
    let cdn = memory_cdn();
    let origin = Origin::new(|_, n| {
        (
            200,
            vec![
                ("cache-control", "max-age=600".into()),
                ("age", "100".into()),
            ],
            format!("#{n}"),
        )
    });
    get(&cdn, &origin, "/aged").await;
    let hit = get(&cdn, &origin, "/aged").await;
    assert_eq!(hit.cache, "HIT");
    let age = hit.age.unwrap();
    assert!((100..=101).contains(&age), "{age}");
}

#[tokio::test]
async fn a_requests_authorization_keeps_its_answer_out_unless_it_is_public() {
    let cdn = memory_cdn();
    let origin = Origin::new(by_query);
    for (path, stored) in [
        ("/private?max-age=60", false),
        ("/public?public,%20max-age=60", true),
    ] {
        let auth = [("authorization", "Bearer x")];
        ask(&cdn, &origin, Method::GET, path, &auth).await;
        let again = ask(&cdn, &origin, Method::GET, path, &auth).await;
        assert_eq!(again.cache, if stored { "HIT" } else { "MISS" }, "{path}");
    }
}

#[tokio::test]
async fn an_answer_setting_a_cookie_is_never_stored() {
    let cdn = memory_cdn();
    let origin = Origin::new(|_, n| {
        (
            200,
            vec![
                ("cache-control", "public, max-age=600".into()),
                ("set-cookie", format!("session=visitor-{n}")),
            ],
            format!("#{n}"),
        )
    });
    get(&cdn, &origin, "/login").await;
    let again = get(&cdn, &origin, "/login").await;
    assert_eq!(again.cache, "MISS");
}

#[tokio::test]
async fn an_etag_is_revalidated_and_a_304_answers_from_the_cache() {
    let cdn = memory_cdn();
    let origin = Origin::new(|parts, n| {
        let etag = "\"v1\"".to_owned();
        if parts
            .headers
            .get("if-none-match")
            .is_some_and(|v| v.to_str().unwrap().contains("\"v1\""))
        {
            return (
                304,
                vec![("etag", etag), ("cache-control", "max-age=0".into())],
                String::new(),
            );
        }
        (
            200,
            vec![("etag", etag), ("cache-control", "max-age=0".into())],
            format!("body #{n}"),
        )
    });
    let first = get(&cdn, &origin, "/doc").await;
    assert_eq!(
        (first.cache.as_str(), first.body.as_str()),
        ("MISS", "body #1")
    );
    let second = get(&cdn, &origin, "/doc").await;
    assert_eq!((second.status, second.cache.as_str()), (200, "REVALIDATED"));
    assert_eq!(second.body, "body #1", "the stored body");
    assert_eq!(origin.last_seen("if-none-match").as_deref(), Some("\"v1\""));
    // A client's own validator that matches gets a 304 from the cache.
    let own = ask(
        &cdn,
        &origin,
        Method::GET,
        "/doc",
        &[("if-none-match", "\"v1\"")],
    )
    .await;
    assert_eq!((own.status, own.body.as_str()), (304, ""));
    assert_eq!(cdn.stats("app").revalidated, 2);
}

#[tokio::test]
async fn last_modified_is_revalidated_with_if_modified_since() {
    let cdn = memory_cdn();
    let origin = Origin::new(|parts, n| {
        let lm = "Tue, 01 Sep 2026 10:00:00 GMT".to_owned();
        let cc = ("cache-control", "no-cache".to_owned());
        if parts.headers.contains_key("if-modified-since") {
            return (304, vec![("last-modified", lm), cc], String::new());
        }
        (200, vec![("last-modified", lm), cc], format!("page #{n}"))
    });
    get(&cdn, &origin, "/page").await;
    let again = get(&cdn, &origin, "/page").await;
    assert_eq!(
        (again.cache.as_str(), again.body.as_str()),
        ("REVALIDATED", "page #1")
    );
    assert_eq!(
        origin.last_seen("if-modified-since").as_deref(),
        Some("Tue, 01 Sep 2026 10:00:00 GMT")
    );
    let since = ask(
        &cdn,
        &origin,
        Method::GET,
        "/page",
        &[("if-modified-since", "Wed, 02 Sep 2026 10:00:00 GMT")],
    )
    .await;
    assert_eq!(since.status, 304);
}

#[tokio::test]
async fn vary_keeps_one_response_per_value_of_the_fields_it_names() {
    let cdn = memory_cdn();
    let origin = Origin::new(|parts, n| {
        let lang = parts
            .headers
            .get("accept-language")
            .map_or("none", |v| v.to_str().unwrap());
        let headers = vec![
            ("cache-control", "max-age=60".into()),
            ("vary", "Accept-Language".into()),
        ];
        (200, headers, format!("{lang} #{n}"))
    });
    for (lang, first) in [("en", "en #1"), ("fr", "fr #2")] {
        let got = ask(
            &cdn,
            &origin,
            Method::GET,
            "/",
            &[("accept-language", lang)],
        )
        .await;
        assert_eq!((got.cache.as_str(), got.body.as_str()), ("MISS", first));
    }
    for (lang, stored) in [("en", "en #1"), ("fr", "fr #2")] {
        let got = ask(
            &cdn,
            &origin,
            Method::GET,
            "/",
            &[("accept-language", lang)],
        )
        .await;
        assert_eq!((got.cache.as_str(), got.body.as_str()), ("HIT", stored));
    }
    assert_eq!(cdn.stats("app").stored.entries, 2);
}

#[tokio::test]
async fn a_head_is_answered_from_a_stored_get_and_never_stored_itself() {
    let cdn = memory_cdn();
    let origin = Origin::new(by_query);
    let head = ask(&cdn, &origin, Method::HEAD, "/h?max-age=60", &[]).await;
    assert_eq!((head.cache.as_str(), head.body.as_str()), ("MISS", ""));
    assert_eq!(cdn.stats("app").stored.entries, 0);
    get(&cdn, &origin, "/h?max-age=60").await;
    let head = ask(&cdn, &origin, Method::HEAD, "/h?max-age=60", &[]).await;
    assert_eq!((head.cache.as_str(), head.body.as_str()), ("HIT", ""));
    assert_eq!(origin.calls(), 2);
}

#[tokio::test]
async fn a_stale_response_is_served_while_it_is_revalidated() {
    let cdn = memory_cdn();
    // Already 20 s old, fresh for 10, and servable stale for 60 more.
    let origin = Origin::new(|_, n| {
        let cc = "max-age=10, stale-while-revalidate=60".to_owned();
        (
            200,
            vec![("cache-control", cc), ("age", "20".into())],
            format!("#{n}"),
        )
    });
    get(&cdn, &origin, "/swr").await;
    let stale = get(&cdn, &origin, "/swr").await;
    assert_eq!((stale.cache.as_str(), stale.body.as_str()), ("STALE", "#1"));
    // The app is asked in the background; its answer replaces the stored one.
    let stored = || match &cdn.store().get("app", "/swr")[..] {
        [v] => match &v.body {
            super::store::Stored::Memory(b) => b.clone(),
            super::store::Stored::Disk(_) => Bytes::new(),
        },
        _ => Bytes::new(),
    };
    for _ in 0..500 {
        if stored() == "#2" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!((origin.calls(), stored()), (2, Bytes::from("#2")));
    let next = get(&cdn, &origin, "/swr").await;
    assert_eq!((next.cache.as_str(), next.body.as_str()), ("STALE", "#2"));
    // A client that wants a validated answer waits for the app.
    let strict = ask(
        &cdn,
        &origin,
        Method::GET,
        "/swr",
        &[("cache-control", "no-cache")],
    )
    .await;
    assert_eq!(strict.cache, "MISS");
}
