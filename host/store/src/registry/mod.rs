//! The registry's metadata (tables `registry_*`, migration 0003): the
//! queries `plateau-registry` runs, as typed functions, so that crate knows
//! no SQL. One module per aggregate: repositories, blobs (with what garbage
//! collection asks of them), manifests and tags, uploads, and `account`,
//! what the registry reads of the core's tokens, organisations and plans.

pub mod account;
pub mod blobs;
pub mod manifests;
pub mod repositories;
pub mod uploads;
