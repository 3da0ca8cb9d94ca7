//! What a Plateau server and its plugins agree on, written once: the
//! records that cross the WIT line (requests, answers, self-descriptions,
//! ticks, events, jobs, mail), and the rules both sides enforce (the id
//! scheme, the route grammar and matcher, the checks of a self-description, the error codes
//! and problem body, JSON bodies and pagination, the key-value limits, the
//! limits and reserved headers of mail).
//!
//! The host (`plateau-plugin-runtime`, `plateau-plugin-host`, `plateau-api`)
//! and every guest (through `plateau-sdk`, which re-exports what plugin
//! authors use) link this crate, so a rule changes in one place. It is pure
//! on purpose: serde and serde_json, no I/O, and it builds for the host and
//! for `wasm32-wasip2`.
//!
//! **Invariant**: nothing here knows about wasmtime, WIT bindings, axum or
//! SQL. Each side converts between these records and its own bindings.

pub mod api_schema;
pub mod delivery;
pub mod description;
pub mod edge;
pub mod error;
pub mod event;
pub mod http;
pub mod id;
pub mod json;
pub mod kv;
pub mod mail;
pub mod namespace;
pub mod page;
pub mod problem;
pub mod query;
pub mod route;

mod checks;

pub use delivery::{Event, Job, Tick};
pub use description::{Access, Capability, Description, Route, Schedule, ScopeInfo};
pub use error::{
    ApiError, ErrorCode, FieldError, PROBLEM_CONTENT_TYPE, PROBLEM_TYPE_BASE, Problem,
    status_title, validation_detail,
};
pub use event::NewEvent;
pub use http::{Caller, Method, Request, Response};
pub use json::{
    Validator, is_json_content_type, json_body, parse_json, parse_json_borrowed, read_json,
};
pub use namespace::Namespace;
pub use page::{DEFAULT_LIMIT, MAX_LIMIT, PageQuery, parse_limit};
pub use query::{Query, percent_decode, percent_encode};
