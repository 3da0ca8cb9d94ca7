//! Lists that page exactly like the host's core lists.
//!
//! Pagination is opt-in: `limit` (1 to 200, default 50) turns it on and
//! `cursor` continues from a previous `nextCursor` (a cursor alone pages
//! with the default limit). Every list answers the same envelope, paginated
//! or not: `{"items": [...], "nextCursor": "..." | null, "total": n}`.
//!
//! Cursors are never made up by the plugin: [`paginate_kv`] passes on the
//! host's key-value cursors and [`paginate_sorted`] asks the host's
//! `cursors` interface to sign a position bound to a list name, so a client
//! cannot edit one to read past its bounds.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::host::cursors;
use crate::http::{Request, Response};
use crate::kv::{Bucket, Entry, KvError};
use crate::query::Query;

/// The page size when `limit` is absent.
pub const DEFAULT_LIMIT: u32 = 50;
/// The largest accepted `limit`.
pub const MAX_LIMIT: u32 = 200;

/// The pagination parameters of a list request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageQuery {
    /// As sent, already checked to be 1 to 200.
    pub limit: Option<u32>,
    /// As sent; decoded by the list helper.
    pub cursor: Option<String>,
}

impl PageQuery {
    /// Reads `limit` and `cursor`: 400 `invalid_limit` for a limit that is
    /// not an integer from 1 to 200. An empty `cursor=` is an invalid cursor.
    pub fn parse(query: &Query) -> Result<Self, ApiError> {
        let limit = match query.get("limit") {
            None => None,
            Some(raw) => match raw.parse::<u32>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => Some(n),
                _ => return Err(ApiError::invalid_limit()),
            },
        };
        let cursor = match query.get("cursor") {
            Some("") => return Err(ApiError::invalid_cursor()),
            other => other.map(str::to_owned),
        };
        Ok(PageQuery { limit, cursor })
    }

    /// A first page of `limit` items, for tests.
    pub fn first(limit: u32) -> Self {
        PageQuery {
            limit: Some(limit),
            cursor: None,
        }
    }

    /// Whether the client asked for pages.
    pub fn is_paginated(&self) -> bool {
        self.limit.is_some() || self.cursor.is_some()
    }

    /// The page size in force when paginated.
    pub fn page_size(&self) -> u32 {
        self.limit.unwrap_or(DEFAULT_LIMIT)
    }
}

impl Request {
    /// [`PageQuery::parse`] of this request's query string.
    pub fn page_query(&self) -> Result<PageQuery, ApiError> {
        PageQuery::parse(&self.query())
    }
}

/// The list envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Pass it as `cursor` for the next page; null on the last page and
    /// whenever the list is not paginated.
    pub next_cursor: Option<String>,
    /// The number of items in the whole list.
    pub total: u64,
}

impl<T> Page<T> {
    /// Every item, unpaginated.
    pub fn all(items: Vec<T>) -> Self {
        let total = items.len() as u64;
        Page {
            items,
            next_cursor: None,
            total,
        }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
            total: self.total,
        }
    }
}

impl<T: Serialize> Page<T> {
    /// 200 with the envelope as JSON.
    pub fn into_response(self) -> Response {
        Response::ok(&self)
    }
}

/// Pages over the JSON values stored under `prefix`, in key order.
///
/// `total` is the number of keys under the prefix; the cursor is the host's
/// key-value cursor, so a cursor of another prefix is `invalid_cursor`.
pub fn paginate_kv<T: DeserializeOwned>(
    bucket: &Bucket,
    prefix: &str,
    query: &PageQuery,
) -> Result<Page<T>, ApiError> {
    paginate_kv_with(bucket, prefix, query, |entry| Ok(entry.json()?))
}

/// [`paginate_kv`] with a custom conversion of each entry (to add the key,
/// or to project a stored record onto its public shape).
pub fn paginate_kv_with<T>(
    bucket: &Bucket,
    prefix: &str,
    query: &PageQuery,
    mut item: impl FnMut(Entry) -> Result<T, ApiError>,
) -> Result<Page<T>, ApiError> {
    let total = bucket.count(prefix)?;
    if !query.is_paginated() {
        let items = bucket
            .list_all(prefix)?
            .into_iter()
            .map(&mut item)
            .collect::<Result<_, _>>()?;
        return Ok(Page {
            items,
            next_cursor: None,
            total,
        });
    }
    let page = bucket
        .list(prefix, query.cursor.as_deref(), query.page_size())
        .map_err(|e| match e {
            KvError::InvalidCursor => ApiError::invalid_cursor(),
            other => other.into(),
        })?;
    let items = page
        .entries
        .into_iter()
        .map(item)
        .collect::<Result<_, _>>()?;
    Ok(Page {
        items,
        next_cursor: page.next_cursor,
        total,
    })
}

/// Pages over items held in memory in a custom order (keyset pagination).
///
/// `key` gives each item a unique, ordered position such as
/// `(std::cmp::Reverse(created_at), id)` for newest first; items are sorted
/// by it. The cursor is the last item's key, signed by the host for `list`
/// (use one list name per ordering), and the next page starts after it, so
/// items added or removed between pages neither repeat nor shift the page.
pub fn paginate_sorted<T, K>(
    list: &str,
    mut items: Vec<T>,
    query: &PageQuery,
    key: impl Fn(&T) -> K,
) -> Result<Page<T>, ApiError>
where
    K: Ord + Serialize + DeserializeOwned,
{
    let total = items.len() as u64;
    items.sort_by_key(|item| key(item));
    if !query.is_paginated() {
        return Ok(Page {
            items,
            next_cursor: None,
            total,
        });
    }
    let start = match &query.cursor {
        None => 0,
        Some(cursor) => {
            let position = cursors::decode(list, cursor)?;
            let after: K =
                serde_json::from_str(&position).map_err(|_| ApiError::invalid_cursor())?;
            items.partition_point(|item| key(item) <= after)
        }
    };
    let size = query.page_size() as usize;
    let end = start.saturating_add(size).min(items.len());
    let more = end < items.len();
    let page: Vec<T> = items.drain(start..end).collect();
    let next_cursor = match page.last() {
        Some(last) if more => {
            let position = serde_json::to_string(&key(last)).map_err(|e| {
                ApiError::internal(format!("list position does not serialize: {e}"))
            })?;
            Some(cursors::encode(list, &position))
        }
        _ => None,
    };
    Ok(Page {
        items: page,
        next_cursor,
        total,
    })
}
