//! The volume app of the runner tests: each request adds one to the
//! number in `/data/count` (its volume, preopened) and answers
//! `count <n>`, then whether a path out of the volume (`..`, an absolute
//! path elsewhere, a link the host left in the volume) could be read.

use plateau_fixture_apps::hello::respond;
use wasip2::http::types::{IncomingRequest, ResponseOutparam};

struct App;

impl wasip2::exports::http::incoming_handler::Guest for App {
    fn handle(_request: IncomingRequest, out: ResponseOutparam) {
        let n = std::fs::read_to_string("/data/count")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0)
            + 1;
        if let Err(e) = std::fs::write("/data/count", n.to_string()) {
            respond(500, &format!("writing /data/count: {e}"), out);
            return;
        }
        let escaped: Vec<&str> = [
            "/data/../etc/hostname",
            "/etc/hostname",
            "/data/link/hostname",
        ]
        .into_iter()
        .filter(|p| std::fs::read(p).is_ok())
        .collect();
        respond(200, &format!("count {n} escaped {escaped:?}"), out);
    }
}

wasip2::http::proxy::export!(App);
