//! The core endpoints, one module per area of spec section 4.

pub mod account;
pub mod admin;
pub mod admin_plans;
pub mod alarms;
pub mod anomalies;
pub mod changelog;
pub mod connect;
pub mod events;
pub mod invites;
pub mod members;
pub mod metrics;
pub mod notifications;
pub mod projects;
pub mod registry;
pub mod rewards;
pub mod spend;
pub mod tokens;
pub mod watch;

use axum::extract::Query;

use crate::pagination::PageQuery;

/// The query string as pairs, in order.
pub type Pairs = Query<Vec<(String, String)>>;

/// The value of `name` in the query, if present.
pub fn param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// `limit` and `cursor`, and a canonical string of the other parameters
/// that binds a cursor to its filters.
pub fn page_and_filters(pairs: &[(String, String)]) -> (PageQuery, String) {
    let page = PageQuery::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut filters: Vec<String> = pairs
        .iter()
        .filter(|(k, _)| k != "limit" && k != "cursor")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    filters.sort();
    (page, filters.join("&"))
}
