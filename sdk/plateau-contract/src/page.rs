//! The pagination parameters every list request shares, for the host's
//! lists and plugins' alike: `limit` (1 to 200, default 50 when `cursor`
//! alone is sent) turns pagination on and `cursor` continues from a
//! previous `nextCursor`.

use crate::error::ApiError;
use crate::http::Request;
use crate::query::Query;

/// The page size when `limit` is absent.
pub const DEFAULT_LIMIT: u32 = 50;
/// The largest accepted `limit`.
pub const MAX_LIMIT: u32 = 200;

/// A `limit` as sent: 400 `invalid_limit` unless an integer from 1 to
/// [`MAX_LIMIT`].
pub fn parse_limit(raw: &str) -> Result<u32, ApiError> {
    raw.parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_LIMIT).contains(n))
        .ok_or_else(|| ApiError::invalid_limit(raw))
}

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
        let limit = query.get("limit").map(parse_limit).transpose()?;
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
