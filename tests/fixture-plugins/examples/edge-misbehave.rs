//! An edge filter that misbehaves on purpose, by path: `/trap` panics,
//! `/spin` loops until its deadline or fuel, `/bad-status` blocks with a 200
//! (a verdict the host refuses); every other request passes.

// The bindings' export glue is generated in this crate, where the
// workspace denies unsafe code.
#![allow(unsafe_code)]

mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/deps/edge-filter",
        world: "plateau:edge-filter/edge@0.1.0",
    });
}

use bindings::exports::plateau::edge_filter::edge_filter::{
    Action, Block, Guest, HeaderChanges, Info, RequestHead, ResponseHead, Verdict,
};

struct Fixture;

impl Guest for Fixture {
    fn describe() -> Info {
        Info {
            name: "edge-misbehave".into(),
            version: "0.1.0".into(),
            response_phase: false,
        }
    }

    fn on_request(head: RequestHead) -> Verdict {
        let action = match head.path.as_str() {
            "/trap" => panic!("edge-misbehave panicked on {}", head.path),
            "/spin" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "/bad-status" => Action::Block(Block {
                status: 200,
                content_type: "text/plain".into(),
                body: b"ok".to_vec(),
            }),
            _ => Action::Pass,
        };
        Verdict {
            action,
            facts: Vec::new(),
        }
    }

    fn on_response(_request: RequestHead, _response: ResponseHead) -> HeaderChanges {
        HeaderChanges {
            set: Vec::new(),
            remove: Vec::new(),
        }
    }
}

bindings::export!(Fixture with_types_in bindings);
