//! Host calls of a component build: the WIT imports of `plateau:plugin`,
//! converted to and from the SDK's own types.

use std::fmt;

use crate::events::NewEvent;
use crate::guest::bindings::plateau::plugin as wit;
use crate::host::log::Level;
use crate::kv::{Entry, KvError, KvPage, Namespace};
use crate::outbound::{HttpError, IncomingResponse, OutgoingRequest};

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
