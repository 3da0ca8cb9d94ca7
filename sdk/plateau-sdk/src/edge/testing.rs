//! An in-process harness for edge filters: build a request head, run the
//! filter's functions as the edge would, and get the verdict checked by the
//! host's own rules (a verdict the host would refuse fails the test rather
//! than failing open or closed in production).

use super::{EdgeFilter, HeaderChanges, RequestHead, ResponseHead, Verdict};

/// A request head for tests: `GET`, host `app.example.com`, client
/// `203.0.113.7`; change it with the builder methods.
pub fn request(method: &str, path_and_query: &str) -> RequestHead {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    RequestHead {
        method: method.to_owned(),
        path: path.to_owned(),
        query: query.to_owned(),
        host: "app.example.com".into(),
        headers: vec![("host".into(), "app.example.com".into())],
        client_ip: "203.0.113.7".into(),
        app_id: "app_test".into(),
    }
}

/// Builder methods on a test head.
pub trait HeadExt {
    /// Adds a header (its name lowercased).
    fn with_header(self, name: &str, value: &str) -> Self;
    fn with_client_ip(self, ip: &str) -> Self;
}

impl HeadExt for RequestHead {
    fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_owned()));
        self
    }

    fn with_client_ip(mut self, ip: &str) -> Self {
        ip.clone_into(&mut self.client_ip);
        self
    }
}

/// Runs `F::on_request` and panics if the host would refuse the verdict.
pub fn run<F: EdgeFilter>(head: &RequestHead) -> Verdict {
    check_info::<F>();
    let verdict = F::on_request(head);
    if let Some(problem) = verdict.problem() {
        panic!("the edge would refuse this verdict ({problem}): {verdict:?}");
    }
    verdict
}

/// Runs `F::on_response` and panics if the host would refuse the changes.
pub fn run_response<F: EdgeFilter>(head: &RequestHead, response: &ResponseHead) -> HeaderChanges {
    let changes = F::on_response(head, response);
    if let Some(problem) = plateau_contract::edge::changes_problem(&changes) {
        panic!("the edge would refuse these header changes ({problem}): {changes:?}");
    }
    changes
}

/// Panics unless the filter names itself and a semver-like version, as the
/// host checks at install.
pub fn check_info<F: EdgeFilter>() {
    let info = F::info();
    assert!(!info.name.is_empty(), "an edge filter has a name");
    let parts: Vec<&str> = info.version.split(['.', '-', '+']).collect();
    assert!(
        parts.len() >= 3 && parts[..3].iter().all(|p| p.parse::<u64>().is_ok()),
        "an edge filter's version is semver, not {:?}",
        info.version
    );
}
