//! The Linux container runtime: an OCI image unpacked into a rootfs
//! ([`unpack`]), each replica run by `runc` from a generated runtime
//! config ([`spec`]) in its own network namespace ([`net`]), the edge's
//! requests proxied to the replica's address and `$PORT`. A replica runs
//! as its app's unprivileged host ids ([`ids`]), under a seccomp filter
//! ([`spec::SECCOMP`]), behind the replicas' firewall ([`firewall`]),
//! reaching beyond the host only what [`egress`] allows.
//!
//! State lives under one root (`<data dir>/apps/containers`): runc's state
//! in `state/`, one bundle per replica in `bundles/`, the replicas'
//! `resolv.conf`. A new runner deletes
//! every container a previous process left there, and reclaims the
//! networks of processes that are gone, before it runs anything.

mod cgroup;
pub mod egress;
pub mod firewall;
pub mod ids;
mod net;
mod replica;
mod replicas;
pub mod spec;
pub mod unpack;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;

use crate::logs::LogSink;
use crate::{Artifact, Error, LaunchSpec, Limits, Replicas, Result, Runner, VolumeMount};
pub use egress::Egress;
pub use net::SUBNET;
pub use replicas::ContainerReplicas;
pub use spec::{ImageConfig, PORT};

/// Where a runner keeps its state, and what its replicas may reach.
pub struct Paths {
    /// runc's `--root`.
    pub state: PathBuf,
    /// One OCI bundle (`config.json`) per replica.
    pub bundles: PathBuf,
    /// The replicas' `/etc/resolv.conf` (the host's resolvers).
    pub resolv_conf: PathBuf,
    /// What the replicas may reach beyond the host.
    pub egress: Egress,
}

/// What every replica of a deployment is started from.
pub struct Template {
    pub image: ImageConfig,
    /// The image's rootfs owned by the app's ids.
    pub rootfs: PathBuf,
    /// The first host uid of the app's range: its container uid 0.
    pub uid_base: u32,
    pub env: Vec<(String, String)>,
    pub limits: Limits,
    pub logs: Arc<dyn LogSink>,
    /// The app's volumes, their roots owned by container root.
    pub volumes: Vec<VolumeMount>,
    /// `<app>-<deployment>`, shortened; replicas add their number.
    pub name: String,
}

/// Fails with what to install when runc is missing.
pub fn check_runc() -> Result<()> {
    let version = Command::new("runc").arg("--version").output();
    if !version.is_ok_and(|o| o.status.success()) {
        return Err(Error::NotRunnable(
            "runc is not installed; install the runc package (apt-get install runc)".into(),
        ));
    }
    Ok(())
}

/// Runs Linux images with runc.
pub struct ContainerRunner {
    paths: Arc<Paths>,
    /// Numbers replicas, so a restarted replica never reuses an id.
    next: Arc<AtomicU64>,
}

impl ContainerRunner {
    /// A runner keeping its state under `root`, its replicas reaching
    /// what `egress` allows; fails with what to install when runc is
    /// missing.
    pub fn new(root: impl Into<PathBuf>, egress: Egress) -> Result<ContainerRunner> {
        let root = root.into();
        let paths = Paths {
            state: root.join("state"),
            bundles: root.join("bundles"),
            resolv_conf: root.join("resolv.conf"),
            egress,
        };
        check_runc()?;
        for dir in [&paths.state, &paths.bundles] {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::NotRunnable(format!("cannot create {}: {e}", dir.display())))?;
        }
        std::fs::write(&paths.resolv_conf, paths.egress.resolv_conf()).map_err(|e| {
            Error::NotRunnable(format!("cannot write the replicas' resolv.conf: {e}"))
        })?;
        firewall::install()?;
        let runner = ContainerRunner {
            paths: Arc::new(paths),
            next: Arc::new(AtomicU64::new(0)),
        };
        runner.sweep();
        Ok(runner)
    }

    /// Deletes the containers and bundles a previous process left.
    fn sweep(&self) {
        let listed = Command::new("runc")
            .arg("--root")
            .arg(&self.paths.state)
            .args(["list", "--quiet"])
            .output();
        if let Ok(out) = listed {
            for id in String::from_utf8_lossy(&out.stdout).lines() {
                let _ = Command::new("runc")
                    .arg("--root")
                    .arg(&self.paths.state)
                    .args(["delete", "--force", id.trim()])
                    .output();
            }
        }
        if let Ok(entries) = std::fs::read_dir(&self.paths.bundles) {
            for entry in entries.flatten() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        net::reclaim_stale();
    }

    /// The ids of the containers runc knows under this runner's root.
    pub fn containers(&self) -> Vec<String> {
        let out = Command::new("runc")
            .arg("--root")
            .arg(&self.paths.state)
            .args(["list", "--quiet"])
            .output();
        out.map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_owned)
                .filter(|l| !l.is_empty())
                .collect()
        })
        .unwrap_or_default()
    }
}

#[async_trait]
impl Runner for ContainerRunner {
    async fn launch(&self, spec: LaunchSpec) -> Result<Arc<dyn Replicas>> {
        let Artifact::Container { rootfs, config, .. } = spec.artifact else {
            return Err(Error::NotRunnable(
                "the container runtime runs Linux images only".to_owned(),
            ));
        };
        if !rootfs.is_dir() {
            return Err(Error::NotRunnable(format!(
                "the image's root filesystem {} is not unpacked on this host; deploy the image again",
                rootfs.display()
            )));
        }
        let owner = self.paths.state.clone();
        let app = spec.app_id.clone();
        let volumes = spec.volumes.clone();
        let user = config.ids()?;
        let (range, rootfs) = tokio::task::spawn_blocking(move || {
            let range = ids::IdRange::for_app(&owner, &app)?;
            let rootfs = range.rootfs(&rootfs)?;
            for v in &volumes {
                own_volume(&v.source, range.base(), user)?;
            }
            Ok::<_, Error>((range, rootfs))
        })
        .await
        .map_err(|e| Error::NotRunnable(e.to_string()))??;
        let template = Template {
            image: config,
            rootfs,
            uid_base: range.base(),
            env: spec.env,
            limits: spec.limits,
            logs: spec.logs,
            volumes: spec.volumes,
            name: short(&spec.deployment_id),
        };
        let replicas = ContainerReplicas::start(
            template,
            self.paths.clone(),
            self.next.clone(),
            spec.limits.replicas.max(1),
        )
        .await?;
        Ok(Arc::new(replicas))
    }
}

/// Gives a volume's root directory to the user the image runs as (its
/// `User`, container root by default), mapped into the app's host range,
/// so the app can write there; what it writes keeps the app's host ids,
/// which its range keeps across restarts (runc 1.1 has no idmapped
/// mounts). Only the root changes hands, never what the app made: `root`
/// is the mount point of the volume's filesystem, which the app cannot
/// replace with a link.
fn own_volume(root: &std::path::Path, uid_base: u32, (uid, gid): (u32, u32)) -> Result<()> {
    let (uid, gid) = (
        uid_base + uid.min(ids::SIZE - 1),
        uid_base + gid.min(ids::SIZE - 1),
    );
    std::os::unix::fs::chown(root, Some(uid), Some(gid)).map_err(|e| {
        Error::NotRunnable(format!(
            "cannot give the volume {} to the app: {e}",
            root.display()
        ))
    })
}

/// The tail of an id (ids end in their random part), for names.
fn short(id: &str) -> String {
    let tail: String = id.chars().rev().take(12).collect();
    tail.chars().rev().collect::<String>().to_ascii_lowercase()
}

/// A replica's container id: unique within the runner's root.
fn replica_id(template: &Template, next: &AtomicU64) -> String {
    format!("{}-{}", template.name, next.fetch_add(1, Ordering::Relaxed))
}
