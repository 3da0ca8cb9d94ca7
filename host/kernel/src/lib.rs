//! The managed-service kernel: what every service of the host shares to
//! keep its resources in step with what users asked for.
//!
//! Two processes act on one host's resources: the API process (`plateau
//! serve`, the control plane) records changes and makes the ones users
//! wait for, and the agent (`plateau agent`, the data plane) supervises
//! what runs, adopts it after a restart and fails it over. They exclude
//! each other per resource with [`lock::ResourceLocks`]: a change to one
//! cluster never waits for another's.

pub mod lock;

pub use lock::{ResourceGuard, ResourceLocks};
