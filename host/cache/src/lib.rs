//! Plateau's managed Redis 7 caches (spec sections 1 and 8).
//!
//! The API (`api`) and the service (`service`) speak to a
//! [`CacheProvider`]: it brings clusters up, changes their settings,
//! rotates their password, snapshots and tears them down. The local
//! provider (`local`) runs real `redis-server` and sentinel processes on
//! this host; another engine (a Redis operator on Kubernetes) can stand
//! behind the same trait. The store keeps what the provider returns
//! ([`Placement`]) as opaque JSON, and the passwords sealed.

pub mod api;
pub mod client;
pub mod local;
pub mod reconciler;
pub mod service;
pub mod snapshots;
pub mod spec;

use async_trait::async_trait;
use bytes::Bytes;

pub use service::{CacheService, ServiceConfig};
pub use spec::{
    ClusterSpec, Credentials, EvictionPolicy, LogLine, Metrics, Persistence, PlacedNode, Placement,
};

/// Everything that can go wrong below the API.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("{0}")]
    Store(#[from] plateau_store::Error),
    #[error("snapshot store: {0}")]
    Object(#[from] object_store::Error),
    #[error("sealed password: {0}")]
    Seal(String),
    /// A process did not come up or did not answer in time.
    #[error("{0}")]
    Unavailable(String),
    /// The cluster is not placed yet (being created) or no more.
    #[error("{0}")]
    NotPlaced(String),
    #[error("{0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where clusters run, in the shape Kubernetes operators expose: a spec
/// applied ([`CacheProvider::apply`]), what runs observed
/// ([`CacheProvider::observe`]), a cluster deleted
/// ([`CacheProvider::delete`]), and the operations of Redis itself. The
/// host's reconciler (plateau-kernel) calls the first three; every call
/// names the cluster by the [`Placement`] `apply` made, which the store
/// keeps.
#[async_trait]
pub trait CacheProvider: Send + Sync + 'static {
    /// Brings the cluster to `spec` and its users to `credentials`.
    /// Without a `placement` it creates the cluster (a leader,
    /// `spec.replicas` replicas and the sentinels, the leader first loading
    /// `seed`, an RDB, for a restore), removing first whatever an
    /// interrupted earlier try left for `spec.id`, and removing what it
    /// made if it fails; with one, it applies changed settings (memory,
    /// eviction, persistence, the number of replicas). Accepting
    /// connections when it returns; the placement after.
    async fn apply(
        &self,
        spec: &ClusterSpec,
        placement: Option<&Placement>,
        credentials: &Credentials,
        seed: Option<Bytes>,
    ) -> Result<Placement>;

    /// One round of supervision: adopts processes that run, restarts those
    /// that do not (a dead leader only once the sentinels have promoted a
    /// replica). Whether every process answers.
    async fn observe(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<bool>;

    /// Stops every process of cluster `id` and removes its data: those of
    /// `placement`, or without one whatever a create left.
    async fn delete(&self, id: &str, placement: Option<&Placement>) -> Result<()>;

    /// Gives the customer's user the password in `credentials` everywhere.
    async fn set_password(&self, placement: &Placement, credentials: &Credentials) -> Result<()>;

    /// The leader's address now (`host:port`), as the sentinels see it.
    async fn leader(&self, placement: &Placement, credentials: &Credentials) -> Result<String>;

    /// Figures from the leader's INFO.
    async fn metrics(&self, placement: &Placement, credentials: &Credentials) -> Result<Metrics>;

    /// The last `lines` lines of each process's log.
    async fn logs(&self, placement: &Placement, lines: usize) -> Result<Vec<LogLine>>;

    /// A point-in-time RDB of the data set.
    async fn snapshot(&self, placement: &Placement, credentials: &Credentials) -> Result<Bytes>;

    /// Replaces the whole data set of a running cluster with the RDB
    /// `rdb` (a restore into an existing cache): the leader is emptied and
    /// given every key of the RDB, which the replicas follow.
    async fn restore(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        rdb: Bytes,
    ) -> Result<()>;

    /// The PEM certificate of the cluster's CA, for clients to trust.
    fn ca_certificate(&self, placement: &Placement) -> Result<Option<String>>;
}
