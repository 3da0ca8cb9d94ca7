//! The `burn` app of the autoscale tests: `GET /burn?ms=N` keeps a core
//! busy for N milliseconds (at most 2000) before it answers `burned`;
//! any other request answers `burn` at once.

use plateau_fixture_apps::hello::respond;
use wasip2::http::types::{IncomingRequest, ResponseOutparam};

struct App;

/// The `ms` of a `/burn?ms=N` path.
fn burn_ms(path: &str) -> Option<u64> {
    let query = path.strip_prefix("/burn")?.strip_prefix('?').unwrap_or("");
    let ms = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("ms="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    Some(u64::min(ms, 2000))
}

impl wasip2::exports::http::incoming_handler::Guest for App {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let path = request.path_with_query().unwrap_or_default();
        let Some(ms) = burn_ms(&path) else {
            return respond(200, "burn", out);
        };
        let until = std::time::Instant::now() + std::time::Duration::from_millis(ms);
        let mut n: u64 = 0;
        while std::time::Instant::now() < until {
            for _ in 0..10_000 {
                n = std::hint::black_box(n.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        respond(200, &format!("burned {ms} ms ({})", n % 10), out);
    }
}

wasip2::http::proxy::export!(App);
