//! The SDK's native tests, one binary: the pure parts (errors, routing,
//! JSON, query strings, pagination) and the in-memory host stand-ins.

mod error;
mod host;
mod json;
mod kv;
mod pagination;
mod query;
mod router;
