//! The component side of [`crate::export_edge_filter!`]: the bindings of
//! `plateau:edge-filter/edge@0.1.0` and the conversions to the contract's
//! records. Only in wasm32 builds; not part of the SDK's stable API.

use super::{Action, EdgeFilter, HeaderChanges, RequestHead, ResponseHead};

#[allow(unsafe_code, missing_docs, clippy::all)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/deps/edge-filter",
        world: "plateau:edge-filter/edge@0.1.0",
        pub_export_macro: true,
        export_macro_name: "__export_edge_world",
        default_bindings_module: "plateau_sdk::edge::guest::bindings",
    });
}

use bindings::exports::plateau::edge_filter::edge_filter as wit;

pub use wit::Guest;
pub type WitInfo = wit::Info;
pub type WitRequestHead = wit::RequestHead;
pub type WitResponseHead = wit::ResponseHead;
pub type WitVerdict = wit::Verdict;
pub type WitHeaderChanges = wit::HeaderChanges;

pub fn describe<F: EdgeFilter>() -> WitInfo {
    let info = F::info();
    wit::Info {
        name: info.name,
        version: info.version,
        response_phase: info.response_phase,
    }
}

fn head(h: WitRequestHead) -> RequestHead {
    RequestHead {
        method: h.method,
        path: h.path,
        query: h.query,
        host: h.host,
        headers: h.headers,
        client_ip: h.client_ip,
        app_id: h.app_id,
    }
}

fn changes(c: HeaderChanges) -> WitHeaderChanges {
    wit::HeaderChanges {
        set: c.set,
        remove: c.remove,
    }
}

pub fn on_request<F: EdgeFilter>(h: WitRequestHead) -> WitVerdict {
    let verdict = F::on_request(&head(h));
    let action = match verdict.action {
        Action::Pass => wit::Action::Pass,
        Action::Block {
            status,
            content_type,
            body,
        } => wit::Action::Block(wit::Block {
            status,
            content_type,
            body,
        }),
        Action::Redirect { status, location } => {
            wit::Action::Redirect(wit::Redirect { status, location })
        }
        Action::Modify(c) => wit::Action::Modify(changes(c)),
    };
    wit::Verdict {
        action,
        facts: verdict
            .facts
            .into_iter()
            .map(|f| wit::Fact {
                name: f.name,
                value: f.value,
            })
            .collect(),
    }
}

pub fn on_response<F: EdgeFilter>(
    request: WitRequestHead,
    response: WitResponseHead,
) -> WitHeaderChanges {
    let response = ResponseHead {
        status: response.status,
        headers: response.headers,
    };
    changes(F::on_response(&head(request), &response))
}
