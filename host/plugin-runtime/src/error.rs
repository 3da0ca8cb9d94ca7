//! The runtime's errors: [`Error`] for configuration and loading,
//! [`ExecError`] for a request, tick or event that did not complete.

use std::path::PathBuf;

use crate::storage::StorageError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why the runtime could not be set up or a component could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid runtime configuration: {0}")]
    Config(String),
    #[error("the wasm engine could not be created: {0}")]
    Engine(#[source] wasmtime::Error),
    #[error("component cache at {path}: {source}")]
    Cache {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the component does not compile: {0}")]
    Compile(#[source] wasmtime::Error),
    #[error(
        "the component imports `{interface}`, which needs capability `{capability}`; grant it or remove the import"
    )]
    CapabilityNotGranted {
        interface: String,
        capability: &'static str,
    },
    #[error("the component imports `{0}`, which this host does not provide")]
    UnknownImport(String),
    #[error(
        "the component uses `{interface}`, but this host links versions {supported} of its package (plugin worlds {}, the support window of wit/README.md); rebuild it against one of them",
        crate::inspect::supported_worlds()
    )]
    UnsupportedVersion {
        interface: String,
        supported: String,
    },
    #[error("the component mixes WIT versions {0} and {1}; build it against one plugin world")]
    MixedVersions(String, String),
    #[error(
        "the component does not export `plateau:handler/handler` (or `plateau:plugin/handler` before 0.3.0)"
    )]
    MissingHandler,
    #[error("the component is not an edge filter: {0}")]
    NotAnEdgeFilter(String),
    #[error("the component cannot be linked: {0}")]
    Link(#[source] wasmtime::Error),
    #[error("describe failed: {0}")]
    Describe(#[source] Box<ExecError>),
    #[error("invalid plugin description: {}", .0.join("; "))]
    InvalidDescription(Vec<String>),
    #[error("cannot switch plugin `{current}` to a version of `{new}`")]
    WrongPlugin { current: String, new: String },
    #[error("plugin `{0}` has no previous version to roll back to")]
    NothingToRollBack(String),
}

/// Why a request, tick or event of a plugin did not complete. Every variant
/// names the plugin, so the HTTP layer can answer a problem body naming it.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("plugin `{plugin}` trapped: {message}")]
    Trap { plugin: String, message: String },
    #[error("plugin `{plugin}` exceeded its deadline of {deadline_ms} ms")]
    DeadlineExceeded { plugin: String, deadline_ms: u64 },
    #[error("plugin `{plugin}` exceeded its memory limit of {limit_bytes} bytes")]
    MemoryLimit { plugin: String, limit_bytes: usize },
    #[error("plugin `{plugin}` ran out of fuel ({fuel} units)")]
    FuelExhausted { plugin: String, fuel: u64 },
    #[error("plugin `{plugin}` could not be instantiated: {message}")]
    Instantiate { plugin: String, message: String },
    #[error(
        "the writes of plugin `{plugin}` conflict with a concurrent change to `{key}`; retry the request"
    )]
    Conflict { plugin: String, key: String },
    #[error("the writes of plugin `{plugin}` could not be committed: {source}")]
    Commit {
        plugin: String,
        #[source]
        source: StorageError,
    },
}

impl ExecError {
    /// The plugin that failed.
    pub fn plugin(&self) -> &str {
        match self {
            ExecError::Trap { plugin, .. }
            | ExecError::DeadlineExceeded { plugin, .. }
            | ExecError::MemoryLimit { plugin, .. }
            | ExecError::FuelExhausted { plugin, .. }
            | ExecError::Instantiate { plugin, .. }
            | ExecError::Conflict { plugin, .. }
            | ExecError::Commit { plugin, .. } => plugin,
        }
    }

    /// The HTTP status the API should answer with.
    pub fn status(&self) -> u16 {
        match self {
            ExecError::Trap { .. }
            | ExecError::MemoryLimit { .. }
            | ExecError::FuelExhausted { .. }
            | ExecError::Instantiate { .. } => 500,
            ExecError::DeadlineExceeded { .. } => 504,
            ExecError::Conflict { .. } => 409,
            ExecError::Commit { .. } => 503,
        }
    }

    /// A stable machine-readable code for problem bodies.
    pub fn code(&self) -> &'static str {
        match self {
            ExecError::Trap { .. } => "plugin_trap",
            ExecError::DeadlineExceeded { .. } => "plugin_deadline_exceeded",
            ExecError::MemoryLimit { .. } => "plugin_memory_limit",
            ExecError::FuelExhausted { .. } => "plugin_fuel_exhausted",
            ExecError::Instantiate { .. } => "plugin_instantiation_failed",
            ExecError::Conflict { .. } => "plugin_write_conflict",
            ExecError::Commit { .. } => "plugin_storage_unavailable",
        }
    }
}
