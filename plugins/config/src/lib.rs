//! Plateau's config and secrets plugin: per project, environments
//! (`development`, `preview`, `production` and custom ones) of versioned
//! key/value config and secrets, in the shape of Doppler and Infisical.
//!
//! - Secrets are sealed by the host (`secrets`, bound to this plugin and
//!   the organisation): the plugin never holds a key. Lists never show a
//!   secret's value; reading one needs `config:secrets`, and every read
//!   is an audited `config.secret.read` event.
//! - A value may refer to other keys of its environment as `${KEY}`,
//!   resolved at read time; a change that leaves a reference to a missing
//!   key or a cycle is refused with 400 naming the key.
//! - Every change is a new version holding all keys; rollback writes an
//!   old version's keys as a new one.
//! - Apps linked to an environment get its resolved values as variables
//!   through the host's `app-env` capability (WIT 0.5.2), and a change
//!   redeploys them as a change of an app's own variables does.
//!
//! Layers: [`input`] (bodies, names, limits) and [`refs`] (references,
//! cycles) are pure; [`record`] the stored shapes; [`store`] the one way an
//! environment changes; [`resolve`] opens and expands values; [`api`]
//! (projects, environments), [`keys`], [`versions`] and [`links`] the
//! routes, wired in [`plugin`].
//!
//! **Architecture Invariant:** an environment changes only by a new
//! version written with a compare-and-swap on its record, committed with
//! its event and a sync job for each linked app: a change the API
//! acknowledged reaches every linked app (at least once, the newest
//! winning).

pub mod api;
pub mod input;
pub mod keys;
pub mod links;
pub mod plugin;
pub mod record;
pub mod refs;
pub mod resolve;
pub mod store;
pub mod versions;
pub mod views;

pub use plugin::ConfigPlugin;

plateau_sdk::export_plugin!(ConfigPlugin);
