//! Host calls of a component build: the WIT imports of the world
//! `plateau:plugin/plugin@0.5.2` (one package per interface), converted to
//! and from the SDK's own types.

use std::fmt;

use crate::events::Recorded as NewEvent;
use crate::guest::bindings::plateau as wit;
use crate::host::log::Level;
use crate::jobs::{NewJob, SchedulerError};
use crate::kv::{Entry, KvError, KvPage, Namespace};
use crate::outbound::{HttpError, IncomingResponse, OutgoingRequest};
use crate::runner;
use crate::smtp;

/// A namespace in the shape of one interface: `kv`, `scheduler` and
/// `secrets` each declare their own, so that each package stands alone.
macro_rules! namespace {
    ($ns:expr, $wit:path) => {{
        type N = $wit;
        match $ns {
            Namespace::Caller => N::Caller,
            Namespace::Organization(id) => N::Organization(id.clone()),
            Namespace::Global => N::Global,
        }
    }};
}

pub(crate) struct RawBucket(wit::kv::kv::Bucket);

impl fmt::Debug for RawBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RawBucket").field(&self.0.handle()).finish()
    }
}

impl RawBucket {
    pub(crate) fn open(namespace: &Namespace) -> Result<Self, KvError> {
        let ns = namespace!(namespace, wit::kv::kv::Namespace);
        wit::kv::kv::Bucket::open(&ns)
            .map(RawBucket)
            .map_err(kv_error)
    }

    pub(crate) fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.0.get(key).map_err(kv_error)
    }

    pub(crate) fn set(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.0.set(key, value).map_err(kv_error)
    }

    pub(crate) fn delete(&self, key: &str) -> Result<bool, KvError> {
        self.0.delete(key).map_err(kv_error)
    }

    pub(crate) fn list(
        &self,
        prefix: &str,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<KvPage, KvError> {
        let page = self.0.list(prefix, cursor, limit).map_err(kv_error)?;
        Ok(KvPage {
            entries: page
                .entries
                .into_iter()
                .map(|e| Entry {
                    key: e.key,
                    value: e.value,
                })
                .collect(),
            next_cursor: page.next_cursor,
        })
    }

    pub(crate) fn count(&self, prefix: &str) -> Result<u64, KvError> {
        self.0.count(prefix).map_err(kv_error)
    }

    pub(crate) fn compare_and_swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<bool, KvError> {
        self.0
            .compare_and_swap(key, expected, new)
            .map_err(kv_error)
    }

    pub(crate) fn increment(&self, key: &str, delta: i64) -> Result<i64, KvError> {
        self.0.increment(key, delta).map_err(kv_error)
    }

    pub(crate) fn claim(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
        then: &[(String, Option<Vec<u8>>)],
    ) -> Result<bool, KvError> {
        use wit::kv::kv::{Entry as WitEntry, Write};
        let then: Vec<Write> = then
            .iter()
            .map(|(key, value)| match value {
                Some(value) => Write::Set(WitEntry {
                    key: key.clone(),
                    value: value.clone(),
                }),
                None => Write::Delete(key.clone()),
            })
            .collect();
        self.0.claim(key, expected, new, &then).map_err(kv_error)
    }

    pub(crate) fn wait(&self, prefix: &str, timeout_ms: u32) -> Result<bool, KvError> {
        self.0.wait(prefix, timeout_ms).map_err(kv_error)
    }
}

fn kv_error(error: wit::kv::kv::Error) -> KvError {
    match error {
        wit::kv::kv::Error::AccessDenied(why) => KvError::AccessDenied(why),
        wit::kv::kv::Error::InvalidKey(why) => KvError::InvalidKey(why),
        wit::kv::kv::Error::TooLarge(why) => KvError::TooLarge(why),
        wit::kv::kv::Error::InvalidCursor => KvError::InvalidCursor,
        wit::kv::kv::Error::Unavailable(why) => KvError::Unavailable(why),
    }
}

pub(crate) fn config_get(key: &str) -> Option<String> {
    wit::config::config::get(key)
}

pub(crate) fn config_get_all() -> Vec<(String, String)> {
    wit::config::config::get_all()
}

pub(crate) fn now_millis() -> u64 {
    wit::clock::clock::now_millis()
}

pub(crate) fn log(level: Level, message: &str) {
    let level = match level {
        Level::Trace => wit::log::log::Level::Trace,
        Level::Debug => wit::log::log::Level::Debug,
        Level::Info => wit::log::log::Level::Info,
        Level::Warn => wit::log::log::Level::Warn,
        Level::Error => wit::log::log::Level::Error,
    };
    wit::log::log::log(level, message);
}

pub(crate) fn cursor_encode(list: &str, position: &str) -> String {
    wit::cursors::cursors::encode(list, position)
}

pub(crate) fn cursor_decode(list: &str, cursor: &str) -> Result<String, String> {
    wit::cursors::cursors::decode(list, cursor)
}

pub(crate) fn emit(event: &NewEvent) -> Result<(), String> {
    wit::events::events::emit(&wit::events::events::NewEvent {
        organization_id: event.organization_id.clone(),
        type_: event.event_type.clone(),
        action: event.action.clone(),
        resource_type: event.resource_type.clone(),
        resource_id: event.resource_id.clone(),
        data: event.data.clone(),
        audit: event.audit,
    })
}

mod http_wit {
    pub use super::wit::outbound_http::outbound_http::*;
}

fn http_request(req: &OutgoingRequest) -> http_wit::OutgoingRequest {
    http_wit::OutgoingRequest {
        method: req.method.clone(),
        url: req.url.clone(),
        headers: req.headers.clone(),
        body: req.body.clone(),
        timeout_ms: req.timeout_ms,
        keep_body_bytes: req.keep_body_bytes,
    }
}

fn http_answer(
    answer: Result<http_wit::IncomingResponse, http_wit::HttpError>,
) -> Result<IncomingResponse, HttpError> {
    use http_wit::HttpError as E;
    let res = answer.map_err(|e| match e {
        E::HostNotAllowed(why) => HttpError::HostNotAllowed(why),
        E::AddressRefused(why) => HttpError::AddressRefused(why),
        E::InvalidRequest(why) => HttpError::InvalidRequest(why),
        E::Timeout => HttpError::Timeout,
        E::ResponseTooLarge => HttpError::ResponseTooLarge,
        E::ConnectionFailed(why) => HttpError::ConnectionFailed(why),
    })?;
    Ok(IncomingResponse {
        status: res.status,
        headers: res.headers,
        body: res.body,
        body_truncated: res.body_truncated,
        connect_ms: res.connect_ms,
        total_ms: res.total_ms,
    })
}

pub(crate) fn http_send(req: &OutgoingRequest) -> Result<IncomingResponse, HttpError> {
    http_answer(http_wit::send(&http_request(req)))
}

pub(crate) fn http_send_many(reqs: &[OutgoingRequest]) -> Vec<Result<IncomingResponse, HttpError>> {
    let reqs: Vec<_> = reqs.iter().map(http_request).collect();
    http_wit::send_many(&reqs)
        .into_iter()
        .map(http_answer)
        .collect()
}

fn scheduler_error(error: wit::scheduler::scheduler::Error) -> SchedulerError {
    match error {
        wit::scheduler::scheduler::Error::AccessDenied(why) => SchedulerError::AccessDenied(why),
        wit::scheduler::scheduler::Error::Invalid(why) => SchedulerError::Invalid(why),
        wit::scheduler::scheduler::Error::Unavailable(why) => SchedulerError::Unavailable(why),
    }
}

pub(crate) fn job_schedule(job: &NewJob) -> Result<(), SchedulerError> {
    wit::scheduler::scheduler::schedule(&wit::scheduler::scheduler::NewJob {
        namespace: namespace!(&job.namespace, wit::scheduler::scheduler::Namespace),
        key: job.key.clone(),
        at: job.at,
        every_ms: job.every_ms,
        payload: job.payload.clone(),
    })
    .map_err(scheduler_error)
}

pub(crate) fn job_cancel(ns: &Namespace, key: &str) -> Result<(), SchedulerError> {
    let ns = namespace!(ns, wit::scheduler::scheduler::Namespace);
    wit::scheduler::scheduler::cancel(&ns, key).map_err(scheduler_error)
}

pub(crate) fn secret_seal(ns: &Namespace, plaintext: &[u8]) -> Result<Vec<u8>, String> {
    let ns = namespace!(ns, wit::secrets::secrets::Namespace);
    wit::secrets::secrets::seal(&ns, plaintext)
}

pub(crate) fn secret_open(ns: &Namespace, sealed: &[u8]) -> Result<Vec<u8>, String> {
    let ns = namespace!(ns, wit::secrets::secrets::Namespace);
    wit::secrets::secrets::open(&ns, sealed)
}

fn reply(r: wit::smtp::smtp::Reply) -> smtp::Reply {
    smtp::Reply {
        code: r.code,
        message: r.message,
    }
}

pub(crate) fn smtp_send(
    server: &smtp::SmtpServer,
    message: &smtp::Message,
) -> Result<smtp::Sent, smtp::SmtpError> {
    use wit::smtp::smtp as w;
    let server = w::Server {
        host: server.host.clone(),
        port: server.port,
        tls: match server.tls {
            smtp::TlsMode::Implicit => w::TlsMode::Implicit,
            smtp::TlsMode::StartTls => w::TlsMode::Starttls,
            smtp::TlsMode::None => w::TlsMode::None,
        },
        username: server.username.clone(),
        password: server.password.clone(),
        timeout_ms: server.timeout_ms,
    };
    let message = w::Message {
        sender: message.sender.clone(),
        reply_to: message.reply_to.clone(),
        to: message.to.clone(),
        cc: message.cc.clone(),
        bcc: message.bcc.clone(),
        subject: message.subject.clone(),
        text: message.text.clone(),
        html: message.html.clone(),
        headers: message.headers.clone(),
        attachments: message
            .attachments
            .iter()
            .map(|a| w::Attachment {
                filename: a.filename.clone(),
                content_type: a.content_type.clone(),
                content: a.content.clone(),
            })
            .collect(),
    };
    match w::send(&server, &message) {
        Ok(sent) => Ok(smtp::Sent {
            message_id: sent.message_id,
            reply: reply(sent.reply),
        }),
        Err(e) => Err(match e {
            w::Error::Invalid(why) => smtp::SmtpError::Invalid(why),
            w::Error::HostNotAllowed(why) => smtp::SmtpError::HostNotAllowed(why),
            w::Error::AddressRefused(why) => smtp::SmtpError::AddressRefused(why),
            w::Error::ConnectionFailed(why) => smtp::SmtpError::ConnectionFailed(why),
            w::Error::TlsFailed(why) => smtp::SmtpError::TlsFailed(why),
            w::Error::Timeout => smtp::SmtpError::Timeout,
            w::Error::Rejected(r) => smtp::SmtpError::Rejected(reply(r)),
        }),
    }
}

pub(crate) fn runner_run(
    owner: &runner::Owner,
    command: &runner::Command,
) -> Result<runner::Outcome, runner::RunnerError> {
    use wit::runner::runner as w;
    let owner = match owner {
        runner::Owner::Caller => w::Owner::Caller,
        runner::Owner::Organization(id) => w::Owner::Organization(id.clone()),
    };
    let command = w::Command {
        image: command.image.clone(),
        args: command.args.clone(),
        env: command.env.clone(),
        timeout_ms: command.timeout_ms,
        memory_mb: command.memory_mb,
    };
    let outcome = |o: w::Outcome| runner::Outcome {
        exit_code: o.exit_code,
        stdout: o.stdout,
        stderr: o.stderr,
        stdout_truncated: o.stdout_truncated,
        stderr_truncated: o.stderr_truncated,
    };
    w::run(&owner, &command).map(outcome).map_err(|e| match e {
        w::Error::ImageNotFound(m) => runner::RunnerError::ImageNotFound(m),
        w::Error::NotACommand(m) => runner::RunnerError::NotACommand(m),
        w::Error::AccessDenied(m) => runner::RunnerError::AccessDenied(m),
        w::Error::Timeout(o) => runner::RunnerError::Timeout(outcome(o)),
        w::Error::Trapped((m, o)) => runner::RunnerError::Trapped(m, outcome(o)),
        w::Error::Invalid(m) => runner::RunnerError::Invalid(m),
    })
}

pub(crate) fn platform_logs_read(
    owner: &crate::platform_logs::Owner,
    sources: &[crate::platform_logs::Source],
    cursor: &str,
    limit: u32,
) -> Result<crate::platform_logs::Page, crate::platform_logs::LogsError> {
    use crate::platform_logs as pl;
    use wit::logs::logs as w;
    let owner = match owner {
        pl::Owner::Caller => w::Owner::Caller,
        pl::Owner::Organization(id) => w::Owner::Organization(id.clone()),
    };
    let sources: Vec<w::Source> = sources
        .iter()
        .map(|s| match s {
            pl::Source::App => w::Source::App,
            pl::Source::Event => w::Source::Event,
        })
        .collect();
    match w::read(&owner, &sources, cursor, limit) {
        Ok(page) => Ok(pl::Page {
            lines: page
                .lines
                .into_iter()
                .map(|l| pl::Line {
                    source: Some(match l.source {
                        w::Source::App => pl::Source::App,
                        w::Source::Event => pl::Source::Event,
                    }),
                    id: l.id,
                    resource_id: l.resource_id,
                    resource_name: l.resource_name,
                    deployment: l.deployment,
                    replica: l.replica,
                    channel: l.channel,
                    message: l.message,
                    at: l.at,
                })
                .collect(),
            cursor: page.cursor,
            more: page.more,
        }),
        Err(w::Error::AccessDenied(m)) => Err(pl::LogsError::AccessDenied(m)),
        Err(w::Error::Invalid(m)) => Err(pl::LogsError::Invalid(m)),
        Err(w::Error::Unavailable(m)) => Err(pl::LogsError::Unavailable(m)),
    }
}

pub(crate) fn tcp_send(
    destination: &crate::tcp::Destination,
    payload: &[u8],
) -> Result<u64, crate::tcp::TcpError> {
    use crate::tcp::TcpError as T;
    use wit::tcp::tcp as w;
    let destination = w::Destination {
        host: destination.host.clone(),
        port: destination.port,
        tls: destination.tls,
        timeout_ms: destination.timeout_ms,
    };
    w::send(&destination, payload).map_err(|e| match e {
        w::Error::HostNotAllowed(m) => T::HostNotAllowed(m),
        w::Error::AddressRefused(m) => T::AddressRefused(m),
        w::Error::ConnectionFailed(m) => T::ConnectionFailed(m),
        w::Error::TlsFailed(m) => T::TlsFailed(m),
        w::Error::Timeout => T::Timeout,
        w::Error::Invalid(m) => T::Invalid(m),
    })
}

fn app_env_owner(owner: &crate::app_env::Owner) -> wit::app_env::app_env::Owner {
    use wit::app_env::app_env as w;
    match owner {
        crate::app_env::Owner::Caller => w::Owner::Caller,
        crate::app_env::Owner::Organization(id) => w::Owner::Organization(id.clone()),
    }
}

fn app_env_error(e: wit::app_env::app_env::Error) -> crate::app_env::AppEnvError {
    use crate::app_env::AppEnvError as E;
    use wit::app_env::app_env as w;
    match e {
        w::Error::NotFound(m) => E::NotFound(m),
        w::Error::AccessDenied(m) => E::AccessDenied(m),
        w::Error::Invalid(m) => E::Invalid(m),
        w::Error::Unavailable(m) => E::Unavailable(m),
    }
}

pub(crate) fn app_env_get(
    owner: &crate::app_env::Owner,
    id: &str,
) -> Result<crate::app_env::App, crate::app_env::AppEnvError> {
    wit::app_env::app_env::get(&app_env_owner(owner), id)
        .map(|a| crate::app_env::App {
            id: a.id,
            name: a.name,
            live_deployment: a.live_deployment,
        })
        .map_err(app_env_error)
}

pub(crate) fn app_env_set(
    owner: &crate::app_env::Owner,
    id: &str,
    revision: u64,
    source: &str,
    vars: &[(String, String)],
) -> Result<crate::app_env::Outcome, crate::app_env::AppEnvError> {
    wit::app_env::app_env::set(&app_env_owner(owner), id, revision, source, vars)
        .map(|o| crate::app_env::Outcome {
            applied: o.applied,
            changed: o.changed,
            deployment: o.deployment,
        })
        .map_err(app_env_error)
}
