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
    #[error("{0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where clusters run. Every call names the cluster by its [`Placement`],
/// which the provider made in [`CacheProvider::create`] and the store keeps.
#[async_trait]
pub trait CacheProvider: Send + Sync + 'static {
    /// Brings up a leader, `spec.replicas` replicas and the sentinels,
    /// accepting connections when it returns. `seed` is an RDB the leader
    /// loads first (a restore).
    async fn create(
        &self,
        spec: &ClusterSpec,
        credentials: &Credentials,
        seed: Option<Bytes>,
    ) -> Result<Placement>;

    /// Applies changed settings (memory, eviction, persistence, the number
    /// of replicas); the placement after the change.
    async fn update(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<Placement>;

    /// Gives the customer's user the password in `credentials` everywhere.
    async fn set_password(&self, placement: &Placement, credentials: &Credentials) -> Result<()>;

    /// Stops every process of the cluster and removes its data.
    async fn destroy(&self, placement: &Placement) -> Result<()>;

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

    /// One round of supervision: adopts processes that run, restarts those
    /// that do not (a dead leader only once the sentinels have promoted a
    /// replica). Whether every process answers.
    async fn supervise(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<bool>;
}
