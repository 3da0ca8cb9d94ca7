//! Builds of a deployment's source (a git repository or an uploaded
//! archive): the source is checked out into a scratch directory, built by
//! a [`Builder`] into an image in the organisation's repository of this
//! platform's registry, and the pipeline then deploys that image by
//! digest like any other.
//!
//! **Architecture Invariant:** the pipeline knows builds only through
//! [`Builder`]; [`local::LocalBuilder`] runs buildah (a `Dockerfile`) or
//! cargo (a `wasm32-wasip2` crate) on this host, and another builder could
//! hand the same job to a remote machine.

mod cargo;
pub mod git;
pub mod local;
pub mod run;
pub mod sandbox;
mod stage;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

/// How long a build may run.
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(280);
/// Memory a build may use.
pub const BUILD_MEMORY_BYTES: u64 = 2 << 30;
/// CPUs a build may keep busy.
pub const BUILD_CPUS: u32 = 1;
/// Bytes of build output kept with the deployment.
pub const MAX_LOG_BYTES: usize = 64 << 10;

/// One build: a checked-out source and where its image goes.
#[derive(Clone, Debug)]
pub struct BuildJob {
    /// The deployment it is for (names scratch files).
    pub id: String,
    /// The source tree (a `Dockerfile` or a `Cargo.toml` at its top).
    pub source: PathBuf,
    /// `host:port/repository:tag` in this platform's registry, reached
    /// over loopback.
    pub target: String,
    /// A short-lived registry credential that may push to `target`.
    pub push_password: String,
    pub timeout: Duration,
    pub memory_bytes: u64,
    pub cpus: u32,
}

impl BuildJob {
    /// The organisation whose repository `target` is in (what its
    /// build shares storage and caches with).
    pub fn org(&self) -> &str {
        self.target.split('/').nth(1).unwrap_or("shared")
    }
}

/// A finished build.
#[derive(Clone, Debug)]
pub struct Built {
    /// `host:port/repository@sha256:...`: what the pipeline deploys.
    pub image: String,
    pub log: String,
}

/// A build that did not finish, with the deployment's reason.
#[derive(Clone, Debug)]
pub struct BuildFailure {
    /// `build_failed`, `build_timeout` or `build_oom`.
    pub code: &'static str,
    pub message: String,
    pub log: String,
}

impl BuildFailure {
    pub fn new(code: &'static str, message: impl Into<String>, log: String) -> BuildFailure {
        BuildFailure {
            code,
            message: message.into(),
            log,
        }
    }

    /// The deployment's failure reason.
    pub fn reason(&self) -> String {
        format!("{}: {}", self.code, self.message)
    }
}

pub type BuildFuture<'a> = Pin<Box<dyn Future<Output = Result<Built, BuildFailure>> + Send + 'a>>;

/// Builds a source tree into an image pushed to this platform's registry.
pub trait Builder: Send + Sync {
    fn build(&self, job: BuildJob) -> BuildFuture<'_>;
}

/// Keeps the last [`MAX_LOG_BYTES`] of `log` (on a character boundary).
pub fn cap_log(log: &str) -> String {
    if log.len() <= MAX_LOG_BYTES {
        return log.to_owned();
    }
    let mut start = log.len() - MAX_LOG_BYTES;
    while !log.is_char_boundary(start) {
        start += 1;
    }
    format!("[earlier output cut]\n{}", &log[start..])
}
