//! The managed-service kernel that caches and databases plug into (issue
//! 29): per-resource locks (`lock`), statuses as types (`status`), desired
//! state driven by a reconciler per resource (`reconcile`) under one
//! supervisor (`supervisor`), and the sealing of their passwords
//! (`sealed`).

pub mod lock;
pub mod reconcile;
pub mod sealed;
pub mod status;
pub mod supervisor;

pub use reconcile::{Failure, Resources};
pub use status::Status;
pub use supervisor::Supervisor;
