//! Plateau's OpenTelemetry plugin (`/otel`): an OTLP/HTTP receiver for
//! traces, metrics and logs (protobuf or JSON, gzip) authenticated by
//! per-project ingest tokens, storage with a retention per plan, and
//! queries of traces, span trees, metric series and logs.
//!
//! Layers:
//! - the pure core: [`record`] (stored shapes and keys, retention days),
//!   [`convert`] (OTLP messages to records), [`wire`] (encodings, gzip,
//!   OTLP's answers and errors);
//! - [`store`] (one request's writes under a budget), [`ingest`] (the
//!   receiver), [`tokens`], [`query`], [`traces`] and [`signals`] (the
//!   queries), [`retention`] (the hourly deletion), wired in [`plugin`].
//!
//! **Architecture Invariants:** an OTLP request's records are committed
//! together with its answer: a 200 means every record not counted in the
//! partial success is stored, an error means none is. Every key of an
//! organisation's data is under its project and the day it arrived, so a
//! query never reads another project's data, and retention deletes whole
//! days. Ingest tokens are stored as SHA-256 hashes only.

pub mod convert;
pub mod ingest;
pub mod plugin;
pub mod query;
pub mod record;
pub mod retention;
pub mod signals;
pub mod store;
pub mod tokens;
pub mod traces;
pub mod views;
pub mod wire;

pub use plugin::OtelPlugin;

plateau_sdk::export_plugin!(OtelPlugin);
