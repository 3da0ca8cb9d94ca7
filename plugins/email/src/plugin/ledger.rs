//! The delivery ledger: one entry per message, newest first, with its
//! status (`queued`, `deferred`, `sent`, `failed`), attempts, the SMTP
//! server's last reply and timestamps. `GET /email/messages` pages like the
//! core's lists (`limit`, `cursor`, `{items, nextCursor, total}`) and
//! filters by `status` and creation time (`since` inclusive, `until`
//! exclusive); the filters select key prefixes (see [`crate::keys`]), so a
//! page costs the same whatever the size of the ledger.

use plateau_sdk::{ApiError, Bucket, Page, Params, Request, Response, Validator, cursors};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::keys;
use crate::time::{id_time, parse_bound};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for its first attempt.
    Queued,
    /// A temporary failure; another attempt is scheduled (`nextAttemptAt`).
    Deferred,
    /// The server accepted it.
    Sent,
    /// A permanent failure, or temporary ones until the attempts ran out.
    Failed,
}

impl Status {
    pub const ALL: [Status; 4] = [
        Status::Queued,
        Status::Deferred,
        Status::Sent,
        Status::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Deferred => "deferred",
            Status::Sent => "sent",
            Status::Failed => "failed",
        }
    }

    pub fn is_final(self) -> bool {
        matches!(self, Status::Sent | Status::Failed)
    }
}

/// Who asked for the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// `POST /email/send`.
    Api,
    /// An alert event of another plugin (`eventId`, `eventType`).
    Event,
}

/// One ledger entry, as stored and as answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub id: String,
    pub status: Status,
    pub source: Source,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
    pub from: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    /// Bcc recipients are never listed, only counted.
    pub bcc_count: usize,
    /// Recipients left out because they are on the suppression list.
    pub suppressed: Vec<String>,
    pub subject: String,
    pub attachments: usize,
    /// Attempts made so far.
    pub attempts: u32,
    /// The server's last reply: its code and text.
    pub smtp_code: Option<u16>,
    pub smtp_message: Option<String>,
    /// Why the last attempt failed when there was no SMTP reply
    /// (connection, TLS, timeout, configuration).
    pub error: Option<String>,
    /// The `Message-ID` header of the sent message.
    pub message_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub sent_at: Option<String>,
    pub next_attempt_at: Option<String>,
}

impl Entry {
    /// When the entry was created, from its id.
    pub fn created_ms(&self) -> u64 {
        id_time(&self.id).unwrap_or(0)
    }
}

/// Stores a new entry and its status index.
pub fn insert(bucket: &Bucket, entry: &Entry) -> Result<(), ApiError> {
    let created = entry.created_ms();
    bucket.set(&keys::entry(created, &entry.id), entry)?;
    bucket.set(
        &keys::status_index(entry.status.as_str(), created, &entry.id),
        entry,
    )?;
    Ok(())
}

/// Stores a changed entry, moving its status index from `previous`.
pub fn update(bucket: &Bucket, previous: Status, entry: &Entry) -> Result<(), ApiError> {
    let created = entry.created_ms();
    if previous != entry.status {
        bucket.delete(&keys::status_index(previous.as_str(), created, &entry.id))?;
    }
    insert(bucket, entry)
}

/// The entry of message `id`, if there is one.
pub fn find(bucket: &Bucket, id: &str) -> Result<Option<Entry>, ApiError> {
    let Some(created) = id_time(id) else {
        return Ok(None);
    };
    Ok(bucket.get(&keys::entry(created, id))?)
}

/// `GET /email/messages/{id}`.
pub fn get(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let id = &params["id"];
    let entry = find(&Bucket::caller()?, id)?.ok_or_else(|| {
        ApiError::not_found(format!(
            "message {id} does not exist: check the id returned by POST /email/send"
        ))
    })?;
    Ok(Response::ok(&entry))
}

/// The filters of the list, validated.
struct Filter {
    status: Option<Status>,
    since: Option<u64>,
    until: Option<u64>,
    /// The list name the cursor is bound to: one per filter combination.
    list: String,
}

impl Filter {
    fn parse(req: &Request) -> Result<Filter, ApiError> {
        let query = req.query();
        let mut v = Validator::new();
        let status = query.get("status").and_then(|raw| {
            let found = Status::ALL.into_iter().find(|s| s.as_str() == raw);
            v.check(
                found.is_some(),
                "status",
                "must be queued, deferred, sent or failed",
            );
            found
        });
        let mut bound = |name: &str| {
            query.get(name).and_then(|raw| {
                let parsed = parse_bound(raw);
                v.check(
                    parsed.is_some(),
                    name,
                    "must be an RFC 3339 timestamp or a YYYY-MM-DD date",
                );
                parsed
            })
        };
        let (since, until) = (bound("since"), bound("until"));
        if let (Some(since), Some(until)) = (since, until) {
            v.check(until > since, "until", "must be after since");
        }
        v.finish()?;
        let list = format!(
            "messages|{}|{}|{}",
            status.map_or("", Status::as_str),
            since.map_or_else(String::new, |t| t.to_string()),
            until.map_or_else(String::new, |t| t.to_string()),
        );
        Ok(Filter {
            status,
            since,
            until,
            list,
        })
    }

    /// The key prefixes holding the filtered list, newest first.
    fn prefixes(&self) -> Vec<String> {
        let root = keys::ledger_root(self.status.map(Status::as_str));
        keys::time_prefixes(self.since, self.until)
            .into_iter()
            .map(|p| format!("{root}{p}"))
            .collect()
    }
}

/// Where a page starts: the index of a prefix and the host's key-value
/// cursor inside it.
#[derive(Debug, Serialize, Deserialize)]
struct Position {
    p: usize,
    c: Option<String>,
}

impl Position {
    /// The start of prefix `p`.
    fn start(p: usize) -> Position {
        Position { p, c: None }
    }
}

/// `GET /email/messages`: the ledger, newest first.
pub fn list(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let filter = Filter::parse(req)?;
    let query = req.page_query()?;
    let bucket = Bucket::caller()?;
    let prefixes = filter.prefixes();
    let counts: Vec<u64> = prefixes
        .iter()
        .map(|p| bucket.count(p))
        .collect::<Result<_, _>>()?;
    let total = counts.iter().sum();
    if !query.is_paginated() {
        let mut items = Vec::new();
        for (prefix, count) in prefixes.iter().zip(&counts) {
            if *count > 0 {
                for entry in bucket.list_all(prefix)? {
                    items.push(entry.json::<Entry>()?);
                }
            }
        }
        return Ok(Page::all(items).into_response());
    }
    let mut at = match &query.cursor {
        None => Position::start(0),
        Some(cursor) => serde_json::from_str(&cursors::decode(&filter.list, cursor)?)
            .map_err(|_| ApiError::invalid_cursor())?,
    };
    let size = query.page_size() as usize;
    let mut items: Vec<Entry> = Vec::with_capacity(size);
    while at.p < prefixes.len() && items.len() < size {
        if counts[at.p] == 0 {
            at = Position::start(at.p + 1);
            continue;
        }
        let want = u32::try_from(size - items.len()).unwrap_or(u32::MAX);
        let page = bucket.list(&prefixes[at.p], at.c.as_deref(), want)?;
        for entry in &page.entries {
            items.push(entry.json()?);
        }
        at = match page.next_cursor {
            Some(next) => Position {
                p: at.p,
                c: Some(next),
            },
            None => Position::start(at.p + 1),
        };
    }
    // The host gives a cursor whenever a page is full; look one entry
    // ahead so the last page carries none, as on core lists.
    if let Some(cursor) = &at.c
        && bucket
            .list(&prefixes[at.p], Some(cursor), 1)?
            .entries
            .is_empty()
    {
        at = Position::start(at.p + 1);
    }
    while at.c.is_none() && at.p < prefixes.len() && counts[at.p] == 0 {
        at.p += 1;
    }
    let next_cursor = if at.p < prefixes.len() {
        let position = serde_json::to_string(&at)
            .map_err(|e| ApiError::internal(format!("list position does not serialize: {e}")))?;
        Some(cursors::encode(&filter.list, &position))
    } else {
        None
    };
    Ok(Page {
        items,
        next_cursor,
        total,
    }
    .into_response())
}
