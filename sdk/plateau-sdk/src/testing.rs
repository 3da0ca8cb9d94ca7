//! Native test support: drive a plugin like the host would, with in-memory
//! key-value storage, recorded events and logs, a settable clock and config,
//! and mocked outbound HTTP. Only in native builds.
//!
//! State is per thread, so `cargo test`'s parallel tests do not see each
//! other's data; call [`reset`] to start over inside one test.
//!
//! ```
//! use plateau_sdk::{testing, Bucket};
//!
//! testing::set_organization(Some("org_1"));
//! Bucket::caller().unwrap().set("greeting", "hello").unwrap();
//! let value: Option<String> = Bucket::caller().unwrap().get("greeting").unwrap();
//! assert_eq!(value.as_deref(), Some("hello"));
//! ```

use crate::events::Recorded as NewEvent;
use crate::host::log::Level;
use crate::http::{Request, Response};
use crate::jobs::{Job, NewJob};
use crate::outbound::{HttpError, IncomingResponse, OutgoingRequest};
use crate::smtp::{Message, Sent, SmtpError, SmtpServer};
use crate::sys::native::{State, with_state};
use crate::{Event, Tick};
use crate::{Plugin, Router};

/// Forgets all data, events, logs, config, the fixed clock and the mock.
pub fn reset() {
    with_state(|s| *s = State::default());
}

/// Serves `req` the way the host does: `Namespace::Caller` is the request's
/// organisation, and an answer of 500 or more rolls back the request's
/// key-value writes and events.
pub fn handle<P: Plugin>(req: &Request) -> Response {
    handle_with(&P::router(), req, crate::serve::<P>)
}

/// [`handle`] with a router built once by the test.
pub fn handle_with(
    router: &Router,
    req: &Request,
    handler: fn(&Router, &Request) -> Response,
) -> Response {
    let before = with_state(|s| {
        let saved = (s.data.clone(), s.organization.clone());
        s.organization = req.caller.organization_id.clone();
        s.claimed.clear();
        saved
    });
    let response = handler(router, req);
    with_state(|s| {
        if response.status >= 500 {
            s.data = before.0;
            s.keep_claims();
        }
        s.organization = before.1;
    });
    response
}

/// Delivers a tick; there is no caller organisation, as in the host.
pub fn tick<P: Plugin>(schedule: &str) -> Result<(), String> {
    let at = crate::host::clock::now_millis();
    without_caller(|| {
        P::on_tick(&Tick {
            schedule: schedule.to_owned(),
            at,
        })
    })
}

/// Delivers a due job as the host does: no caller organisation, and its
/// writes are rolled back when it returns an error.
pub fn run_job<P: Plugin>(job: &Job) -> Result<(), String> {
    let before = with_state(|s| {
        s.claimed.clear();
        s.data.clone()
    });
    let result = without_caller(|| P::on_job(job));
    if result.is_err() {
        with_state(|s| {
            s.data = before;
            s.keep_claims();
        });
    }
    result
}

/// Moves the clock to `now` and runs every job due by then, earliest first,
/// as the host's job runner does: a job that succeeds and was not
/// scheduled again during its run is finished (a repeating one moves to its
/// next due time on its grid, skipping missed runs; a one-shot one goes);
/// one that fails stays scheduled and is not run again in this call. Jobs
/// that runs schedule for `now` or earlier run too. Returns each run's key
/// and result, in order.
pub fn run_due_jobs<P: Plugin>(now: u64) -> Vec<(String, Result<(), String>)> {
    set_now(now);
    let mut ran = Vec::new();
    let mut failed: Vec<(String, String)> = Vec::new();
    loop {
        let next = jobs()
            .into_iter()
            .filter(|(ns, job)| job.at <= now && !failed.contains(&(ns.clone(), job.key.clone())))
            .min_by_key(|(_, job)| job.at);
        let Some((ns, scheduled)) = next else {
            return ran;
        };
        let organization_id = ns.strip_prefix("org:").map(str::to_owned);
        let job = Job {
            key: scheduled.key.clone(),
            organization_id: organization_id.clone(),
            payload: scheduled.payload.clone(),
            due: scheduled.at,
            attempt: 1,
        };
        let result = run_job::<P>(&job);
        let unchanged = with_state(|s| {
            s.data.jobs.get(&(ns.clone(), scheduled.key.clone())) == Some(&scheduled)
        });
        match &result {
            Ok(()) if unchanged => with_state(|s| {
                let key = (ns.clone(), scheduled.key.clone());
                match scheduled.every_ms {
                    Some(every) => {
                        let behind = now.saturating_sub(scheduled.at) / every + 1;
                        let job = s.data.jobs.get_mut(&key).expect("unchanged");
                        job.at = scheduled.at + behind * every;
                    }
                    None => {
                        s.data.jobs.remove(&key);
                    }
                }
            }),
            Ok(()) => {}
            Err(_) => failed.push((ns, scheduled.key.clone())),
        }
        ran.push((scheduled.key, result));
    }
}

/// The jobs scheduled so far, as `(namespace, job)` with namespaces
/// `global` or `org:<id>`, in key order.
pub fn jobs() -> Vec<(String, NewJob)> {
    with_state(|s| {
        s.data
            .jobs
            .iter()
            .map(|((ns, _), job)| (ns.clone(), job.clone()))
            .collect()
    })
}

/// Answers SMTP submissions with `mock` instead of failing them.
pub fn mock_smtp(mock: impl Fn(&SmtpServer, &Message) -> Result<Sent, SmtpError> + 'static) {
    with_state(|s| s.smtp = Some(std::rc::Rc::new(mock)));
}

/// Answers the `runner` capability's runs with `mock` instead of failing
/// them.
pub fn mock_runner(
    mock: impl Fn(
        &crate::runner::Owner,
        &crate::runner::Command,
    ) -> Result<crate::runner::Outcome, crate::runner::RunnerError>
    + 'static,
) {
    with_state(|s| s.runner = Some(std::rc::Rc::new(mock)));
}

/// Delivers an event; there is no caller organisation, as in the host.
pub fn deliver<P: Plugin>(event: &Event) -> Result<(), String> {
    without_caller(|| P::on_event(event))
}

fn without_caller<R>(f: impl FnOnce() -> R) -> R {
    let saved = with_state(|s| s.organization.take());
    let result = f();
    with_state(|s| s.organization = saved);
    result
}

/// Sets the organisation `Namespace::Caller` resolves to outside [`handle`].
pub fn set_organization(organization_id: Option<&str>) {
    with_state(|s| s.organization = organization_id.map(str::to_owned));
}

/// Sets a configuration value, as the operator would.
pub fn set_config(key: &str, value: &str) {
    with_state(|s| s.config.insert(key.to_owned(), value.to_owned()));
}

/// Freezes the clock at `millis` since the Unix epoch.
pub fn set_now(millis: u64) {
    with_state(|s| s.now = Some(millis));
}

/// Events recorded so far (committed ones only after a rolled-back request).
pub fn events() -> Vec<NewEvent> {
    with_state(|s| s.data.events.clone())
}

/// Log lines written so far.
pub fn logs() -> Vec<(Level, String)> {
    with_state(|s| s.logs.clone())
}

/// Answers outbound requests with `mock` instead of failing them.
pub fn mock_http(mock: impl Fn(&OutgoingRequest) -> Result<IncomingResponse, HttpError> + 'static) {
    with_state(|s| s.http = Some(std::rc::Rc::new(mock)));
}

/// The JSON body of a plugin's response; panics naming the status and
/// the body when it is not JSON.
pub fn json_body(res: &Response) -> serde_json::Value {
    serde_json::from_slice(&res.body).unwrap_or_else(|e| {
        panic!(
            "status {}: body is not json ({e}): {}",
            res.status,
            String::from_utf8_lossy(&res.body)
        )
    })
}

/// A 200 outbound response with a JSON body, for [`mock_http`].
pub fn json_response(value: &serde_json::Value) -> IncomingResponse {
    IncomingResponse {
        status: 200,
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        body: value.to_string().into_bytes(),
        body_truncated: false,
        connect_ms: 1,
        total_ms: 2,
    }
}
