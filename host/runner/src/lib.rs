//! Where apps' replicas run: one [`Runner`] trait, the boundary where
//! another engine (Kubernetes) could later run replicas, and its runtimes.
//!
//! A runtime turns a [`LaunchSpec`] (an artifact, the app's environment,
//! its limits) into [`Replicas`]: something that answers HTTP requests.
//! [`wasm::WasmRunner`] runs `wasi:http/proxy` components in-process with
//! wasmtime, a fresh instance per request; [`container::ContainerRunner`]
//! runs Linux images with runc, each replica a container in its own
//! network namespace, behind the same trait. [`command::CommandRunner`]
//! runs `wasi:cli` command components to completion (cron jobs of type
//! `container`), with the same wasmtime and WASI as apps.
//!
//! **Architecture Invariant:** this crate knows nothing of the database,
//! the API or routing: it runs what it is given and reports what the
//! replicas print through a [`LogSink`].

pub mod command;
pub mod container;
pub mod logs;
mod output;
pub mod remote;
pub mod wasm;

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;

pub use logs::{LogSink, Stream};

/// Any error of a body.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The body of requests to, and responses from, replicas.
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

/// How much of the machine a deployment's replicas may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Memory of one replica (for Wasm: of one instance), in MiB.
    pub memory_mb: u32,
    /// CPU of one replica in thousandths of a core; for Wasm, the fuel
    /// budget of one request.
    pub milli_cpu: u32,
    /// Replicas; for Wasm, requests served at once.
    pub replicas: u32,
}

/// What a deployment runs.
#[derive(Clone, Debug)]
pub enum Artifact {
    /// A WebAssembly component implementing `wasi:http/proxy`, with its
    /// digest (the compiled form is cached under it).
    Wasm { digest: String, bytes: Bytes },
    /// A Linux image unpacked into `rootfs`, with its config's digest.
    Container {
        digest: String,
        rootfs: std::path::PathBuf,
        config: container::ImageConfig,
    },
}

/// One deployment to start.
pub struct LaunchSpec {
    pub app_id: String,
    pub deployment_id: String,
    pub artifact: Artifact,
    /// The app's environment, opened.
    pub env: Vec<(String, String)>,
    pub limits: Limits,
    /// Where the replicas' stdout and stderr go.
    pub logs: Arc<dyn LogSink>,
    /// The app's volumes, mounted on this host.
    pub volumes: Vec<VolumeMount>,
}

/// A volume a replica sees: a directory of this host (the root of a
/// mounted filesystem) at `path` inside the replica: bind-mounted in a
/// Linux replica, preopened for a Wasm one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeMount {
    pub source: std::path::PathBuf,
    /// Absolute, as the app set `mountPath`.
    pub path: String,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the artifact cannot run: {0}")]
    NotRunnable(String),
    #[error("the app failed to answer: {0}")]
    Failed(String),
    #[error("the app did not answer within {0} seconds")]
    Timeout(u64),
    #[error("the app has stopped")]
    Stopped,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A runtime: starts deployments.
#[async_trait]
pub trait Runner: Send + Sync {
    /// Prepares the replicas of `spec` (for Wasm: compiles and links the
    /// component). They serve once this returns; the caller health-checks
    /// them before sending traffic.
    async fn launch(&self, spec: LaunchSpec) -> Result<Arc<dyn Replicas>>;
}

/// The running replicas of one deployment.
#[async_trait]
pub trait Replicas: Send + Sync {
    /// Serves one request; waits for a free replica when all are busy.
    async fn handle(&self, request: http::Request<Body>) -> Result<http::Response<Body>>;
    /// The value of `key` in the replicas' environment.
    fn env_value(&self, key: &str) -> Option<String>;
    /// Changes the number of replicas without a restart.
    fn set_replicas(&self, replicas: u32);
    /// Stops taking requests; requests in flight finish.
    fn stop(&self);
    /// Whether, once stopped, nothing of the replicas runs any more: no
    /// request in flight, no process left (what a volume's move waits
    /// for before it snapshots the volume).
    fn drained(&self) -> bool {
        true
    }
    /// What the replicas have used since they were launched (cheap: no
    /// process is run).
    fn usage(&self) -> Usage {
        Usage::default()
    }
    /// Bytes the replicas sent beyond the host since they were launched;
    /// may block (it reads the firewall's counters).
    fn egress_bytes(&self) -> u64 {
        0
    }
}

/// What one deployment's replicas have used, as the autoscaler and the
/// usage sampler read it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// CPU time since launch, in microseconds, the replicas stopped since
    /// included: each container's cgroup (`cpu.stat` `usage_usec`, or
    /// cgroup v1's `cpuacct.usage`); for Wasm, the epoch ticks its guests
    /// ran through.
    pub cpu_usec: u64,
    /// The CPU the replicas may use now, in thousandths of a core: each
    /// container's `milliCpu`; a whole core per Wasm replica (a request
    /// at once).
    pub capacity_milli: u64,
    /// Memory in use now, in bytes: the containers' cgroups
    /// (`memory.current`), or the linear memories of live Wasm instances.
    pub memory_bytes: u64,
    /// Replicas running now.
    pub replicas: u32,
}
