//! The edge's routing of one request, on its plain listener (HTTP/1.1
//! with keep-alive) and its HTTPS one ([`crate::tls`]): an ACME HTTP-01
//! challenge is answered first, then the request is handed to the
//! replicas its Host names, `<slug>.<apps domain>` or a verified custom
//! domain (over plain HTTP, a domain with a certificate is redirected to
//! HTTPS). The edge's own answers (unknown name, paused, loading or
//! undeployed app, failing app) are problem documents; a 503 of an app
//! that will serve again says when to retry. Hop-by-hop fields stay on
//! their side of the edge ([`crate::hop`]): a replica's
//! `Connection: close` does not close the client's kept-alive connection.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use plateau_listen::{Body as ListenBody, Timeouts};
use plateau_runner::{Body, BoxError, Error};
use tokio::net::TcpListener;
use tower::service_fn;

use plateau_contract::edge::{Action, RequestHead, ResponseHead};

use crate::filters::{self, Decision};
use crate::{Chain, Edge, Target};

/// Serves `edge` on `listener` until the task is dropped, with the host's
/// `timeouts` for slow clients.
pub async fn serve(listener: TcpListener, edge: Arc<Edge>, timeouts: Timeouts) {
    let make = |peer: SocketAddr| {
        let edge = edge.clone();
        service_fn(move |req| {
            let edge = edge.clone();
            async move {
                let answer = crate::demand::route(&edge, req, peer, false).await;
                Ok::<_, std::convert::Infallible>(answer)
            }
        })
    };
    plateau_listen::serve(listener, timeouts, make, std::future::pending()).await;
}

/// Where ACME servers fetch HTTP-01 answers (RFC 8555, section 8.3).
const CHALLENGE_PATH: &str = "/.well-known/acme-challenge/";

/// Answers one request; `secure` when it came over HTTPS.
pub(crate) async fn route(
    edge: &Edge,
    mut req: Request<ListenBody>,
    peer: SocketAddr,
    secure: bool,
) -> Response<Body> {
    // Forwarded by another host's edge: the client it names, and a page
    // view that edge reported.
    let relayed = req
        .headers()
        .contains_key(plateau_runner::remote::EDGE_TOKEN);
    let (peer, secure) = crate::forwarded::client(edge, req.headers_mut(), peer, secure);
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri().host())
        .unwrap_or("")
        .to_owned();
    if let Some(token) = req.uri().path().strip_prefix(CHALLENGE_PATH)
        && let Some(answer) = edge.challenge(token)
    {
        return Response::builder()
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .body(full(Bytes::from(answer)))
            .expect("a static response is valid");
    }
    let slug = match edge.slug_of(&host) {
        Some(slug) => slug.to_ascii_lowercase(),
        None => match edge.custom_domain(&host) {
            Some(route) => {
                if !secure
                    && route.cert.is_some()
                    && let Some(port) = edge.https_port()
                {
                    return to_https(&host, port, &req);
                }
                route.slug
            }
            None => {
                return problem(
                    StatusCode::NOT_FOUND,
                    "unknown_host",
                    &format!(
                        "no app is served at {host:?}; apps are served at <slug>.{}",
                        edge.domain()
                    ),
                );
            }
        },
    };
    let slug = slug.as_str();
    let replicas = match edge.get_ready(slug, edge.hold()).await {
        Some(Target::Serving(replicas)) => replicas,
        Some(Target::Paused) => {
            return problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "app_paused",
                &format!("the app {slug} is paused; resume it to serve requests"),
            );
        }
        Some(Target::Loading) => {
            return retry_later(problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "app_starting",
                &format!("the app {slug} is starting; retry in a moment"),
            ));
        }
        Some(Target::Undeployed) => {
            return retry_later(problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "app_not_deployed",
                &format!("the app {slug} has no live deployment yet; deploy it"),
            ));
        }
        None => {
            return problem(
                StatusCode::NOT_FOUND,
                "unknown_app",
                &format!("no app is deployed at {host}"),
            );
        }
    };
    let (mut parts, body) = req.into_parts();
    let page_view = edge
        .analytics(slug)
        .filter(|_| !relayed)
        .and_then(|(counted, sink)| {
            crate::page_views::candidate(&counted, &parts, &host, peer.ip()).map(|v| (v, sink))
        });
    // The app's edge filters first (a block answers before anything),
    // then its rules (redirect, rewrite, response headers).
    let filtered = match edge.filters(&slug.to_ascii_lowercase()) {
        Some(chain) => match before_app(chain, &mut parts, &host, peer).await {
            Ok(filtered) => Some(filtered),
            Err(answer) => return answer,
        },
        None => None,
    };
    let changes = match edge.rules_of(&slug.to_ascii_lowercase()) {
        Some(rules) => match crate::rules::before(&rules, &mut parts) {
            Ok(changes) => changes,
            Err(redirect) => return *redirect,
        },
        None => Vec::new(),
    };
    // Hop-by-hop fields are the client's connection's ([`crate::hop`]).
    let upgrade = crate::hop::is_upgrade(&parts.headers);
    crate::hop::strip(&mut parts.headers, upgrade);
    parts.headers.insert(
        "x-forwarded-for",
        http::HeaderValue::from_str(&peer.ip().to_string()).expect("an address is a header value"),
    );
    parts.headers.insert(
        "x-forwarded-proto",
        http::HeaderValue::from_static(if secure { "https" } else { "http" }),
    );
    parts.headers.insert(
        header::FORWARDED,
        http::HeaderValue::from_str(&crate::forwarded::forwarded(peer.ip(), secure))
            .expect("an address is a header value"),
    );
    // Replicas speak HTTP/1.1: an HTTP/2 request's authority becomes its
    // Host header.
    if parts.version == http::Version::HTTP_2 {
        if !parts.headers.contains_key(header::HOST)
            && let Some(authority) = parts.uri.authority()
            && let Ok(value) = http::HeaderValue::from_str(authority.as_str())
        {
            parts.headers.insert(header::HOST, value);
        }
        parts.version = http::Version::HTTP_11;
    }
    let body = body.map_err(|e| Box::new(e) as BoxError).boxed_unsync();
    let req = Request::from_parts(parts, edge.demand().count_in(slug, body));
    let answered = match edge.cdn().enabled(slug) {
        Some(cached) => crate::cdn::handle(edge.cdn(), cached, slug, replicas, req).await,
        None => replicas.handle(req).await,
    };
    match answered {
        Ok(mut response) => {
            crate::rules::after(&changes, &mut response);
            let mut response = match filtered {
                Some((chain, head)) if chain.wants_response() => {
                    after_app(&chain, &head, response).await
                }
                _ => response,
            };
            // Last: neither the app, nor its rules or filters, decide
            // whether the client's connection stays open.
            let upgrade = response.status() == StatusCode::SWITCHING_PROTOCOLS;
            crate::hop::strip(response.headers_mut(), upgrade);
            if let Some((mut view, sink)) = page_view
                && crate::page_views::is_page(response.headers())
            {
                view.status = response.status().as_u16();
                view.at = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
                sink.push(view);
            }
            response
        }
        Err(Error::Stopped) => retry_later(problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "app_stopped",
            &format!("the app {slug} stopped while the request waited; retry it"),
        )),
        Err(e) => {
            tracing::info!(app = slug, error = %e, "edge: the app failed");
            problem(StatusCode::BAD_GATEWAY, "app_failed", &e.to_string())
        }
    }
}

/// Runs the request phase of `chain`: the head it leaves (to give the
/// response phase), or the edge's answer in the app's place.
async fn before_app(
    chain: Arc<Chain>,
    parts: &mut http::request::Parts,
    host: &str,
    peer: SocketAddr,
) -> Result<(Arc<Chain>, RequestHead), Response<Body>> {
    let mut head = filters::request_head(parts, host, peer.ip(), &chain.app_id);
    match chain.on_request(&mut head).await {
        Decision::Forward { headers_changed } => {
            if headers_changed {
                filters::replace_headers(&mut parts.headers, &head.headers);
            }
            Ok((chain, head))
        }
        Decision::Answer { action, .. } => Err(filter_answer(action)),
        Decision::FailedClosed { filter, .. } => Err(problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "filter_failed",
            &format!(
                "the edge filter {filter} of this app failed; it is configured to fail closed"
            ),
        )),
    }
}

/// The block or redirect a filter answered.
fn filter_answer(action: Action) -> Response<Body> {
    let (status, headers, body) = match action {
        Action::Block {
            status,
            content_type,
            body,
        } => (status, vec![(header::CONTENT_TYPE, content_type)], body),
        Action::Redirect { status, location } => {
            (status, vec![(header::LOCATION, location)], Vec::new())
        }
        Action::Pass | Action::Modify(_) => unreachable!("only answers end the chain"),
    };
    let mut response = Response::builder().status(status);
    for (name, value) in headers {
        response = response.header(name, value);
    }
    response
        .body(
            Full::new(Bytes::from(body))
                .map_err(|never| match never {})
                .boxed_unsync(),
        )
        .unwrap_or_else(|_| {
            problem(
                StatusCode::BAD_GATEWAY,
                "filter_failed",
                "an edge filter answered an invalid response",
            )
        })
}

/// Runs the response phase of `chain` on the answer's head.
async fn after_app(chain: &Chain, head: &RequestHead, response: Response<Body>) -> Response<Body> {
    let (mut parts, body) = response.into_parts();
    let mut answer = ResponseHead {
        status: parts.status.as_u16(),
        headers: filters::request_head_headers(&parts.headers),
    };
    chain.on_response(head, &mut answer).await;
    filters::replace_headers(&mut parts.headers, &answer.headers);
    Response::from_parts(parts, body)
}

/// A permanent redirect of a plain HTTP request to the same address over
/// HTTPS.
fn to_https(host: &str, port: u16, req: &Request<ListenBody>) -> Response<Body> {
    let name = match host.rsplit_once(':') {
        Some((name, p)) if p.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let location = match port {
        443 => format!("https://{name}{path}"),
        port => format!("https://{name}:{port}{path}"),
    };
    Response::builder()
        .status(StatusCode::PERMANENT_REDIRECT)
        .header(header::LOCATION, location)
        .body(full(Bytes::new()))
        .expect("a redirect to a valid host is valid")
}

fn full(bytes: Bytes) -> Body {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// `response` with `Retry-After: 1`: the app serves again soon.
fn retry_later(mut response: Response<Body>) -> Response<Body> {
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
    response
}

/// A problem document from the edge itself, written like every other
/// error body of the platform (`plateau_contract::Problem`).
fn problem(status: StatusCode, code: &str, detail: &str) -> Response<Body> {
    let body = plateau_contract::Problem::new(status.as_u16(), code, detail).to_json();
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, plateau_contract::PROBLEM_CONTENT_TYPE)
        .body(full(Bytes::from(body)))
        .expect("a static response is valid")
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// The status line and problem body the edge answers for `host`.
    async fn answer(edge: Arc<Edge>, host: &str) -> (String, plateau_contract::Problem) {
        let (head, problem) = answer_head(edge, host).await;
        (head.lines().next().unwrap().to_owned(), problem)
    }

    /// The head and problem body the edge answers for `host`.
    async fn answer_head(edge: Arc<Edge>, host: &str) -> (String, plateau_contract::Problem) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(serve(listener, edge, Timeouts::default()));
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        stream.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        server.abort();
        let text = String::from_utf8(raw).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: application/problem+json"),
            "{head}"
        );
        (head.to_owned(), serde_json::from_str(body).unwrap())
    }

    #[tokio::test]
    async fn a_loading_app_holds_then_answers_503_with_retry_after() {
        let hold = std::time::Duration::from_millis(300);
        let edge = Arc::new(Edge::new("apps.localhost").with_hold(hold));
        edge.set("hello", Target::Loading);
        let (head, problem) = answer_head(edge.clone(), "hello.apps.localhost").await;
        assert!(head.starts_with("HTTP/1.1 503"), "{head}");
        assert!(
            head.to_ascii_lowercase().contains("retry-after: 1"),
            "{head}"
        );
        assert_eq!(problem.code, "app_starting");
        edge.set("new", Target::Undeployed);
        let (head, problem) = answer_head(edge, "new.apps.localhost").await;
        assert!(head.starts_with("HTTP/1.1 503"), "{head}");
        assert_eq!(problem.code, "app_not_deployed");
    }

    #[tokio::test]
    async fn a_held_request_goes_on_once_the_app_is_no_longer_loading() {
        let edge = Arc::new(Edge::new("apps.localhost"));
        edge.set("hello", Target::Loading);
        let waiting = {
            let edge = edge.clone();
            tokio::spawn(async move { answer(edge, "hello.apps.localhost").await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(
            !waiting.is_finished(),
            "the request waits while the app loads"
        );
        edge.set("hello", Target::Paused);
        let (status, problem) = waiting.await.unwrap();
        assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
        assert_eq!(problem.code, "app_paused");
    }

    #[tokio::test]
    async fn the_edge_answers_the_platform_problem_body() {
        let edge = Arc::new(Edge::new("apps.localhost"));
        let (status, problem) = answer(edge.clone(), "example.com").await;
        assert_eq!(status, "HTTP/1.1 404 Not Found");
        assert_eq!(
            problem.problem_type,
            "https://plateau.dev/problems/unknown_host"
        );
        assert_eq!(
            (
                problem.title.as_str(),
                problem.status,
                problem.code.as_str()
            ),
            ("Not Found", 404, "unknown_host")
        );
        let (_, problem) = answer(edge, "hello.apps.localhost").await;
        assert_eq!(
            problem,
            plateau_contract::Problem::new(
                404,
                "unknown_app",
                "no app is deployed at hello.apps.localhost"
            )
        );
    }
}
