//! Edge filters on the edge: the filters an organisation enabled for an
//! app, run in the order it listed them, before the request is forwarded
//! to a replica (and on the answer's head for filters that ask).
//!
//! The order: each filter sees the head as the filters before it left it
//! (their header changes applied); the first block or redirect answers the
//! request and ends the chain; header changes accumulate; when every filter
//! passed or changed headers, the request goes to the app. A filter that
//! fails (a trap, its deadline or fuel, a verdict the contract refuses)
//! fails open (as a pass) or closed (503 `filter_failed`) as its
//! [`FailMode`] says; either way the failure is counted (by kind:
//! `filter_counters`) and logged, as are each filter's runs, verdicts and
//! CPU time.
//!
//! The edge knows nothing of Wasm: a [`Filter`] is what the apps crate
//! hands it (an edge-filter component of the plugin runtime). A chain is
//! replaced whole (`Edge::set_filters`), so a swap is atomic and a request
//! finishes on the chain it started with.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use plateau_contract::edge::{
    Action, FailMode, HeaderChanges, RequestHead, ResponseHead, Verdict, changes_problem,
};

pub use crate::filter_counters::{Counters, FailureKind, FilterError, FilterStats};

/// A boxed future of a filter call.
pub type FilterFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, FilterError>> + Send + 'a>>;

/// One edge filter, as the edge calls it.
pub trait Filter: Send + Sync {
    /// `name@version`, for logs and counters.
    fn name(&self) -> &str;
    fn on_request(&self, head: RequestHead) -> FilterFuture<'_, Verdict>;
    /// Whether to call [`Filter::on_response`].
    fn response_phase(&self) -> bool;
    fn on_response(
        &self,
        request: RequestHead,
        response: ResponseHead,
    ) -> FilterFuture<'_, HeaderChanges>;
}

/// A filter enabled for an app, with what its owner wants on failure.
pub struct Enabled {
    /// What its counters are reported under (the filter's id; its name
    /// unless set).
    pub id: String,
    pub filter: Arc<dyn Filter>,
    pub fail: FailMode,
    pub counters: Counters,
}

impl Enabled {
    pub fn new(filter: Arc<dyn Filter>, fail: FailMode) -> Enabled {
        Enabled {
            id: filter.name().to_owned(),
            filter,
            fail,
            counters: Counters::default(),
        }
    }

    /// The same, its counters reported under `id`.
    pub fn with_id(mut self, id: &str) -> Enabled {
        id.clone_into(&mut self.id);
        self
    }
}

/// An app's filters, in order.
#[derive(Default)]
pub struct Chain {
    pub app_id: String,
    pub filters: Vec<Enabled>,
}

/// What the request phase decided.
pub enum Decision {
    /// Forward to the app; `headers_changed` when the head's headers differ
    /// from the request's.
    Forward { headers_changed: bool },
    /// Answer with this verdict's block or redirect, without the app.
    Answer { filter: String, action: Action },
    /// A filter failed closed.
    FailedClosed { filter: String, reason: String },
}

impl Chain {
    /// Runs the request phase over `head`, applying header changes to it.
    pub async fn on_request(&self, head: &mut RequestHead) -> Decision {
        let mut headers_changed = false;
        for enabled in &self.filters {
            let name = enabled.filter.name();
            enabled.counters.runs.fetch_add(1, Ordering::Relaxed);
            let checked = enabled
                .counters
                .timed(|| enabled.filter.on_request(head.clone()))
                .await
                .and_then(|verdict| match verdict.problem() {
                    None => Ok(verdict),
                    Some(problem) => Err(FilterError::from(format!("refused verdict: {problem}"))),
                });
            let verdict = match checked {
                Ok(verdict) => verdict,
                Err(FilterError { kind, reason }) => {
                    tracing::warn!(app = %self.app_id, filter = name, %reason, "edge filter failed");
                    let closed = enabled.fail == FailMode::Closed;
                    enabled.counters.failed(kind, closed);
                    if closed {
                        return Decision::FailedClosed {
                            filter: name.to_owned(),
                            reason,
                        };
                    }
                    continue;
                }
            };
            if !verdict.facts.is_empty() {
                let facts: Vec<String> = verdict
                    .facts
                    .iter()
                    .map(|f| format!("{}={}", f.name, f.value))
                    .collect();
                tracing::info!(app = %self.app_id, filter = name, facts = %facts.join(" "), "edge filter facts");
            }
            match verdict.action {
                Action::Pass => {
                    enabled.counters.passed.fetch_add(1, Ordering::Relaxed);
                }
                Action::Modify(changes) => {
                    enabled.counters.passed.fetch_add(1, Ordering::Relaxed);
                    head.apply(&changes);
                    headers_changed = true;
                }
                action => {
                    enabled.counters.answered.fetch_add(1, Ordering::Relaxed);
                    return Decision::Answer {
                        filter: name.to_owned(),
                        action,
                    };
                }
            }
        }
        Decision::Forward { headers_changed }
    }

    /// Whether any filter wants the response phase.
    pub fn wants_response(&self) -> bool {
        self.filters.iter().any(|e| e.filter.response_phase())
    }

    /// Runs the response phase, in the same order, over `response`'s
    /// headers. A filter that fails here leaves the headers as they are
    /// (whatever its mode: the app has answered), counted as failed open.
    pub async fn on_response(&self, request: &RequestHead, response: &mut ResponseHead) {
        for enabled in self.filters.iter().filter(|e| e.filter.response_phase()) {
            let result = enabled
                .counters
                .timed(|| {
                    enabled
                        .filter
                        .on_response(request.clone(), response.clone())
                })
                .await
                .and_then(|changes| match changes_problem(&changes) {
                    None => Ok(changes),
                    Some(problem) => Err(FilterError::from(problem)),
                });
            match result {
                Ok(changes) => {
                    plateau_contract::edge::apply_headers(&mut response.headers, &changes)
                }
                Err(FilterError { kind, reason }) => {
                    enabled.counters.failed(kind, false);
                    tracing::warn!(app = %self.app_id, filter = enabled.filter.name(), %reason, "edge filter failed on a response");
                }
            }
        }
    }
}

/// The head the filters see, from the request's parts.
pub(crate) fn request_head(
    parts: &http::request::Parts,
    host: &str,
    peer: std::net::IpAddr,
    app_id: &str,
) -> RequestHead {
    let host = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    RequestHead {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().unwrap_or("").to_owned(),
        host: host.to_ascii_lowercase(),
        headers: request_head_headers(&parts.headers),
        client_ip: peer.to_string(),
        app_id: app_id.to_owned(),
    }
}

/// Replaces `headers` with the head's, as the filters left them (every
/// name and value passed the contract's checks).
pub(crate) fn replace_headers(headers: &mut http::HeaderMap, from: &[(String, String)]) {
    headers.clear();
    for (name, value) in from {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
}

/// A header map as the contract's pairs (names lowercase, values read as
/// UTF-8 with replacement).
pub(crate) fn request_head_headers(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}
