//! Host calls of a component build: the WIT imports of `plateau:plugin`,
//! converted to and from the SDK's own types.

use std::fmt;

use crate::events::NewEvent;
use crate::guest::bindings::plateau::plugin as wit;
use crate::host::log::Level;
use crate::jobs::{NewJob, SchedulerError};
use crate::kv::{Entry, KvError, KvPage, Namespace};
use crate::outbound::{HttpError, IncomingResponse, OutgoingRequest};
use crate::smtp;

pub(crate) struct RawBucket(wit::kv::Bucket);

impl fmt::Debug for RawBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RawBucket").field(&self.0.handle()).finish()
    }
}

impl RawBucket {
    pub(crate) fn open(namespace: &Namespace) -> Result<Self, KvError> {
        let ns = match namespace {
            Namespace::Caller => wit::kv::Namespace::Caller,
            Namespace::Organization(id) => wit::kv::Namespace::Organization(id.clone()),
            Namespace::Global => wit::kv::Namespace::Global,
        };
        wit::kv::Bucket::open(&ns).map(RawBucket).map_err(kv_error)
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
}

fn kv_error(error: wit::kv::Error) -> KvError {
    match error {
        wit::kv::Error::AccessDenied(why) => KvError::AccessDenied(why),
        wit::kv::Error::InvalidKey(why) => KvError::InvalidKey(why),
        wit::kv::Error::TooLarge(why) => KvError::TooLarge(why),
        wit::kv::Error::InvalidCursor => KvError::InvalidCursor,
        wit::kv::Error::Unavailable(why) => KvError::Unavailable(why),
    }
}

pub(crate) fn config_get(key: &str) -> Option<String> {
    wit::config::get(key)
}

pub(crate) fn config_get_all() -> Vec<(String, String)> {
    wit::config::get_all()
}

pub(crate) fn now_millis() -> u64 {
    wit::clock::now_millis()
}

pub(crate) fn log(level: Level, message: &str) {
    let level = match level {
        Level::Trace => wit::log::Level::Trace,
        Level::Debug => wit::log::Level::Debug,
        Level::Info => wit::log::Level::Info,
        Level::Warn => wit::log::Level::Warn,
        Level::Error => wit::log::Level::Error,
    };
    wit::log::log(level, message);
}

pub(crate) fn cursor_encode(list: &str, position: &str) -> String {
    wit::cursors::encode(list, position)
}

pub(crate) fn cursor_decode(list: &str, cursor: &str) -> Result<String, String> {
    wit::cursors::decode(list, cursor)
}

pub(crate) fn emit(event: &NewEvent) -> Result<(), String> {
    wit::events::emit(&wit::events::NewEvent {
        organization_id: event.organization_id.clone(),
        type_: event.event_type.clone(),
        action: event.action.clone(),
        resource_type: event.resource_type.clone(),
        resource_id: event.resource_id.clone(),
        data: event.data.clone(),
        audit: event.audit,
    })
}

pub(crate) fn http_send(req: &OutgoingRequest) -> Result<IncomingResponse, HttpError> {
    let res = wit::outbound_http::send(&wit::outbound_http::OutgoingRequest {
        method: req.method.clone(),
        url: req.url.clone(),
        headers: req.headers.clone(),
        body: req.body.clone(),
        timeout_ms: req.timeout_ms,
    })
    .map_err(|e| match e {
        wit::outbound_http::HttpError::HostNotAllowed(why) => HttpError::HostNotAllowed(why),
        wit::outbound_http::HttpError::AddressRefused(why) => HttpError::AddressRefused(why),
        wit::outbound_http::HttpError::InvalidRequest(why) => HttpError::InvalidRequest(why),
        wit::outbound_http::HttpError::Timeout => HttpError::Timeout,
        wit::outbound_http::HttpError::ResponseTooLarge => HttpError::ResponseTooLarge,
        wit::outbound_http::HttpError::ConnectionFailed(why) => HttpError::ConnectionFailed(why),
    })?;
    Ok(IncomingResponse {
        status: res.status,
        headers: res.headers,
        body: res.body,
        connect_ms: res.connect_ms,
        total_ms: res.total_ms,
    })
}

fn namespace(ns: &Namespace) -> wit::kv::Namespace {
    match ns {
        Namespace::Caller => wit::kv::Namespace::Caller,
        Namespace::Organization(id) => wit::kv::Namespace::Organization(id.clone()),
        Namespace::Global => wit::kv::Namespace::Global,
    }
}

fn scheduler_error(error: wit::scheduler::Error) -> SchedulerError {
    match error {
        wit::scheduler::Error::AccessDenied(why) => SchedulerError::AccessDenied(why),
        wit::scheduler::Error::Invalid(why) => SchedulerError::Invalid(why),
        wit::scheduler::Error::Unavailable(why) => SchedulerError::Unavailable(why),
    }
}

pub(crate) fn job_schedule(job: &NewJob) -> Result<(), SchedulerError> {
    wit::scheduler::schedule(&wit::scheduler::NewJob {
        namespace: namespace(&job.namespace),
        key: job.key.clone(),
        at: job.at,
        every_ms: job.every_ms,
        payload: job.payload.clone(),
    })
    .map_err(scheduler_error)
}

pub(crate) fn job_cancel(ns: &Namespace, key: &str) -> Result<(), SchedulerError> {
    wit::scheduler::cancel(&namespace(ns), key).map_err(scheduler_error)
}

pub(crate) fn secret_seal(ns: &Namespace, plaintext: &[u8]) -> Result<Vec<u8>, String> {
    wit::secrets::seal(&namespace(ns), plaintext)
}

pub(crate) fn secret_open(ns: &Namespace, sealed: &[u8]) -> Result<Vec<u8>, String> {
    wit::secrets::open(&namespace(ns), sealed)
}

fn reply(r: wit::smtp::Reply) -> smtp::Reply {
    smtp::Reply {
        code: r.code,
        message: r.message,
    }
}

pub(crate) fn smtp_send(
    server: &smtp::SmtpServer,
    message: &smtp::Message,
) -> Result<smtp::Sent, smtp::SmtpError> {
    use wit::smtp as w;
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
