//! Plateau's plugin host: the glue between the plugin runtime, the
//! database and the HTTP API.
//!
//! - [`PluginHost`] keeps this host's plugins in step with the database
//!   (load, switch, rollback, built-ins, sync across hosts).
//! - `dispatch` serves every path under a plugin's prefix: the host finds
//!   the route, authenticates and authorizes, applies idempotency and the
//!   body limit, and only then runs plugin code.
//! - `storage` is the runtime's storage on `plugin_kv` and the event
//!   timeline; `cursors` signs plugin cursors like core cursors; `meter`
//!   records fuel per organisation; `docs` puts plugin routes in the
//!   OpenAPI document; `admin` is the operator's `/admin/plugins` API.
//! - [`JobWorker`] runs durable jobs and schedule ticks under leases;
//!   [`EventDelivery`] hands subscribed events to plugins.
//! - `oci` pulls plugins packaged as Wasm OCI artifacts from a registry.

pub mod admin;
pub mod admin_jobs;
pub mod config;
pub mod cursors;
pub mod delivery;
pub mod dispatch;
pub mod docs;
mod groups;
pub mod host;
pub mod jobs;
pub mod meter;
pub mod oci;
pub mod routes;
pub mod storage;

pub use config::PluginsConfig;
pub use delivery::EventDelivery;
pub use dispatch::Dispatcher;
pub use host::PluginHost;
pub use jobs::JobWorker;
pub use meter::Meter;
