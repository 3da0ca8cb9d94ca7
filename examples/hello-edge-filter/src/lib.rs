//! A template edge filter: the app edge runs it on each request to an app
//! whose organisation enabled it. It blocks paths under `/admin` (403, with
//! a fact naming the rule), redirects `/old/...` to `/new/...` (308), and
//! hands every other request on with `x-hello-filter: passed`; on the answer
//! it sets `x-content-type-options: nosniff`.
//!
//! Build it with `cargo build --release --target wasm32-wasip2 -p
//! hello-edge-filter` and install the `.wasm` as an edge filter.

use plateau_sdk::edge::{
    EdgeFilter, FilterInfo, HeaderChanges, RequestHead, ResponseHead, Verdict,
};

pub struct HelloFilter;

impl EdgeFilter for HelloFilter {
    fn info() -> FilterInfo {
        FilterInfo::new("hello-edge-filter", env!("CARGO_PKG_VERSION")).response_phase()
    }

    fn on_request(head: &RequestHead) -> Verdict {
        let path = head.path.to_ascii_lowercase();
        if path == "/admin" || path.starts_with("/admin/") {
            return Verdict::block(403, "the admin pages are not served here\n")
                .fact("rule", "no-admin")
                .fact("path", &head.path);
        }
        if let Some(rest) = head.path.strip_prefix("/old/") {
            let query = if head.query.is_empty() {
                String::new()
            } else {
                format!("?{}", head.query)
            };
            return Verdict::redirect(308, format!("/new/{rest}{query}"));
        }
        Verdict::set_header("x-hello-filter", "passed")
    }

    fn on_response(_request: &RequestHead, _response: &ResponseHead) -> HeaderChanges {
        HeaderChanges {
            set: vec![("x-content-type-options".into(), "nosniff".into())],
            remove: Vec::new(),
        }
    }
}

plateau_sdk::export_edge_filter!(HelloFilter);

#[cfg(test)]
mod tests;
