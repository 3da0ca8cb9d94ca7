//! The builder of this host: a `Dockerfile` is built with buildah (vfs
//! storage of the organisation's own under the data directory, its `RUN`
//! steps in [`super::sandbox`]) and pushed over loopback to this
//! platform's registry with a short-lived credential. A Rust crate
//! without a `Dockerfile` is built with cargo where the operator allows
//! it ([`super::cargo`]).

use std::path::PathBuf;
use std::time::Instant;

use super::run::{CgroupLimits, Limits, Outcome, run};
use super::{BuildFailure, BuildFuture, BuildJob, Builder, Built, cap_log, sandbox};

/// Builds with the buildah of this host.
pub struct LocalBuilder {
    /// Buildah's storage and state live here, per organisation (under
    /// `orgs`); a build's own files are in [`sandbox::work_dir`].
    dir: PathBuf,
    /// Whether crates are built with cargo (`PLATEAU_APPS_CARGO_BUILDS`).
    cargo: bool,
}

impl LocalBuilder {
    pub fn new(dir: PathBuf) -> LocalBuilder {
        LocalBuilder { dir, cargo: false }
    }

    /// This builder building Rust crates with cargo too.
    pub fn with_cargo(mut self, cargo: bool) -> LocalBuilder {
        self.cargo = cargo;
        self
    }

    pub(super) fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// buildah on the organisation's own storage (no build sees another
    /// organisation's images, bases or cache mounts), with the job's
    /// own temporary directory.
    pub(super) fn buildah(&self, job: &BuildJob) -> tokio::process::Command {
        let storage = self.dir.join("orgs").join(job.org());
        let mut cmd = tokio::process::Command::new("buildah");
        cmd.arg("--root")
            .arg(storage.join("root"))
            .arg("--runroot")
            .arg(storage.join("run"))
            .args(["--storage-driver", "vfs"])
            .env("STORAGE_DRIVER", "vfs")
            .env("BUILDAH_ISOLATION", "oci")
            .env("TMPDIR", self.tmp(job));
        cmd
    }

    /// buildah's `TMPDIR` (its bundles) in the job's work directory.
    pub(super) fn tmp(&self, job: &BuildJob) -> PathBuf {
        std::path::Path::new(sandbox::WORK_ROOT)
            .join(&job.id)
            .join("tmp")
    }

    async fn dockerfile(&self, job: &BuildJob) -> Result<Built, BuildFailure> {
        let started = Instant::now();
        let failed = |m: String| BuildFailure::new("build_failed", m, String::new());
        let runtime = sandbox::install_runtime(&self.dir).map_err(failed)?;
        let work = sandbox::work_dir(&job.id).map_err(failed)?;
        std::fs::create_dir(self.tmp(job))
            .map_err(|e| failed(format!("the build directory cannot be made: {e}")))?;
        let mut log = String::new();
        let mut bud = self.buildah(job);
        bud.args(["bud", "--layers=false", "--pull=false"])
            .args(sandbox::bud_args(&runtime))
            .args(["--format", "oci", "-f"])
            .arg(job.source.join("Dockerfile"))
            .arg("-t")
            .arg(&job.target)
            .arg(&job.source);
        let result = match self.step(bud, job, started, "bud").await {
            Ok(out) => {
                log.push_str(&out.log);
                self.push(job, started, &mut log).await
            }
            Err(e) => Err(e),
        };
        // The image is in the registry (or the build failed): buildah's
        // copy only takes disk.
        let mut rmi = self.buildah(job);
        rmi.args(["rmi", "--force"]).arg(&job.target);
        let cleanup = Limits {
            timeout: std::time::Duration::from_secs(60),
            cgroup: None,
        };
        let _ = run(rmi, &cleanup, None).await;
        let _ = std::fs::remove_dir_all(work);
        result.map_err(|mut f| {
            f.log = cap_log(&format!("{log}{}", f.log));
            f
        })
    }

    async fn push(
        &self,
        job: &BuildJob,
        started: Instant,
        log: &mut String,
    ) -> Result<Built, BuildFailure> {
        let digest_file = self.dir.join(format!("{}.digest", job.id));
        let mut push = self.buildah(job);
        push.args(["push", "--tls-verify=false", "--format", "oci", "--creds"])
            .arg(format!("plateau:{}", job.push_password))
            .arg("--digestfile")
            .arg(&digest_file)
            .arg(&job.target)
            .arg(format!("docker://{}", job.target));
        let out = self.step(push, job, started, "push").await?;
        log.push_str(&out.log);
        let digest = std::fs::read_to_string(&digest_file).unwrap_or_default();
        let _ = std::fs::remove_file(&digest_file);
        let digest = digest.trim();
        if !digest.starts_with("sha256:") {
            return Err(BuildFailure::new(
                "build_failed",
                "buildah pushed no digest",
                String::new(),
            ));
        }
        let repository = job
            .target
            .rsplit_once(':')
            .map_or(job.target.as_str(), |(r, _)| r);
        Ok(Built {
            image: format!("{repository}@{digest}"),
            log: cap_log(log),
        })
    }

    /// Runs one buildah step in the time left, failing the build with
    /// its code when it does not succeed.
    pub(super) async fn step(
        &self,
        cmd: tokio::process::Command,
        job: &BuildJob,
        started: Instant,
        what: &str,
    ) -> Result<Outcome, BuildFailure> {
        let limits = limits(job, started);
        let name = format!("{}-{what}", job.id);
        let program = cmd.as_std().get_program().to_string_lossy().into_owned();
        let out = run(cmd, &limits, Some(&name)).await.map_err(|e| {
            BuildFailure::new(
                "build_failed",
                format!("{program} could not run: {e}; install {program}"),
                String::new(),
            )
        })?;
        if out.timed_out {
            return Err(BuildFailure::new(
                "build_timeout",
                format!("the build took longer than {}s", job.timeout.as_secs()),
                out.log,
            ));
        }
        if out.oom {
            return Err(BuildFailure::new(
                "build_oom",
                format!(
                    "the build ran out of memory ({} MiB)",
                    job.memory_bytes >> 20
                ),
                out.log,
            ));
        }
        if !out.success {
            let message = match what {
                "push" => "pushing the built image failed; see the build log",
                "cargo" => "the cargo build failed; see the build log",
                _ => "the Dockerfile build failed; see the build log",
            };
            return Err(BuildFailure::new("build_failed", message, out.log));
        }
        Ok(out)
    }
}

fn limits(job: &BuildJob, started: Instant) -> Limits {
    Limits {
        timeout: job.timeout.saturating_sub(started.elapsed()),
        cgroup: Some(CgroupLimits {
            memory_bytes: job.memory_bytes,
            pids: sandbox::PIDS,
            cpus: job.cpus,
        }),
    }
}

impl Builder for LocalBuilder {
    fn build(&self, job: BuildJob) -> BuildFuture<'_> {
        Box::pin(async move {
            if let Err(e) = std::fs::create_dir_all(&self.dir) {
                return Err(BuildFailure::new(
                    "build_failed",
                    format!("the build directory cannot be made: {e}"),
                    String::new(),
                ));
            }
            if job.source.join("Dockerfile").is_file() {
                return self.dockerfile(&job).await;
            }
            if job.source.join("Cargo.toml").is_file() {
                if self.cargo {
                    return self.cargo(&job).await;
                }
                return Err(BuildFailure::new(
                    "build_failed",
                    "this host builds no Rust crates (PLATEAU_APPS_CARGO_BUILDS); add a Dockerfile",
                    String::new(),
                ));
            }
            Err(BuildFailure::new(
                "build_failed",
                "the source has neither a Dockerfile nor a Cargo.toml at its top; add one",
                String::new(),
            ))
        })
    }
}
