//! Inside a cluster (spec sections 4.5 and 4.6): roles, extensions, the
//! SQL console and the data API. Everything here speaks SQL over a
//! connection the provider gave, so it works on any provider. Identifiers
//! from requests are checked against a grammar or the catalog and quoted;
//! values are always bound as parameters.

pub mod console;
pub mod data;
pub mod dump;
pub mod extensions;
pub mod ops;
pub mod publications;
pub mod quota;
pub mod roles;
pub mod script;
pub mod statement;
pub mod subscriptions;

use crate::Error;

/// Whether `name` is a plain lowercase identifier PostgreSQL keeps as
/// written: a letter or `_`, then letters, digits or `_`, at most 63 bytes.
pub fn is_plain_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'_'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'))
        && name.len() <= 63
}

/// `"name"`, with inner quotes doubled.
pub fn quote_ident(name: &str) -> String {
    crate::local::quote_ident(name)
}

/// A PostgreSQL error of the customer's statement, shown to them with its
/// SQLSTATE; anything else stays an internal error.
pub fn query_error(e: sqlx::Error) -> Error {
    match e {
        sqlx::Error::Database(db) => Error::Query(match db.code() {
            Some(code) => format!("{} (SQLSTATE {code})", db.message()),
            None => db.message().to_owned(),
        }),
        other => Error::Sql(other),
    }
}
