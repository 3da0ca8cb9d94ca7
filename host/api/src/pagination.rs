//! Cursor pagination, the one mechanism behind every list endpoint
//! (spec section 1.2).
//!
//! Pagination is opt-in: `limit` (1 to 200, default 50 when `cursor` alone
//! is given) turns it on, and `cursor` continues after the last item of a
//! previous page. Every list answers the same envelope,
//! `{"items": [...], "nextCursor": "..." | null, "total": n}`; without
//! pagination `items` holds every item and `nextCursor` is null.
//!
//! Cursors are keyset positions (the last item's sort key), so inserts and
//! deletes elsewhere never make a page skip or repeat an item. They are
//! signed with HMAC-SHA256 under a key stored in the database (shared by
//! every host) and bound to the list, the organisation and the filters:
//! an edited cursor, or one from another list, organisation or filter, is
//! refused with 400.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use plateau_store::query::{Keyset, Listed};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use utoipa::ToSchema;

use crate::error::ApiError;

pub use plateau_contract::{DEFAULT_LIMIT, MAX_LIMIT};

/// The list envelope.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Pass as `cursor` to get the next page; null on the last page and
    /// when pagination is off.
    pub next_cursor: Option<String>,
    /// Items matching the filters, over all pages.
    pub total: i64,
}

/// `limit` and `cursor` as they came in the query string.
#[derive(Clone, Debug, Default)]
pub struct PageQuery {
    pub limit: Option<String>,
    pub cursor: Option<String>,
}

impl PageQuery {
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut q = PageQuery::default();
        for (k, v) in pairs {
            match k {
                "limit" => q.limit = Some(v.to_owned()),
                "cursor" => q.cursor = Some(v.to_owned()),
                _ => {}
            }
        }
        q
    }
}

/// Signs and checks cursors.
#[derive(Clone)]
pub struct CursorCodec {
    key: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct Position {
    /// List name.
    l: String,
    /// Organisation (or other owner) of the list.
    o: String,
    /// Fingerprint of the filters.
    f: String,
    /// Sort key of the last item returned.
    k: String,
}

const MAC_LEN: usize = 16;

impl CursorCodec {
    pub fn new(key: Vec<u8>) -> Self {
        CursorCodec { key }
    }

    fn mac(&self, payload: &[u8]) -> Vec<u8> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("hmac takes any key size");
        mac.update(payload);
        mac.finalize().into_bytes()[..MAC_LEN].to_vec()
    }

    /// Signs an arbitrary position for list `list` of owner `owner`.
    pub fn encode(&self, list: &str, owner: &str, filters: &str, key: &str) -> String {
        let payload = serde_json::to_vec(&Position {
            l: list.to_owned(),
            o: owner.to_owned(),
            f: filters.to_owned(),
            k: key.to_owned(),
        })
        .unwrap_or_default();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(self.mac(&payload))
        )
    }

    /// The position in a cursor, if it is intact and was issued for this
    /// list, owner and filters.
    pub fn decode(&self, cursor: &str, list: &str, owner: &str, filters: &str) -> Option<String> {
        let (payload, mac) = cursor.split_once('.')?;
        let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let mac = URL_SAFE_NO_PAD.decode(mac).ok()?;
        let expected = self.mac(&payload);
        if !bool::from(subtle::ConstantTimeEq::ct_eq(
            expected.as_slice(),
            mac.as_slice(),
        )) {
            return None;
        }
        let position: Position = serde_json::from_slice(&payload).ok()?;
        (position.l == list && position.o == owner && position.f == filters).then_some(position.k)
    }
}

/// One list request's paging: built from the query, it gives the store its
/// [`Keyset`] and turns the rows into the envelope.
pub struct Pager<'a> {
    codec: &'a CursorCodec,
    list: &'static str,
    owner: String,
    filters: String,
    keyset: Keyset,
}

impl<'a> Pager<'a> {
    /// `filters` is a canonical string of the list's filters (for example
    /// the query string without `limit` and `cursor`), so a cursor only
    /// continues the listing it came from.
    pub fn new(
        codec: &'a CursorCodec,
        query: &PageQuery,
        list: &'static str,
        owner: &str,
        filters: String,
    ) -> Result<Self, ApiError> {
        let limit = match (&query.limit, &query.cursor) {
            (Some(raw), _) => Some(plateau_contract::parse_limit(raw)?),
            (None, Some(_)) => Some(DEFAULT_LIMIT),
            (None, None) => None,
        };
        let after = match &query.cursor {
            Some(cursor) => Some(codec.decode(cursor, list, owner, &filters).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_cursor",
                    "cursor is not one this list issued: pass nextCursor from the previous page unchanged, with the same filters",
                )
            })?),
            None => None,
        };
        Ok(Pager {
            codec,
            list,
            owner: owner.to_owned(),
            filters,
            keyset: Keyset { after, limit },
        })
    }

    pub fn keyset(&self) -> &Keyset {
        &self.keyset
    }

    /// The envelope for `listed`, whose rows the store fetched with
    /// [`Pager::keyset`] (one more than the limit when another page exists).
    pub fn finish<R, T>(
        self,
        listed: Listed<R>,
        sort_key: impl Fn(&R) -> String,
        to_item: impl FnMut(R) -> T,
    ) -> Page<T> {
        let mut rows = listed.rows;
        let mut next_cursor = None;
        if let Some(limit) = self.keyset.limit
            && rows.len() > limit as usize
        {
            rows.truncate(limit as usize);
            next_cursor = rows.last().map(|last| {
                self.codec
                    .encode(self.list, &self.owner, &self.filters, &sort_key(last))
            });
        }
        Page {
            items: rows.into_iter().map(to_item).collect(),
            next_cursor,
            total: listed.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_bound_and_tamper_evident() {
        let codec = CursorCodec::new(b"k".to_vec());
        let c = codec.encode("projects", "org_a", "", "prj_1");
        assert_eq!(
            codec.decode(&c, "projects", "org_a", ""),
            Some("prj_1".to_owned())
        );
        assert_eq!(codec.decode(&c, "projects", "org_b", ""), None);
        assert_eq!(codec.decode(&c, "tokens", "org_a", ""), None);
        assert_eq!(codec.decode(&c, "projects", "org_a", "type=x"), None);
        let mut edited = c.clone();
        edited.replace_range(2..3, if &c[2..3] == "A" { "B" } else { "A" });
        assert_eq!(codec.decode(&edited, "projects", "org_a", ""), None);
        let other = CursorCodec::new(b"other".to_vec());
        assert_eq!(other.decode(&c, "projects", "org_a", ""), None);
    }
}
