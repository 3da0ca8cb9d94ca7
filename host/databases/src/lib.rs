//! Plateau's managed PostgreSQL (spec sections 4.5, 4.6 and 8).
//!
//! The API (`api`) and the service (`service`) speak to a
//! [`DatabaseProvider`]: it brings clusters up, supervises and tears them
//! down, and hands out admin connections. The local provider (`local`)
//! runs real PostgreSQL servers and a pgbouncer per cluster on this host;
//! another engine (CloudNativePG on Kubernetes) can stand behind the same
//! trait. What happens inside a cluster (roles, extensions, the SQL
//! console, the data API: `inside`) goes through the admin connection the
//! provider gives, so it works the same on any provider. The store keeps
//! what the provider returns ([`Placement`]) as opaque JSON, and the
//! passwords sealed.

pub mod api;
pub mod backups;
pub mod bins;
pub mod dumps;
pub mod host_session;
pub mod inside;
pub mod install;
pub mod local;
pub mod reconciler;
pub mod replication;
pub mod reset;
pub mod rotation;
pub mod scram;
pub mod service;
pub mod spec;

use async_trait::async_trait;

pub use service::{DatabaseService, ServiceConfig};
pub use spec::{BaseBackup, ClusterSpec, Credentials, Member, Placement, RestoreFrom};

/// Everything that can go wrong below the API.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("postgresql: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("{0}")]
    Store(#[from] plateau_store::Error),
    #[error("sealed password: {0}")]
    Seal(String),
    /// The binaries of a PostgreSQL version are not installed on this host.
    #[error(
        "PostgreSQL {0} is not installed on this host; choose another version or install it with `plateau install postgres`"
    )]
    VersionMissing(String),
    /// A request about the inside of a cluster that cannot be done as
    /// asked (bad identifier, extension off the allowlist, ...): a 400.
    #[error("{detail}")]
    Refused { code: &'static str, detail: String },
    /// A role, table or column the cluster does not have: a 404.
    #[error("{0}")]
    Missing(String),
    /// PostgreSQL refused the customer's statement; its message is theirs
    /// to see.
    #[error("{0}")]
    Query(String),
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
/// applied ([`DatabaseProvider::apply`]), what runs observed
/// ([`DatabaseProvider::observe`]), a cluster deleted
/// ([`DatabaseProvider::delete`]), and the operations of PostgreSQL
/// itself. The host's reconciler (plateau-kernel) calls the first three;
/// every call names the cluster by the [`Placement`] `apply` made, which
/// the store keeps.
#[async_trait]
pub trait DatabaseProvider: Send + Sync + 'static {
    /// Refuses at once a spec this provider cannot run (a PostgreSQL
    /// version it does not have), before the API records it.
    fn admit(&self, spec: &ClusterSpec) -> Result<()>;

    /// Brings the cluster to `spec`. Without a `placement` it creates it
    /// (initdb, settings from the spec, the owner role and its database,
    /// the standbys, the pooler), removing first whatever an interrupted
    /// earlier try left for `spec.id`, and removing what it made if it
    /// fails; with one, it adds or removes standbys until there are
    /// `spec.replicas`, live. Accepting connections when it returns; the
    /// placement after.
    async fn apply(
        &self,
        spec: &ClusterSpec,
        placement: Option<&Placement>,
        credentials: &Credentials,
    ) -> Result<Placement>;

    /// One round of supervision: adopts processes that run, restarts those
    /// that do not, rebuilds a member that cannot follow the leader, and
    /// fails over when the leader is gone (its process dead, or not
    /// accepting connections for [`FAILOVER_AFTER`]): the most advanced
    /// standby is promoted, the others and the pooler follow it, and the
    /// new placement comes back for the store to keep.
    async fn observe(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<Supervised>;

    /// Stops every process of cluster `id` and removes its data: those of
    /// `placement`, or without one whatever a create left.
    async fn delete(&self, id: &str, placement: Option<&Placement>) -> Result<()>;

    /// A connection to the leader's `database` as `user`: the host's own
    /// superuser ([`spec::ADMIN_ROLE`], which customers never get) for
    /// administration, the owner role for the console and the data API.
    /// A connection as the host's superuser carries
    /// [`host_session::SETTINGS`], whatever the tenant set on its database.
    async fn connect(
        &self,
        placement: &Placement,
        user: &str,
        password: &str,
        database: &str,
    ) -> Result<sqlx::PgConnection>;

    /// The members now, with their roles, states and replication lag.
    async fn members(&self, placement: &Placement, credentials: &Credentials) -> Vec<Member>;

    /// The last `lines` lines of the leader's log.
    async fn logs(&self, placement: &Placement, lines: usize) -> Result<Vec<String>>;

    /// The extensions whose files this cluster's server has.
    async fn available_extensions(&self, placement: &Placement) -> Result<Vec<String>>;

    /// The certificate (PEM) of the CA that signed the cluster's server
    /// certificate, which every endpoint presents; none for a cluster
    /// without TLS.
    fn ca_certificate(&self, placement: &Placement) -> Option<String>;

    /// Hands the leadership to the standby `to` without losing a commit
    /// (the old leader stops first, then the standby promotes after
    /// replaying everything); the old leader follows it. The new placement.
    async fn switchover(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        to: &str,
    ) -> Result<Placement>;

    /// Makes the standby `member` again from the leader, with the settings
    /// of `spec`.
    async fn recreate_member(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        member: &str,
    ) -> Result<()>;

    // Backups (`backups`, issue 32): continuous WAL archiving, base
    // backups, point-in-time restore into a new cluster.

    /// Ships what the leader archived since the last call (its WAL
    /// segments, timeline histories) to the backup store; how many bytes.
    async fn ship_wal(&self, placement: &Placement) -> Result<u64>;

    /// Closes the current WAL segment after a commit record stamped now
    /// (so a recovery to any earlier time finds its end), waits until it
    /// is archived and ships it: the segment's name and the bytes shipped.
    async fn flush_wal(
        &self,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<(String, u64)>;

    /// Takes a base backup `id` of the leader into the backup store.
    async fn base_backup(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        id: &str,
    ) -> Result<BaseBackup>;

    /// Creates cluster `spec` from a base backup of another and its
    /// archived WAL, recovered up to `from.target_time` (the end of the
    /// archive without one) and promoted, with the passwords of
    /// `credentials`; like `apply` without a placement, it removes first
    /// what an interrupted try left, and what it made if it fails.
    async fn restore(
        &self,
        spec: &ClusterSpec,
        credentials: &Credentials,
        from: &RestoreFrom,
    ) -> Result<Placement>;

    /// The first half of a branch reset: makes a fresh copy of `from`
    /// (recovered to the end of its archive, promoted, with the passwords
    /// of `credentials`) beside the placed cluster, which keeps serving;
    /// the placement that names the copy as the cluster's only member, on
    /// the cluster's own pooler and write endpoint. What it made is removed
    /// if it fails, and what an interrupted earlier try left before it
    /// starts.
    async fn prepare_reset(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        from: &RestoreFrom,
    ) -> Result<Placement>;

    /// The second half, once the store keeps the copy's placement: the
    /// endpoints point at its leader, and the members it does not list
    /// finish their transactions and are removed. `apply` with that
    /// placement does it too (a reset interrupted after the swap).
    async fn finish_reset(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<()>;

    /// Removes base backups `ids` of cluster `cluster` from the backup
    /// store, and its WAL segments before `wal_before` (a segment name).
    async fn prune_backups(
        &self,
        cluster: &str,
        ids: &[String],
        wal_before: Option<&str>,
    ) -> Result<()>;

    /// Removes every backup and archived WAL of cluster `cluster`.
    async fn drop_backups(&self, cluster: &str) -> Result<()>;

    /// The backup store, where uploaded dumps are kept too
    /// ([`dumps::dump_key`]), with the part size of its streamed writes.
    fn dump_store(&self) -> plateau_object_store::Opened;

    /// For each standby of the cluster, whether it holds a synchronized
    /// copy of logical slot `slot` that a promotion would keep (failover
    /// slots, PostgreSQL 17; always false before): `(member, kept)`.
    async fn slot_on_standbys(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        slot: &str,
    ) -> Vec<(String, bool)>;

    /// The `pg_restore` of PostgreSQL `version`, which turns a
    /// custom-format dump into plain SQL for a database of that version
    /// (it reads the archives of its own pg_dump and of older ones).
    fn pg_restore(&self, version: &str) -> Result<std::path::PathBuf>;
}

/// How long a leader whose process lives may refuse connections before
/// the supervisor fails over.
pub const FAILOVER_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// What one round of supervision found.
#[derive(Debug)]
pub struct Supervised {
    /// Whether every process answers.
    pub healthy: bool,
    /// A new placement to keep (after a failover or a rebuild, or with a
    /// write endpoint given to a cluster placed before they existed).
    pub placement: Option<Placement>,
    /// The member that was leader and the one promoted, after a failover.
    pub failover: Option<(String, String)>,
}
