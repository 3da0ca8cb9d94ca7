//! Guest fixtures for the plugin runtime's tests: bindings and shared helpers.
//!
//! Each component is an example target of this crate (see `examples/`), built
//! for wasm32-wasip2 by `plateau-plugin-artifacts`. They are written directly
//! against `wit-bindgen` so that the runtime does not depend on the SDK.
//!
//! They bind the oldest world the host runs, `plateau:plugin@0.1.0` (kept in
//! `wit/legacy`, proving the oldest world of the support window), except
//! `legacy-v0-2` (`plateau:plugin@0.2.0`) and `future-wit` (a version no host
//! supports); the SDK, and so the built-in plugins and the example, bind the
//! newest.

wit_bindgen::generate!({
    path: "../../wit/legacy/plugin@0.1.0",
    world: "plateau:plugin/plugin@0.1.0",
    pub_export_macro: true,
    default_bindings_module: "plateau_fixture_plugins",
    generate_all,
});

pub mod echo;

use plateau::plugin::types::{Access, Description, Request, Response, Route};

/// The value of query parameter `name`, without percent-decoding (the tests
/// only pass plain values).
pub fn query<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then_some(value)
    })
}

/// A response with a text body.
pub fn text(status: u16, body: impl Into<String>) -> Response {
    Response {
        status,
        headers: vec![("content-type".into(), "text/plain".into())],
        body: body.into().into_bytes(),
    }
}

/// A route open to any authenticated caller.
pub fn route(method: &str, path: &str) -> Route {
    Route {
        method: method.into(),
        path: path.into(),
        access: Access::Authenticated,
        summary: format!("{method} {path}"),
    }
}

/// A description with one prefix `/{name}` and the given routes.
pub fn description(name: &str, routes: Vec<Route>, capabilities: &[&str]) -> Description {
    Description {
        name: name.into(),
        version: "1.0.0".into(),
        prefixes: vec![format!("/{name}")],
        routes,
        scopes: Vec::new(),
        capabilities: capabilities.iter().map(|c| c.to_string()).collect(),
        subscriptions: Vec::new(),
        schedules: Vec::new(),
    }
}

/// GETs `url` through outbound-http: 200 with the upstream status, timings
/// and body, or 502 with the host's error.
pub fn fetch(url: &str) -> Response {
    use plateau::plugin::outbound_http::{OutgoingRequest, send};
    let request = OutgoingRequest {
        method: "GET".into(),
        url: url.trim().into(),
        headers: Vec::new(),
        body: Vec::new(),
        timeout_ms: Some(5_000),
    };
    match send(&request) {
        Ok(response) => Response {
            status: 200,
            headers: vec![
                ("x-upstream-status".into(), response.status.to_string()),
                ("x-connect-ms".into(), response.connect_ms.to_string()),
                ("x-total-ms".into(), response.total_ms.to_string()),
            ],
            body: response.body,
        },
        Err(e) => text(502, format!("{e:?}")),
    }
}
