//! A plugin built directly against the world `plateau:plugin@0.3.0`, so it
//! imports `plateau:kv/kv@0.3.0`: the host keeps running components of
//! that version after kv@0.4.0. The interfaces that have not changed since
//! come from `wit/deps`, the lines 0.3.0 left behind from `wit/legacy`.
//!
//! `PUT /legacy3/kv/{key}` stores the body with a compare-and-swap
//! (expecting the key absent) and `GET /legacy3/kv/{key}` reads it back.

// The generated export glue is `unsafe` FFI that wit-bindgen writes; this
// file has no unsafe code of its own.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: [
        "../../wit/deps/handler",
        "../../wit/legacy/kv@0.3.0",
        "../../wit/deps/events",
        "../../wit/legacy/outbound-http@0.3.0",
        "../../wit/deps/log",
        "../../wit/deps/config",
        "../../wit/deps/clock",
        "../../wit/deps/cursors",
        "../../wit/deps/scheduler",
        "../../wit/deps/smtp",
        "../../wit/deps/secrets",
        "../../wit/legacy/plugin@0.3.0",
    ],
    world: "plateau:plugin/plugin@0.3.0",
    generate_all,
});

use exports::plateau::handler::handler::{
    Access, Description, Event, Guest, Job, Request, Response, Route, Tick,
};
use plateau::kv::kv::{Bucket, Namespace};

struct Legacy;

fn route(method: &str, path: &str) -> Route {
    Route {
        method: method.into(),
        path: path.into(),
        access: Access::Authenticated,
        summary: format!("{method} {path}"),
    }
}

fn text(status: u16, body: impl Into<String>) -> Response {
    Response {
        status,
        headers: vec![("content-type".into(), "text/plain".into())],
        body: body.into().into_bytes(),
    }
}

impl Guest for Legacy {
    fn describe() -> Description {
        Description {
            name: "legacy3".into(),
            version: "0.3.0".into(),
            prefixes: vec!["/legacy3".into()],
            routes: vec![
                route("PUT", "/legacy3/kv/{key}"),
                route("GET", "/legacy3/kv/{key}"),
            ],
            scopes: Vec::new(),
            capabilities: vec!["kv".into()],
            subscriptions: Vec::new(),
            schedules: Vec::new(),
        }
    }

    fn handle(req: Request) -> Response {
        let key = req.path.rsplit('/').next().unwrap_or_default().to_owned();
        let bucket = match Bucket::open(&Namespace::Caller) {
            Ok(bucket) => bucket,
            Err(e) => return text(500, format!("{e:?}")),
        };
        match req.method.as_str() {
            "PUT" => match bucket.compare_and_swap(&key, None, Some(&req.body)) {
                Ok(true) => text(201, "stored"),
                Ok(false) => text(409, "taken"),
                Err(e) => text(500, format!("{e:?}")),
            },
            _ => match bucket.get(&key) {
                Ok(Some(value)) => text(200, String::from_utf8_lossy(&value)),
                Ok(None) => text(404, "absent"),
                Err(e) => text(500, format!("{e:?}")),
            },
        }
    }

    fn on_tick(_t: Tick) -> Result<(), String> {
        Ok(())
    }

    fn on_event(_e: Event) -> Result<(), String> {
        Ok(())
    }

    fn on_job(_job: Job) -> Result<(), String> {
        Ok(())
    }
}

export!(Legacy);
