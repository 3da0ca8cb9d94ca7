//! A small stand-in for the host around the SDK's in-memory one: requests
//! as a caller of an organisation and plan, due jobs run like the job
//! runner does (a repeating job moves to its next due time unless the run
//! replaced it; a one-shot job goes), and programmable remote servers
//! behind `testing::mock_http`: a target that can go up, slow, down or
//! answer other JSON, and a webhook receiver that records what it got.

use std::cell::RefCell;
use std::rc::Rc;

use plateau_plugin_checks::ChecksPlugin;
use plateau_sdk::outbound::{HttpError, IncomingResponse, OutgoingRequest};
use plateau_sdk::{Caller, Method, Request, Response, testing};
use serde_json::Value;

pub const ORG: &str = "org_a";
pub const OTHER_ORG: &str = "org_b";
pub const START: u64 = 1_700_000_000_000;
pub const TARGET: &str = "https://site.test/health";
pub const HOOK: &str = "https://hooks.test/checks";

pub fn caller(org: &str, plan: &str) -> Caller {
    Caller {
        plan: Some(plan.to_owned()),
        ..Caller::new(org, &["checks:read", "checks:write"])
    }
}

/// Sends a request as `caller`, with a `host` header as the host passes on.
pub fn send_as(caller: Caller, method: Method, target: &str, body: Option<&Value>) -> Response {
    let mut req = Request::new(method, target)
        .with_caller(caller)
        .with_header("host", "plateau.test");
    if let Some(body) = body {
        req = req.with_json(body);
    }
    testing::handle::<ChecksPlugin>(&req)
}

/// [`send_as`] for a paid caller of [`ORG`].
pub fn send(method: Method, target: &str, body: Option<&Value>) -> Response {
    send_as(caller(ORG, "pro"), method, target, body)
}

pub use plateau_sdk::testing::json_body as json;

/// Creates a check as a paid caller; its JSON.
pub fn create(body: Value) -> Value {
    let res = send(Method::Post, "/checks", Some(&body));
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    json(&res)
}

pub fn get(target: &str) -> Value {
    let res = send(Method::Get, target, None);
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    json(&res)
}

/// Moves the clock to `at` and runs every job due by then, as the job runner
/// would (`testing::run_due_jobs`); returns how many ran.
pub fn run_due(at: u64) -> usize {
    let ran = testing::run_due_jobs::<ChecksPlugin>(at);
    for (key, result) in &ran {
        if let Err(e) = result {
            panic!("{key}: {e}");
        }
    }
    ran.len()
}

/// The job scheduled under `key` in [`ORG`], if any.
pub fn job(key: &str) -> Option<plateau_sdk::jobs::NewJob> {
    testing::jobs()
        .into_iter()
        .find(|(ns, j)| ns == &format!("org:{ORG}") && j.key == key)
        .map(|(_, j)| j)
}

/// How the mock target answers.
#[derive(Debug, Clone)]
pub enum Mode {
    Up,
    /// 200, taking this long.
    Slow(u32),
    /// 503.
    Down,
    /// No answer within the timeout.
    Hang,
    /// 200 with this JSON body.
    Json(Value),
}

#[derive(Default)]
pub struct Remote {
    pub mode: Option<Mode>,
    /// Statuses the webhook receiver answers, in turn (then 200).
    pub hook_answers: Vec<u16>,
    pub target_hits: usize,
    /// Webhook requests received.
    pub hooks: Vec<OutgoingRequest>,
}

pub type Shared = Rc<RefCell<Remote>>;

/// Installs the target and the receiver; the target starts up.
pub fn remote() -> Shared {
    let shared: Shared = Rc::new(RefCell::new(Remote {
        mode: Some(Mode::Up),
        ..Remote::default()
    }));
    let state = shared.clone();
    testing::mock_http(move |req| {
        let mut s = state.borrow_mut();
        if req.url == HOOK {
            s.hooks.push(req.clone());
            let status = if s.hook_answers.is_empty() {
                200
            } else {
                s.hook_answers.remove(0)
            };
            return Ok(answer(status, "", 5));
        }
        if req.url.starts_with(TARGET) {
            s.target_hits += 1;
            return match s.mode.clone().unwrap_or(Mode::Up) {
                Mode::Up => Ok(answer(200, r#"{"data":{"items":[{"id":"a1"}]}}"#, 12)),
                Mode::Slow(ms) => Ok(answer(200, r#"{"data":{"items":[{"id":"a1"}]}}"#, ms)),
                Mode::Down => Ok(answer(503, "unavailable", 8)),
                Mode::Hang => Err(HttpError::Timeout),
                Mode::Json(v) => Ok(answer(200, &v.to_string(), 10)),
            };
        }
        Err(HttpError::ConnectionFailed(format!(
            "no route to {}",
            req.url
        )))
    });
    shared
}

pub fn set_mode(remote: &Shared, mode: Mode) {
    remote.borrow_mut().mode = Some(mode);
}

fn answer(status: u16, body: &str, total_ms: u32) -> IncomingResponse {
    IncomingResponse {
        status,
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        body: body.as_bytes().to_vec(),
        body_truncated: false,
        connect_ms: 1,
        total_ms,
    }
}

/// Event types recorded so far.
pub fn event_types() -> Vec<String> {
    testing::events()
        .into_iter()
        .map(|e| e.event_type)
        .collect()
}
