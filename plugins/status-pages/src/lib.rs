//! Plateau's status pages plugin: a public status page per organisation,
//! as Atlassian Statuspage and Instatus offer, as a sandboxed component.
//!
//! Layers:
//! - the pure core: [`uptime`] (time in each status cut into days, the
//!   90-day bars), [`render`] (the page's HTML) and [`feed`]
//!   (`summary.json`, `status.json`, Atom);
//! - the plugin layer, through `plateau-sdk` only: [`plugin`] (the
//!   description and routes), [`page`], [`components`] (also fed by the
//!   timeline events of checks and heartbeats), [`incidents`],
//!   [`subscribers`], [`notify`] (emails through the relay, signed
//!   webhooks as durable jobs) and [`public`] (the routes without a token);
//!   [`record`] and [`store`] hold what is stored.
//!
//! **Architecture Invariant:** a component's status changes only through
//! [`store::set_status`], which books the time spent in the old status
//! into its uptime days in the same write; and every write bumps the
//! page's version ([`store::touch`]), so no public answer rendered before
//! it is served after it commits.

pub mod components;
pub mod feed;
pub mod incidents;
pub mod input;
pub mod notify;
pub mod page;
pub mod plugin;
pub mod public;
pub mod record;
pub mod render;
pub mod store;
pub mod subscribers;
pub mod uptime;
pub mod views;

pub use plugin::StatusPagesPlugin;

plateau_sdk::export_plugin!(StatusPagesPlugin);
