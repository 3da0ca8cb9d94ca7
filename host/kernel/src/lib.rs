//! The managed-service kernel: what every service of the host shares to
//! keep its resources in step with what users asked for.
//!
//! Two processes act on one host's resources: the API process (`plateau
//! serve`, the control plane) records what users ask for (desired state)
//! and answers at once, and the agent (`plateau agent`, the data plane)
//! runs the [`Supervisor`], which reconciles each resource toward it
//! ([`reconcile`]), supervises what runs, adopts it after a restart and
//! fails it over. They exclude each other per resource with
//! [`lock::ResourceLocks`]: a change to one cluster never waits for
//! another's.
//!
//! - `lock`: per-resource locks across processes;
//! - `status`: [`Status`], statuses as a type;
//! - `reconcile`: the [`Resources`] a service gives the kernel (its
//!   provider's apply, observe, delete) and the state machine over them,
//!   the one place that records changes of status and their events;
//! - `supervisor`: the loop that runs each resource's reconcile in a task
//!   of its own under its lock;
//! - `ports`: [`Ports`], the ports of a service's processes, claimed
//!   in files below the ephemeral range;
//! - `sealed`: the sealing of the services' passwords.

pub mod lock;
pub mod ports;
pub mod reconcile;
pub mod sealed;
pub mod status;
pub mod supervisor;

pub use lock::{ResourceGuard, ResourceLocks};
pub use ports::Ports;
pub use reconcile::{Failure, Resources};
pub use status::Status;
pub use supervisor::Supervisor;
