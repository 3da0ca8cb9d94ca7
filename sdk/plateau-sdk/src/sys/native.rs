//! Host calls of a native build: in-memory, per-thread stand-ins that follow
//! the WIT contracts (key rules, byte order, cursors bound to their prefix or
//! list), so plugin logic can be unit-tested with `cargo test`.
//!
//! Each test thread has its own state; `crate::testing` reads and sets it.
//! The cursors made here are not signed: only the host signs cursors, and a
//! native build never serves real clients.

use plateau_contract::kv as kv_rules;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::events::Recorded as NewEvent;
use crate::host::log::Level;
use crate::jobs::{NewJob, SchedulerError};
use crate::kv::{Entry, KvError, KvPage, Namespace};
use crate::outbound::{HttpError, IncomingResponse, OutgoingRequest};
use crate::runner;
use crate::smtp;

pub(crate) type HttpMock = Rc<dyn Fn(&OutgoingRequest) -> Result<IncomingResponse, HttpError>>;
pub(crate) type RunnerMock =
    Rc<dyn Fn(&runner::Owner, &runner::Command) -> Result<runner::Outcome, runner::RunnerError>>;
pub(crate) type SmtpMock =
    Rc<dyn Fn(&smtp::SmtpServer, &smtp::Message) -> Result<smtp::Sent, smtp::SmtpError>>;

/// What a request may commit or roll back.
#[derive(Debug, Clone, Default)]
pub(crate) struct Committed {
    pub(crate) kv: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    pub(crate) events: Vec<NewEvent>,
    /// Scheduled jobs by resolved namespace and key.
    pub(crate) jobs: BTreeMap<(String, String), NewJob>,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) data: Committed,
    pub(crate) config: BTreeMap<String, String>,
    pub(crate) now: Option<u64>,
    pub(crate) logs: Vec<(Level, String)>,
    /// The organisation `Namespace::Caller` resolves to.
    pub(crate) organization: Option<String>,
    pub(crate) http: Option<HttpMock>,
    pub(crate) smtp: Option<SmtpMock>,
    pub(crate) runner: Option<RunnerMock>,
    /// Writes of claims (namespace, key, value or deletion), which stay
    /// when the call's other writes are rolled back, as on the host.
    pub(crate) claimed: Vec<(String, String, Option<Vec<u8>>)>,
}

impl State {
    /// Applies again the claims a rolled-back call made.
    pub(crate) fn keep_claims(&mut self) {
        for (ns, key, value) in std::mem::take(&mut self.claimed) {
            let map = self.data.kv.entry(ns).or_default();
            match value {
                Some(value) => map.insert(key, value),
                None => map.remove(&key),
            };
        }
    }
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

pub(crate) fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(|state| f(&mut state.borrow_mut()))
}

/// The namespace under the host's rules: `global` or `org:<id>`.
pub(crate) fn resolve(namespace: &Namespace) -> Result<String, String> {
    let current = with_state(|s| s.organization.clone());
    match (namespace, current) {
        (Namespace::Global, _) => Ok("global".to_owned()),
        (Namespace::Caller, Some(org)) => Ok(format!("org:{org}")),
        (Namespace::Caller, None) => Err("there is no caller organisation here".to_owned()),
        (Namespace::Organization(id), Some(org)) if *id != org => {
            Err(format!("organisation {id} is not the caller's"))
        }
        (Namespace::Organization(id), _) => Ok(format!("org:{id}")),
    }
}

#[derive(Debug)]
pub(crate) struct RawBucket {
    namespace: String,
}

impl RawBucket {
    pub(crate) fn open(namespace: &Namespace) -> Result<Self, KvError> {
        let namespace = resolve(namespace).map_err(KvError::AccessDenied)?;
        Ok(RawBucket { namespace })
    }

    fn read<R>(&self, f: impl FnOnce(&BTreeMap<String, Vec<u8>>) -> R) -> R {
        with_state(|s| f(s.data.kv.entry(self.namespace.clone()).or_default()))
    }

    fn write<R>(&self, f: impl FnOnce(&mut BTreeMap<String, Vec<u8>>) -> R) -> R {
        with_state(|s| f(s.data.kv.entry(self.namespace.clone()).or_default()))
    }

    pub(crate) fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        check_key(key)?;
        Ok(self.read(|m| m.get(key).cloned()))
    }

    pub(crate) fn set(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        check_key(key)?;
        check_value(value)?;
        self.write(|m| m.insert(key.to_owned(), value.to_vec()));
        Ok(())
    }

    pub(crate) fn delete(&self, key: &str) -> Result<bool, KvError> {
        check_key(key)?;
        Ok(self.write(|m| m.remove(key).is_some()))
    }

    pub(crate) fn list(
        &self,
        prefix: &str,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<KvPage, KvError> {
        kv_rules::check_prefix(prefix).map_err(rule)?;
        let limit = limit.clamp(1, kv_rules::MAX_LIST_LIMIT);
        let after = match cursor {
            None => None,
            Some(cursor) => Some(decode_pair("kv", cursor, prefix).ok_or(KvError::InvalidCursor)?),
        };
        Ok(self.read(|m| {
            let mut keys = m
                .range(after.clone().unwrap_or_else(|| prefix.to_owned())..)
                .filter(|(k, _)| after.as_ref() != Some(*k))
                .take_while(|(k, _)| k.starts_with(prefix));
            let entries: Vec<Entry> = keys
                .by_ref()
                .take(limit as usize)
                .map(|(k, v)| Entry {
                    key: k.clone(),
                    value: v.clone(),
                })
                .collect();
            let more = keys.next().is_some();
            let next_cursor = match entries.last() {
                Some(last) if more => Some(encode_pair("kv", prefix, &last.key)),
                _ => None,
            };
            KvPage {
                entries,
                next_cursor,
            }
        }))
    }

    pub(crate) fn count(&self, prefix: &str) -> Result<u64, KvError> {
        Ok(self.read(|m| {
            m.range(prefix.to_owned()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .count() as u64
        }))
    }

    pub(crate) fn compare_and_swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<bool, KvError> {
        check_key(key)?;
        if let Some(value) = new {
            check_value(value)?;
        }
        Ok(self.write(|m| {
            if m.get(key).map(Vec::as_slice) != expected {
                return false;
            }
            match new {
                Some(value) => m.insert(key.to_owned(), value.to_vec()),
                None => m.remove(key),
            };
            true
        }))
    }

    /// A compare-and-swap with writes that change with it, kept even when
    /// the call's other writes are rolled back.
    pub(crate) fn claim(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
        then: &[(String, Option<Vec<u8>>)],
    ) -> Result<bool, KvError> {
        for (k, v) in then {
            check_key(k)?;
            if let Some(v) = v {
                check_value(v)?;
            }
        }
        if !self.compare_and_swap(key, expected, new)? {
            return Ok(false);
        }
        let writes =
            std::iter::once((key.to_owned(), new.map(<[u8]>::to_vec))).chain(then.iter().cloned());
        with_state(|s| {
            for (k, v) in writes {
                let map = s.data.kv.entry(self.namespace.clone()).or_default();
                match &v {
                    Some(value) => map.insert(k.clone(), value.clone()),
                    None => map.remove(&k),
                };
                s.claimed.push((self.namespace.clone(), k, v));
            }
        });
        Ok(true)
    }

    /// Nothing else runs during a native test, so no write can arrive
    /// while waiting: the timeout passes at once.
    pub(crate) fn wait(&self, prefix: &str, _timeout_ms: u32) -> Result<bool, KvError> {
        kv_rules::check_prefix(prefix).map_err(rule)?;
        Ok(false)
    }

    /// Counters are stored as decimal text, which is also a JSON number.
    pub(crate) fn increment(&self, key: &str, delta: i64) -> Result<i64, KvError> {
        check_key(key)?;
        self.write(|m| {
            let current = match m.get(key) {
                None => 0,
                Some(bytes) => std::str::from_utf8(bytes)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .ok_or_else(|| KvError::InvalidKey(format!("{key} does not hold a counter")))?,
            };
            let next = current.checked_add(delta).ok_or_else(|| {
                KvError::InvalidKey(format!("the counter at {key} would overflow"))
            })?;
            m.insert(key.to_owned(), next.to_string().into_bytes());
            Ok(next)
        })
    }
}

// The host's limits, from the contract.
fn check_key(key: &str) -> Result<(), KvError> {
    kv_rules::check_key(key).map_err(rule)
}

fn check_value(value: &[u8]) -> Result<(), KvError> {
    kv_rules::check_value(value).map_err(rule)
}

fn rule(e: kv_rules::KvRuleError) -> KvError {
    match e {
        kv_rules::KvRuleError::InvalidKey(m) => KvError::InvalidKey(m),
        kv_rules::KvRuleError::TooLarge(m) => KvError::TooLarge(m),
    }
}

/// `<kind>.<hex scope>.<hex position>`: a readable stand-in for the host's
/// signed cursors, bound to its prefix or list name all the same.
fn encode_pair(kind: &str, scope: &str, position: &str) -> String {
    format!("{kind}.{}.{}", hex(scope), hex(position))
}

fn decode_pair(kind: &str, cursor: &str, scope: &str) -> Option<String> {
    let mut parts = cursor.split('.');
    let (k, s, p) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || k != kind || unhex(s)? != scope {
        return None;
    }
    unhex(p)
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

pub(crate) fn config_get(key: &str) -> Option<String> {
    with_state(|s| s.config.get(key).cloned())
}

pub(crate) fn config_get_all() -> Vec<(String, String)> {
    with_state(|s| {
        s.config
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    })
}

pub(crate) fn now_millis() -> u64 {
    with_state(|s| s.now).unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    })
}

pub(crate) fn log(level: Level, message: &str) {
    eprintln!("[plugin {level:?}] {message}");
    with_state(|s| s.logs.push((level, message.to_owned())));
}

pub(crate) fn cursor_encode(list: &str, position: &str) -> String {
    encode_pair("list", list, position)
}

pub(crate) fn cursor_decode(list: &str, cursor: &str) -> Result<String, String> {
    decode_pair("list", cursor, list)
        .ok_or_else(|| format!("cursor was not issued for the list {list}"))
}

/// The checks of [`NewEvent::check`] ran in `emit`, as the host runs them.
pub(crate) fn emit(event: &NewEvent) -> Result<(), String> {
    with_state(|s| s.data.events.push(event.clone()));
    Ok(())
}

/// The mock's answer, its body cut at the request's `keep_body_bytes` as
/// the host cuts it.
pub(crate) fn http_send(req: &OutgoingRequest) -> Result<IncomingResponse, HttpError> {
    let mut res = match with_state(|s| s.http.clone()) {
        Some(mock) => mock(req)?,
        None => {
            return Err(HttpError::ConnectionFailed(
                "a native build has no outbound http: install a mock with testing::mock_http"
                    .to_owned(),
            ));
        }
    };
    if let Some(keep) = req.keep_body_bytes
        && res.body.len() > keep as usize
    {
        res.body.truncate(keep as usize);
        res.body_truncated = true;
    }
    Ok(res)
}

/// One request after another through the mock; the host sends them
/// concurrently.
pub(crate) fn http_send_many(reqs: &[OutgoingRequest]) -> Vec<Result<IncomingResponse, HttpError>> {
    if reqs.len() > crate::outbound::SEND_MANY_MAX {
        let why = format!(
            "send-many takes at most {} requests, not {}",
            crate::outbound::SEND_MANY_MAX,
            reqs.len()
        );
        return reqs
            .iter()
            .map(|_| Err(HttpError::InvalidRequest(why.clone())))
            .collect();
    }
    reqs.iter().map(http_send).collect()
}

pub(crate) fn job_schedule(job: &NewJob) -> Result<(), SchedulerError> {
    let ns = resolve(&job.namespace).map_err(SchedulerError::AccessDenied)?;
    if job.key.is_empty() || job.key.len() > 256 || job.key.chars().any(char::is_control) {
        return Err(SchedulerError::Invalid(
            "a job key is 1 to 256 bytes without control characters".to_owned(),
        ));
    }
    if job.payload.len() > 64 << 10 {
        return Err(SchedulerError::Invalid(
            "a job payload is at most 64 KiB".to_owned(),
        ));
    }
    if job
        .every_ms
        .is_some_and(|ms| ms < crate::jobs::MIN_EVERY_MS)
    {
        return Err(SchedulerError::Invalid(
            "a repeating job runs at most every 1000 ms".to_owned(),
        ));
    }
    with_state(|s| s.data.jobs.insert((ns, job.key.clone()), job.clone()));
    Ok(())
}

pub(crate) fn job_cancel(namespace: &Namespace, key: &str) -> Result<(), SchedulerError> {
    let ns = resolve(namespace).map_err(SchedulerError::AccessDenied)?;
    with_state(|s| s.data.jobs.remove(&(ns, key.to_owned())));
    Ok(())
}

/// The native stand-in of sealing: the namespace, then the bytes reversed.
/// Not encryption; it only keeps the binding rule of the host.
pub(crate) fn secret_seal(namespace: &Namespace, plaintext: &[u8]) -> Result<Vec<u8>, String> {
    let ns = resolve(namespace)?;
    let mut sealed = format!("sealed:{ns}:").into_bytes();
    sealed.extend(plaintext.iter().rev());
    Ok(sealed)
}

pub(crate) fn secret_open(namespace: &Namespace, sealed: &[u8]) -> Result<Vec<u8>, String> {
    let prefix = format!("sealed:{}:", resolve(namespace)?).into_bytes();
    match sealed.strip_prefix(prefix.as_slice()) {
        Some(body) => Ok(body.iter().rev().copied().collect()),
        None => Err("not a value sealed for this plugin and namespace".to_owned()),
    }
}

pub(crate) fn smtp_send(
    server: &smtp::SmtpServer,
    message: &smtp::Message,
) -> Result<smtp::Sent, smtp::SmtpError> {
    match with_state(|s| s.smtp.clone()) {
        Some(mock) => mock(server, message),
        None => Err(smtp::SmtpError::ConnectionFailed(
            "a native build has no smtp: install a mock with testing::mock_smtp".to_owned(),
        )),
    }
}

pub(crate) fn runner_run(
    owner: &runner::Owner,
    command: &runner::Command,
) -> Result<runner::Outcome, runner::RunnerError> {
    match with_state(|s| s.runner.clone()) {
        Some(mock) => mock(owner, command),
        None => Err(runner::RunnerError::Invalid(
            "a native build runs no commands: install a mock with testing::mock_runner".to_owned(),
        )),
    }
}

pub(crate) fn platform_logs_read(
    _owner: &crate::platform_logs::Owner,
    _sources: &[crate::platform_logs::Source],
    _cursor: &str,
    _limit: u32,
) -> Result<crate::platform_logs::Page, crate::platform_logs::LogsError> {
    Err(crate::platform_logs::LogsError::Unavailable(
        "a native build has no platform logs".to_owned(),
    ))
}

pub(crate) fn tcp_send(
    _destination: &crate::tcp::Destination,
    _payload: &[u8],
) -> Result<u64, crate::tcp::TcpError> {
    Err(crate::tcp::TcpError::ConnectionFailed(
        "a native build opens no connections".to_owned(),
    ))
}

pub(crate) fn app_env_get(
    _owner: &crate::app_env::Owner,
    id: &str,
) -> Result<crate::app_env::App, crate::app_env::AppEnvError> {
    Err(crate::app_env::AppEnvError::NotFound(format!(
        "app {id} does not exist: a native build has no apps"
    )))
}

pub(crate) fn app_env_set(
    _owner: &crate::app_env::Owner,
    id: &str,
    _revision: u64,
    _source: &str,
    _vars: &[(String, String)],
) -> Result<crate::app_env::Outcome, crate::app_env::AppEnvError> {
    Err(crate::app_env::AppEnvError::NotFound(format!(
        "app {id} does not exist: a native build has no apps"
    )))
}
