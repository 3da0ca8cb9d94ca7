//! The well-behaved `echo` plugin: key-value routes, events, config, clock and
//! cursors, with a status chosen by the caller so rollback can be tested.
//!
//! Two components share this code: `echo` (1.0.0) and `echo-v2` (2.0.0),
//! which differ only in the version they report, for hot-swap tests.

use crate::plateau::plugin::events::{self, NewEvent};
use crate::plateau::plugin::kv::{Bucket, Error as KvError, Namespace};
use crate::plateau::plugin::log::{self, Level};
use crate::plateau::plugin::types::{
    Description, Event, Request, Response, Schedule, ScopeInfo, Tick,
};
use crate::plateau::plugin::{clock, config, cursors};
use crate::{description, query, route, text};

pub fn describe(version: &str) -> Description {
    let mut d = description(
        "echo",
        vec![
            route("POST", "/echo/say"),
            route("GET", "/echo/version"),
            route("GET", "/echo/kv/{key}"),
            route("PUT", "/echo/kv/{key}"),
            route("DELETE", "/echo/kv/{key}"),
            route("POST", "/echo/incr/{key}"),
            route("POST", "/echo/cas/{key}"),
            route("GET", "/echo/list"),
            route("GET", "/echo/count"),
            route("POST", "/echo/event"),
            route("POST", "/echo/trap/{key}"),
            route("GET", "/echo/config/{key}"),
            route("GET", "/echo/clock"),
            route("GET", "/echo/cursor"),
        ],
        &["kv", "events", "log", "config", "clock", "cursors"],
    );
    d.version = version.into();
    d.scopes = vec![ScopeInfo {
        name: "echo:write".into(),
        description: "write echo data".into(),
    }];
    d.routes[3].access = crate::plateau::plugin::types::Access::Scope("echo:write".into());
    d.subscriptions = vec!["echo.*".into()];
    d.schedules = vec![Schedule {
        name: "count".into(),
        every_seconds: 60,
    }];
    d
}

pub fn handle(req: Request, version: &str) -> Response {
    match serve(&req, version) {
        Ok(response) => response,
        Err(KvError::Unavailable(e)) => text(503, format!("unavailable: {e}")),
        Err(e) => text(400, format!("{e:?}")),
    }
}

fn status(req: &Request, default: u16) -> u16 {
    query(req, "status")
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// `ns=caller` (default), `ns=global` or `ns=org:<id>`.
fn bucket(req: &Request) -> Result<Bucket, KvError> {
    let ns = match query(req, "ns") {
        None | Some("caller") => Namespace::Caller,
        Some("global") => Namespace::Global,
        Some(other) => Namespace::Organization(other.trim_start_matches("org:").into()),
    };
    Bucket::open(&ns)
}

fn key(req: &Request) -> &str {
    req.path.rsplit('/').next().unwrap_or_default()
}

fn serve(req: &Request, version: &str) -> Result<Response, KvError> {
    let (method, route) = (req.method.as_str(), req.route.as_str());
    Ok(match (method, route) {
        ("POST", "/echo/say") => Response {
            status: status(req, 200),
            headers: req.headers.clone(),
            body: req.body.clone(),
        },
        ("GET", "/echo/version") => text(200, version),
        ("GET", "/echo/kv/{key}") => match bucket(req)?.get(key(req))? {
            Some(value) => Response {
                status: 200,
                headers: Vec::new(),
                body: value,
            },
            None => text(404, "absent"),
        },
        ("PUT", "/echo/kv/{key}") => {
            bucket(req)?.set(key(req), &req.body)?;
            log::log(Level::Info, &format!("set {}", key(req)));
            text(status(req, 200), "stored")
        }
        ("DELETE", "/echo/kv/{key}") => {
            let existed = bucket(req)?.delete(key(req))?;
            text(status(req, 200), existed.to_string())
        }
        ("POST", "/echo/incr/{key}") => {
            let delta = query(req, "delta")
                .and_then(|d| d.parse().ok())
                .unwrap_or(1);
            let value = bucket(req)?.increment(key(req), delta)?;
            text(status(req, 200), value.to_string())
        }
        ("POST", "/echo/cas/{key}") => {
            let expected = query(req, "expected").map(|v| v.as_bytes().to_vec());
            let new = query(req, "new").map(|v| v.as_bytes().to_vec());
            let swapped =
                bucket(req)?.compare_and_swap(key(req), expected.as_deref(), new.as_deref())?;
            text(status(req, 200), swapped.to_string())
        }
        ("GET", "/echo/list") => {
            let limit = query(req, "limit")
                .and_then(|l| l.parse().ok())
                .unwrap_or(10);
            let page = bucket(req)?.list(
                query(req, "prefix").unwrap_or_default(),
                query(req, "cursor"),
                limit,
            )?;
            let mut body = String::new();
            for entry in &page.entries {
                body.push_str(&format!(
                    "{}={}\n",
                    entry.key,
                    String::from_utf8_lossy(&entry.value)
                ));
            }
            let mut response = text(200, body);
            if let Some(cursor) = page.next_cursor {
                response.headers.push(("x-next-cursor".into(), cursor));
            }
            response
        }
        ("GET", "/echo/count") => {
            let count = bucket(req)?.count(query(req, "prefix").unwrap_or_default())?;
            text(200, count.to_string())
        }
        ("POST", "/echo/event") => {
            let event = NewEvent {
                organization_id: query(req, "org").map(Into::into),
                type_: "echo.thing.created".into(),
                action: "create".into(),
                resource_type: Some("thing".into()),
                resource_id: query(req, "id").map(Into::into),
                data: String::from_utf8_lossy(&req.body).into_owned(),
                audit: true,
            };
            match events::emit(&event) {
                Ok(()) => text(status(req, 201), "emitted"),
                Err(e) => text(400, e),
            }
        }
        ("POST", "/echo/trap/{key}") => {
            bucket(req)?.set(key(req), &req.body)?;
            panic!("echo was asked to trap after a write");
        }
        ("GET", "/echo/config/{key}") => match config::get(key(req)) {
            Some(value) => text(200, value),
            None => text(404, format!("{} config values", config::get_all().len())),
        },
        ("GET", "/echo/clock") => text(200, clock::now_millis().to_string()),
        ("GET", "/echo/cursor") => {
            let list = query(req, "list").unwrap_or("things");
            match query(req, "decode") {
                Some(cursor) => match cursors::decode(list, cursor) {
                    Ok(position) => text(200, position),
                    Err(e) => text(400, e),
                },
                None => text(
                    200,
                    cursors::encode(list, query(req, "pos").unwrap_or_default()),
                ),
            }
        }
        _ => text(404, format!("no route {method} {route}")),
    })
}

/// Counts ticks in the plugin-wide bucket.
pub fn on_tick(t: Tick) -> Result<(), String> {
    let global = Bucket::open(&Namespace::Global).map_err(|e| format!("{e:?}"))?;
    global
        .increment(&format!("ticks/{}", t.schedule), 1)
        .map_err(|e| format!("{e:?}"))?;
    Ok(())
}

/// Records each event under its organisation.
pub fn on_event(e: Event) -> Result<(), String> {
    let bucket = Bucket::open(&Namespace::Organization(e.organization_id.clone()))
        .map_err(|e| format!("{e:?}"))?;
    bucket
        .set(&format!("events/{}", e.id), e.type_.as_bytes())
        .map_err(|e| format!("{e:?}"))?;
    if e.type_.ends_with(".fail") {
        return Err("asked to fail".into());
    }
    Ok(())
}
