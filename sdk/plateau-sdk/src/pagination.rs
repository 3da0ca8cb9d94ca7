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

use plateau_contract::PageQuery;

use crate::error::ApiError;
use crate::host::cursors;
use crate::http::Response;
use crate::kv::{Bucket, Entry, KvError};

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
