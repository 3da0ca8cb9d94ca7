//! The builder of this host: a `Dockerfile` is built with buildah (vfs
//! storage and chroot isolation, under its own root in the data
//! directory) and pushed over loopback to this platform's registry with
//! a short-lived credential. A Rust crate without a `Dockerfile` is
//! built with cargo where the operator allows it ([`super::cargo`]).

use std::path::PathBuf;
use std::time::Instant;

use super::run::{Limits, Outcome, run};
use super::{BuildFailure, BuildFuture, BuildJob, Builder, Built, cap_log};

/// Builds with the buildah of this host.
pub struct LocalBuilder {
    /// Buildah's storage (`root`) and state (`runroot`) live here.
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

    fn buildah(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("buildah");
        cmd.arg("--root")
            .arg(self.dir.join("root"))
            .arg("--runroot")
            .arg(self.dir.join("run"))
            .args(["--storage-driver", "vfs"])
            .env("STORAGE_DRIVER", "vfs")
            .env("BUILDAH_ISOLATION", "chroot");
        cmd
    }

    async fn dockerfile(&self, job: &BuildJob) -> Result<Built, BuildFailure> {
        let started = Instant::now();
        let mut log = String::new();
        let mut bud = self.buildah();
        bud.args([
            "bud",
            "--isolation",
            "chroot",
            "--layers=false",
            "--pull=false",
        ])
        .args(["--format", "oci", "-f"])
        .arg(job.source.join("Dockerfile"))
        .arg("-t")
        .arg(&job.target)
        .arg(&job.source);
        let out = self.step(bud, job, started, "bud").await?;
        log.push_str(&out.log);
        let result = self.push(job, started, &mut log).await;
        // The image is in the registry (or the build failed): buildah's
        // copy only takes disk.
        let mut rmi = self.buildah();
        rmi.args(["rmi", "--force"]).arg(&job.target);
        let _ = run(rmi, &limits(job, started), None).await;
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
        let mut push = self.buildah();
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
        memory_bytes: Some(job.memory_bytes),
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
