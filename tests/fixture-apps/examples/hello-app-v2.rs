//! The `v2` app of the apps tests: every request answers 200.

use plateau_fixture_apps::hello::answer;
use wasip2::http::types::{IncomingRequest, ResponseOutparam};

struct App;

impl wasip2::exports::http::incoming_handler::Guest for App {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        answer("v2", 200, request, out);
    }
}

wasip2::http::proxy::export!(App);
