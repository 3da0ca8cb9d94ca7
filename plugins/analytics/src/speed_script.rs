//! The speed insights script (`GET /speed-insights/script.js`, public):
//! Google's `web-vitals` library, its built IIFE vendored unchanged
//! (`vendor/`, npm `web-vitals` 4.2.4, Apache-2.0), followed by a few lines
//! that collect LCP, INP, CLS, FCP and TTFB through its API and post them
//! once the page is hidden, as `text/plain` (no CORS preflight), to the
//! ingest route beside the script:
//!
//! ```html
//! <script defer data-domain="example.com"
//!         src="https://plateau.example/api/v1/speed-insights/script.js"></script>
//! ```

use plateau_sdk::{ApiError, Params, Request, Response};

/// The library, as npm ships it.
pub const WEB_VITALS: &str = include_str!("../vendor/web-vitals-4.2.4.iife.js");

/// What the page runs after the library.
pub const GLUE: &str = r#"
;(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || !window.webVitals) return;
  var domain = script.getAttribute("data-domain") || location.hostname;
  var endpoint = script.getAttribute("data-api") ||
    script.src.replace(/script\.js(\?.*)?$/, "api/vitals");
  var queue = [];
  function add(metric) { queue.push({ n: metric.name, v: metric.value }); }
  function flush() {
    if (!queue.length) return;
    var body = JSON.stringify({ d: domain, u: location.href, m: queue });
    queue = [];
    try {
      if (navigator.sendBeacon) {
        navigator.sendBeacon(endpoint, new Blob([body], { type: "text/plain" }));
      } else {
        fetch(endpoint, { method: "POST", body: body, keepalive: true, headers: { "Content-Type": "text/plain" } });
      }
    } catch (e) {}
  }
  webVitals.onLCP(add);
  webVitals.onINP(add);
  webVitals.onCLS(add);
  webVitals.onFCP(add);
  webVitals.onTTFB(add);
  addEventListener("visibilitychange", function () { if (document.visibilityState === "hidden") flush(); });
  addEventListener("pagehide", flush);
})();
"#;

pub fn serve(_: &Request, _: &Params) -> Result<Response, ApiError> {
    let response = Response {
        body: [WEB_VITALS, GLUE].concat().into_bytes(),
        ..Response::new(200)
    };
    Ok(response
        .with_header("content-type", "application/javascript; charset=utf-8")
        .with_header("cache-control", "public, max-age=3600")
        .with_header("access-control-allow-origin", "*"))
}
