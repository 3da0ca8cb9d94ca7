//! Native tests of the email relay plugin through the SDK's in-memory host
//! (`plateau_sdk::testing`): routes served as the host serves them, jobs
//! run as the job runner runs them, SMTP answered by a mock, and events
//! delivered as the host delivers them.

mod alerts;
mod config_api;
mod delivery;
mod ledger_api;
mod send_api;

use plateau_plugin_email::EmailPlugin;
use plateau_sdk::smtp::{Message, Reply, Sent, SmtpError, SmtpServer};
use plateau_sdk::{Caller, Method, Request, Response, clock, testing};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::rc::Rc;

pub const ORG: &str = "org_1";
pub const OTHER: &str = "org_2";
/// 2026-11-22T10:00:00Z.
pub const NOW: u64 = 1_795_341_600_000;

/// A caller of `org` on `plan` with every scope of the plugin.
pub fn caller_of(org: &str, plan: &str) -> Caller {
    Caller {
        plan: Some(plan.to_owned()),
        ..Caller::new(org, &["email:read", "email:write", "email:send"])
    }
}

/// Sends a request as `caller`, with a JSON body when one is given.
pub fn send_as(caller: Caller, method: Method, target: &str, body: Option<&Value>) -> Response {
    let mut req = Request::new(method, target).with_caller(caller);
    if let Some(body) = body {
        req = req.with_json(body);
    }
    testing::handle::<EmailPlugin>(&req)
}

/// Sends a request as [`ORG`] on the pro plan.
pub fn call(method: Method, target: &str, body: Option<&Value>) -> Response {
    send_as(caller_of(ORG, "pro"), method, target, body)
}

pub use plateau_sdk::testing::json_body as json_of;

/// The `field`s of a `validation_failed` problem, sorted.
pub fn invalid_fields(res: &Response) -> Vec<String> {
    assert_eq!(res.status, 400, "{}", String::from_utf8_lossy(&res.body));
    let mut fields: Vec<String> = json_of(res)["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| e["field"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    fields.sort();
    fields
}

/// A configuration of `smtp.example.com:587` with STARTTLS and a password,
/// allowing `ann@example.com` and every address of `example.org`.
pub fn smtp_config() -> Value {
    json!({
        "host": "smtp.example.com",
        "port": 587,
        "tlsMode": "starttls",
        "username": "relay",
        "password": "s3cret-password",
        "allowedSenders": ["ann@example.com", "*@example.org"],
    })
}

/// Resets the host, freezes the clock at [`NOW`] and configures [`ORG`].
pub fn setup() {
    testing::reset();
    testing::set_now(NOW);
    let res = call(Method::Put, "/email/config", Some(&smtp_config()));
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
}

/// A valid message from ann@example.com to bob@example.net.
pub fn message() -> Value {
    json!({
        "from": "Ann <ann@example.com>",
        "to": ["bob@example.net"],
        "subject": "Hello",
        "text": "Hi Bob",
    })
}

/// `POST /email/send` as [`ORG`]; asserts 202 and returns the entry.
pub fn queue(body: &Value) -> Value {
    let res = call(Method::Post, "/email/send", Some(body));
    assert_eq!(res.status, 202, "{}", String::from_utf8_lossy(&res.body));
    json_of(&res)
}

/// What the mock SMTP server saw.
pub type Submissions = Rc<RefCell<Vec<(SmtpServer, Message)>>>;

/// Answers submissions with `replies` in turn (the last one repeats) and
/// records them.
pub fn mock_smtp(replies: Vec<Result<Reply, SmtpError>>) -> Submissions {
    let seen: Submissions = Rc::default();
    let recorded = seen.clone();
    testing::mock_smtp(move |server, message| {
        let mut seen = recorded.borrow_mut();
        seen.push((server.clone(), message.clone()));
        let reply = replies
            .get(seen.len() - 1)
            .or(replies.last())
            .cloned()
            .expect("a reply");
        match reply {
            Ok(reply) if reply.code < 400 => Ok(Sent {
                message_id: format!("<m{}@example.com>", seen.len()),
                reply,
            }),
            Ok(reply) => Err(SmtpError::Rejected(reply)),
            Err(e) => Err(e),
        }
    });
    seen
}

pub fn reply(code: u16, message: &str) -> Result<Reply, SmtpError> {
    Ok(Reply {
        code,
        message: message.to_owned(),
    })
}

/// Runs the jobs due by the host clock as the host's job runner does
/// (`testing::run_due_jobs`); every run must record its outcome. Returns
/// how many ran.
pub fn run_due_jobs() -> usize {
    let ran = testing::run_due_jobs::<EmailPlugin>(clock::now_millis());
    for (key, result) in &ran {
        if let Err(e) = result {
            panic!("job {key} did not record its outcome: {e}");
        }
    }
    ran.len()
}

/// Moves the frozen clock forward.
pub fn advance(ms: u64) {
    testing::set_now(clock::now_millis() + ms);
}

#[test]
fn description_declares_scopes_capabilities_subscriptions_and_routes() {
    let description = plateau_sdk::describe::<EmailPlugin>();
    assert_eq!(description.problems(), Vec::<String>::new());
    assert_eq!(description.name, "email");
    assert_eq!(description.prefixes, ["/email"]);
    let scopes: Vec<&str> = description.scopes.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(scopes, ["email:read", "email:write", "email:send"]);
    assert_eq!(
        description.capabilities,
        [
            "kv",
            "events",
            "log",
            "config",
            "clock",
            "cursors",
            "scheduler",
            "smtp",
            "secrets"
        ]
    );
    assert_eq!(
        description.subscriptions,
        [
            "alarms.email.requested",
            "anomalies.email.requested",
            "checks.email.requested",
            "heartbeats.email.requested",
            "spend.email.requested",
            "webhooks.email.requested",
            "errors.email.requested",
            "status-pages.email.requested"
        ]
    );
    let routes: Vec<String> = description
        .routes
        .iter()
        .map(|r| {
            assert!(!r.summary.is_empty(), "{} {}", r.method, r.path);
            let plateau_sdk::Access::Scope(scope) = &r.access else {
                panic!("{} {} is not scoped", r.method, r.path)
            };
            format!("{} {} {scope}", r.method, r.path)
        })
        .collect();
    assert_eq!(
        routes,
        [
            "GET /email/config email:read",
            "PUT /email/config email:write",
            "DELETE /email/config email:write",
            "POST /email/send email:send",
            "GET /email/messages email:read",
            "GET /email/messages/{id} email:read",
            "GET /email/suppressions email:read",
            "DELETE /email/suppressions/{address} email:write",
        ]
    );
}
