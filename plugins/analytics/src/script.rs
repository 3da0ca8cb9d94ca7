//! The script a site embeds (`GET /analytics/script.js`, public):
//!
//! ```html
//! <script defer data-domain="example.com"
//!         src="https://plateau.example/api/v1/analytics/script.js"></script>
//! ```
//!
//! It posts a page view to the ingest route beside it on load and on each
//! client-side navigation (`pushState`, `popstate`), as `text/plain` with
//! `keepalive`, and sets no cookie and no storage.

use plateau_sdk::{ApiError, Params, Request, Response};

/// The script's source, written by hand and small on purpose.
pub const SOURCE: &str = r#"(function () {
  "use strict";
  var script = document.currentScript;
  if (!script) return;
  var domain = script.getAttribute("data-domain") || location.hostname;
  var endpoint = script.getAttribute("data-api") ||
    script.src.replace(/script\.js(\?.*)?$/, "api/event");
  var last = null;
  function send() {
    if (location.href === last) return;
    last = location.href;
    if (/^localhost$|^127\.|^\[?::1\]?$/.test(location.hostname) && !script.hasAttribute("data-local")) return;
    var body = JSON.stringify({ n: "pageview", u: location.href, d: domain, r: document.referrer || null });
    try {
      fetch(endpoint, { method: "POST", body: body, keepalive: true, headers: { "Content-Type": "text/plain" } });
    } catch (e) {}
  }
  var push = history.pushState;
  if (push) {
    history.pushState = function () { push.apply(this, arguments); send(); };
    addEventListener("popstate", send);
  }
  if (document.visibilityState === "prerender") {
    document.addEventListener("visibilitychange", function () { if (document.visibilityState === "visible") send(); });
  } else {
    send();
  }
})();
"#;

pub fn serve(_: &Request, _: &Params) -> Result<Response, ApiError> {
    let response = Response {
        body: SOURCE.as_bytes().to_vec(),
        ..Response::new(200)
    };
    Ok(response
        .with_header("content-type", "application/javascript; charset=utf-8")
        .with_header("cache-control", "public, max-age=3600")
        .with_header("access-control-allow-origin", "*"))
}
