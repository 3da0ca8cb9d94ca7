//! The `spin` app of the runner's tests: every request loops forever, so
//! only its CPU budget (`milliCpu`) stops it.

use wasip2::http::types::{IncomingRequest, ResponseOutparam};

struct App;

impl wasip2::exports::http::incoming_handler::Guest for App {
    fn handle(_request: IncomingRequest, _out: ResponseOutparam) {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
}

wasip2::http::proxy::export!(App);
