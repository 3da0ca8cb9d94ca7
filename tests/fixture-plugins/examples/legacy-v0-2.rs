//! A plugin built directly against `plateau:plugin@0.2.0`, the last release
//! of the whole-package layout, so the host keeps running components of
//! that version: jobs (`scheduler` and `on-job`), `secrets` and `kv`.
//!
//! `POST /legacy/jobs/{key}` schedules a job carrying the body for the
//! caller's organisation; its run stores the payload under `jobs/{key}`,
//! which `GET /legacy/kv/{key}` reads. `POST /legacy/seal` seals the body
//! and opens it again.

// The generated export glue is `unsafe` FFI that wit-bindgen writes; this
// file has no unsafe code of its own.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../wit/legacy/plugin@0.2.0",
    world: "plateau:plugin/plugin@0.2.0",
});

use exports::plateau::plugin::handler::Guest;
use plateau::plugin::kv::{Bucket, Namespace};
use plateau::plugin::types::{Access, Description, Event, Job, Request, Response, Route, Tick};
use plateau::plugin::{scheduler, secrets};

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

fn key(req: &Request) -> &str {
    req.path.rsplit('/').next().unwrap_or_default()
}

impl Guest for Legacy {
    fn describe() -> Description {
        Description {
            name: "legacy".into(),
            version: "0.2.0".into(),
            prefixes: vec!["/legacy".into()],
            routes: vec![
                route("POST", "/legacy/jobs/{key}"),
                route("GET", "/legacy/kv/{key}"),
                route("POST", "/legacy/seal"),
            ],
            scopes: Vec::new(),
            capabilities: vec!["kv".into(), "scheduler".into(), "secrets".into()],
            subscriptions: Vec::new(),
            schedules: Vec::new(),
        }
    }

    fn handle(req: Request) -> Response {
        match (req.method.as_str(), req.route.as_str()) {
            ("POST", "/legacy/jobs/{key}") => {
                let job = scheduler::NewJob {
                    namespace: Namespace::Caller,
                    key: key(&req).into(),
                    at: 0,
                    every_ms: None,
                    payload: String::from_utf8_lossy(&req.body).into_owned(),
                };
                match scheduler::schedule(&job) {
                    Ok(()) => text(202, "scheduled"),
                    Err(e) => text(400, format!("{e:?}")),
                }
            }
            ("GET", "/legacy/kv/{key}") => {
                let value = Bucket::open(&Namespace::Caller)
                    .and_then(|b| b.get(&format!("jobs/{}", key(&req))));
                match value {
                    Ok(Some(value)) => text(200, String::from_utf8_lossy(&value)),
                    Ok(None) => text(404, "absent"),
                    Err(e) => text(500, format!("{e:?}")),
                }
            }
            ("POST", "/legacy/seal") => {
                let opened = secrets::seal(&Namespace::Caller, &req.body)
                    .and_then(|sealed| secrets::open(&Namespace::Caller, &sealed));
                match opened {
                    Ok(plain) => text(200, String::from_utf8_lossy(&plain)),
                    Err(e) => text(400, e),
                }
            }
            _ => text(404, "no route"),
        }
    }

    fn on_tick(_t: Tick) -> Result<(), String> {
        Ok(())
    }

    fn on_event(_e: Event) -> Result<(), String> {
        Ok(())
    }

    fn on_job(job: Job) -> Result<(), String> {
        let org = job
            .organization_id
            .ok_or("a legacy job belongs to an organisation")?;
        let bucket = Bucket::open(&Namespace::Organization(org)).map_err(|e| format!("{e:?}"))?;
        bucket
            .set(&format!("jobs/{}", job.key), job.payload.as_bytes())
            .map_err(|e| format!("{e:?}"))
    }
}

export!(Legacy);
