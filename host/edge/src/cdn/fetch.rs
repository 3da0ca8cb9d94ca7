//! One request through the CDN: a fresh stored response answers it; a
//! stale one is revalidated with the app (or served while it is, within
//! `stale-while-revalidate`); otherwise the app answers and its response
//! is stored on its way to the client when the rules allow, once for
//! concurrent misses of one key (`coalesce`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri, header};
use http_body_util::BodyExt;
use http_cache_semantics::{AfterResponse, BeforeRequest, CacheOptions, CachePolicy, RequestLike};
use plateau_runner::{Body, Replicas, Result};

use super::coalesce::{self, Flight, Turn};
use super::respond::{aged, answer, empty};
use super::store::{Stored, Variant};
use super::tee::Tee;
use super::{AppCdn, Cdn};

/// The request a stored response is looked up, stored and revalidated
/// for: the client's, as a GET (a HEAD is answered from a stored GET).
pub(crate) struct Asked {
    uri: Uri,
    headers: HeaderMap,
}

impl RequestLike for Asked {
    fn uri(&self) -> Uri {
        self.uri.clone()
    }
    fn is_same_uri(&self, other: &Uri) -> bool {
        self.uri == *other
    }
    fn method(&self) -> &Method {
        &Method::GET
    }
    fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

/// Whether `stored` was stored for the same request as `asked` (same
/// resource and the same values of the fields its `Vary` names).
pub(crate) fn same_request(stored: &Variant, asked: &Asked, now: SystemTime) -> bool {
    match stored.policy.before_request(asked, now) {
        BeforeRequest::Fresh(_) => true,
        BeforeRequest::Stale { matches, .. } => matches,
    }
}

/// Answers `req` for `slug` through the cache (`app` counts).
pub(crate) async fn handle(
    cdn: &Cdn,
    app: Arc<AppCdn>,
    slug: &str,
    replicas: Arc<dyn Replicas>,
    req: Request<Body>,
) -> Result<Response<Body>> {
    let head = req.method() == Method::HEAD;
    if !(head || req.method() == Method::GET)
        || req.headers().contains_key(header::UPGRADE)
        || req.headers().contains_key(header::RANGE)
    {
        return replicas.handle(req).await;
    }
    let key = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let asked = Asked {
        uri: req.uri().clone(),
        headers: req.headers().clone(),
    };
    let now = SystemTime::now();
    let (variants, epoch) = {
        let mut store = cdn.store();
        (store.get(slug, &key), store.epoch(slug))
    };
    let mut stale = None;
    for v in variants {
        match v.policy.before_request(&asked, now) {
            BeforeRequest::Fresh(fresh) => {
                if let Some(answer) =
                    answer(&app, &v, fresh.headers, req.headers(), head, "HIT").await
                {
                    return Ok(answer);
                }
            }
            BeforeRequest::Stale {
                request,
                matches: true,
            } if stale.is_none() => stale = Some((v, request)),
            BeforeRequest::Stale { .. } => {}
        }
    }
    let Some((v, revalidation)) = stale.filter(|_| !head) else {
        let trip = Again {
            cdn,
            app: &app,
            slug,
            key: &key,
            epoch,
        };
        return trip.cold(asked, head, &*replicas, req).await;
    };
    if may_serve_stale(&v, req.headers(), now) && start_revalidation(&app, v.id) {
        let headers = aged(&v, now);
        if let Some(answer) = answer(&app, &v, headers, req.headers(), head, "STALE").await {
            let (cdn, slug, key) = (cdn.clone(), slug.to_owned(), key.clone());
            tokio::spawn(async move {
                let id = v.id;
                let again = Again {
                    cdn: &cdn,
                    app: &app,
                    slug: &slug,
                    key: &key,
                    epoch,
                };
                if let Ok(response) = again
                    .revalidate(asked, v, revalidation, &*replicas, None)
                    .await
                {
                    // Reading the body to its end stores it.
                    let _ = response.into_body().collect().await;
                }
                let mut busy = app.revalidating.lock().unwrap_or_else(|e| e.into_inner());
                busy.remove(&id);
            });
            return Ok(answer);
        }
        let mut busy = app.revalidating.lock().unwrap_or_else(|e| e.into_inner());
        busy.remove(&v.id);
    }
    let again = Again {
        cdn,
        app: &app,
        slug,
        key: &key,
        epoch,
    };
    again
        .revalidate(asked, v, revalidation, &*replicas, Some(req.headers()))
        .await
}

/// What a trip to the app for one key works on (a miss, a revalidation).
struct Again<'a> {
    cdn: &'a Cdn,
    app: &'a AppCdn,
    slug: &'a str,
    key: &'a str,
    epoch: u64,
}

impl Again<'_> {
    /// A miss: the app's answer, stored when the rules allow; the first
    /// of concurrent misses of the key goes to the app, the others wait
    /// for it and are answered from what it stored.
    async fn cold(
        &self,
        asked: Asked,
        head: bool,
        replicas: &dyn Replicas,
        req: Request<Body>,
    ) -> Result<Response<Body>> {
        let (app, mut epoch) = (self.app, self.epoch);
        let flight = match app.flights.turn(self.key, !head) {
            Some(Turn::Lead(flight)) => Some(flight),
            Some(Turn::Follow(under_way)) => {
                coalesce::follow(under_way).await;
                if let Some(answer) = self.stored_for(&asked, req.headers(), head).await {
                    app.coalesced.fetch_add(1, Ordering::Relaxed);
                    return Ok(answer);
                }
                // Nothing stored it may use: to the app, as of now.
                epoch = self.cdn.store().epoch(self.slug);
                None
            }
            None => None,
        };
        app.misses.fetch_add(1, Ordering::Relaxed);
        let response = replicas.handle(req).await?;
        let trip = Again { epoch, ..*self };
        trip.miss(asked, head, response, flight)
    }

    /// A fresh stored response for `asked`, as the client asked it.
    async fn stored_for(
        &self,
        asked: &Asked,
        client: &HeaderMap,
        head: bool,
    ) -> Option<Response<Body>> {
        let variants = self.cdn.store().get(self.slug, self.key);
        let now = SystemTime::now();
        for v in variants {
            if let BeforeRequest::Fresh(fresh) = v.policy.before_request(asked, now)
                && let Some(answer) = answer(self.app, &v, fresh.headers, client, head, "HIT").await
            {
                return Some(answer);
            }
        }
        None
    }

    /// Asks the app whether `v` is still current (with its validators)
    /// and answers from it if so, else the app's new answer, stored.
    /// `client`: the headers of the request to answer; none for a
    /// revalidation in the background (then nothing is counted).
    async fn revalidate(
        &self,
        asked: Asked,
        v: Variant,
        request: http::request::Parts,
        replicas: &dyn Replicas,
        client: Option<&HeaderMap>,
    ) -> Result<Response<Body>> {
        let response = replicas
            .handle(Request::from_parts(request, empty()))
            .await?;
        let now = SystemTime::now();
        let (cdn, app) = (self.cdn, self.app);
        match v.policy.after_response(&asked, &response, now) {
            AfterResponse::NotModified(policy, head) => {
                let fresh = variant(
                    v.id,
                    policy,
                    head.status,
                    head.headers,
                    v.body.clone(),
                    v.len,
                    now,
                );
                cdn.store().refresh(self.slug, self.key, v.id, &fresh);
                let Some(client) = client else {
                    return Ok(response);
                };
                let headers = aged(&fresh, now);
                if let Some(answer) =
                    answer(app, &fresh, headers, client, false, "REVALIDATED").await
                {
                    return Ok(answer);
                }
                // Its file went meanwhile: the whole response again.
                let mut request = Request::new(empty());
                *request.uri_mut() = asked.uri.clone();
                *request.headers_mut() = asked.headers.clone();
                request.headers_mut().remove(header::IF_NONE_MATCH);
                request.headers_mut().remove(header::IF_MODIFIED_SINCE);
                app.misses.fetch_add(1, Ordering::Relaxed);
                let response = replicas.handle(request).await?;
                self.miss(asked, false, response, None)
            }
            AfterResponse::Modified(..) => {
                if client.is_some() {
                    app.misses.fetch_add(1, Ordering::Relaxed);
                }
                self.miss(asked, false, response, None)
            }
        }
    }

    /// The app's `response` on its way to the client, stored once it has
    /// ended when the rules allow it; `flight` ends once it is stored, or
    /// known not to be.
    fn miss(
        &self,
        asked: Asked,
        head: bool,
        response: Response<Body>,
        flight: Option<Flight>,
    ) -> Result<Response<Body>> {
        let (cdn, slug, key, epoch) = (self.cdn, self.slug, self.key, self.epoch);
        let mut response = response;
        response
            .headers_mut()
            .insert("x-cache", HeaderValue::from_static("MISS"));
        if head {
            return Ok(response);
        }
        let now = SystemTime::now();
        let options = CacheOptions {
            shared: true,
            ..CacheOptions::default()
        };
        let policy = CachePolicy::new_options(&asked, &response, now, options);
        let max = cdn.limits().max_object();
        let validators = response.headers().contains_key(header::ETAG)
            || response.headers().contains_key(header::LAST_MODIFIED);
        let revalidates = validators
            || directive(response.headers(), "stale-while-revalidate").is_some_and(|s| s > 0);
        // A response that sets a cookie is one visitor's (a session): shared
        // caches such as Cloudflare's and Fastly's do not keep it, whatever
        // its Cache-Control says, and neither does this one.
        let worth = policy.is_storable()
            && !response.headers().contains_key(header::SET_COOKIE)
            && (!policy.time_to_live(now).is_zero() || revalidates)
            && response.status() != StatusCode::NOT_MODIFIED
            && response
                .headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                .is_none_or(|n| n <= max);
        if !worth || max == 0 {
            return Ok(response);
        }
        let (parts, body) = response.into_parts();
        let mut headers = parts.headers.clone();
        headers.remove("x-cache");
        crate::hop::strip(&mut headers, false);
        let (cdn, slug, key, status) = (cdn.clone(), slug.to_owned(), key.to_owned(), parts.status);
        let done = Box::new(move |bytes: Bytes| {
            let id = cdn.next_id();
            let len = bytes.len() as u64;
            let limits = cdn.limits();
            if len <= limits.memory_object() {
                let v = variant(id, policy, status, headers, Stored::Memory(bytes), len, now);
                cdn.insert(&slug, &key, epoch, v, &asked);
                drop(flight);
            } else if len <= limits.disk_object()
                && let Some(file) = cdn.file(id)
            {
                let writing = cdn.start_writing();
                tokio::spawn(async move {
                    if let Err(e) = tokio::fs::write(&file, &bytes).await {
                        tracing::warn!(error = %e, file = %file.display(), "cdn: writing a response");
                        let _ = tokio::fs::remove_file(&file).await;
                        return;
                    }
                    let v = variant(id, policy, status, headers, Stored::Disk(file), len, now);
                    cdn.insert(&slug, &key, epoch, v, &asked);
                    drop((flight, writing));
                });
            }
        });
        Ok(Response::from_parts(
            parts,
            Tee::new(body, max, done).boxed_unsync(),
        ))
    }
}

fn variant(
    id: u64,
    policy: CachePolicy,
    status: StatusCode,
    headers: HeaderMap,
    body: Stored,
    len: u64,
    now: SystemTime,
) -> Variant {
    let stale_while_revalidate =
        directive(&headers, "stale-while-revalidate").map_or(Duration::ZERO, Duration::from_secs);
    Variant {
        id,
        fresh_until: now + policy.time_to_live(now),
        policy,
        status,
        headers,
        body,
        len,
        stale_while_revalidate,
    }
}

/// The seconds of a `Cache-Control` directive of `headers`.
fn directive(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers
        .get_all(header::CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|d| d.trim().split_once('='))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        .and_then(|(_, secs)| secs.trim().trim_matches('"').parse().ok())
}

/// Whether a Cache-Control of `headers` has directive `name`.
fn has(headers: &HeaderMap, name: &str) -> bool {
    headers
        .get_all(header::CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|d| {
            d.split('=')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case(name)
        })
}

/// RFC 5861: a stale response may be served while it is revalidated for
/// `stale-while-revalidate` seconds, unless the response must be
/// revalidated first or the client asked for a validated one.
fn may_serve_stale(v: &Variant, client: &HeaderMap, now: SystemTime) -> bool {
    !v.stale_while_revalidate.is_zero()
        && now < v.fresh_until + v.stale_while_revalidate
        && !["must-revalidate", "proxy-revalidate", "no-cache"]
            .iter()
            .any(|d| has(&v.headers, d))
        && !has(client, "no-cache")
        && !client
            .get(header::PRAGMA)
            .and_then(|p| p.to_str().ok())
            .is_some_and(|p| p.contains("no-cache"))
}

/// Claims the background revalidation of variant `id`: false when one is
/// under way (then the request revalidates by itself).
fn start_revalidation(app: &AppCdn, id: u64) -> bool {
    let mut busy = app.revalidating.lock().unwrap_or_else(|e| e.into_inner());
    busy.insert(id)
}
