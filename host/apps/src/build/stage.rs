//! The build stage of the pipeline: a `git` (or `upload`) deployment is
//! checked out into a scratch directory, built by the host's
//! [`super::Builder`] into the organisation's repository, and leaves the
//! stage with the image it pushed, by digest. The deployment is
//! `building` meanwhile and `deploying` after; its log is kept.

use plateau_core::time;
use plateau_store::apps::App;
use plateau_store::apps::deployments::{self, Deployment};
use plateau_store::events::{self, Actor};
use serde_json::json;

use super::{BuildFailure, BuildJob, git};
use crate::Apps;
use crate::image::PullAs;
use crate::pipeline::event;

impl Apps {
    /// Builds `d`'s source; the image reference it pushed, or the
    /// deployment's failure reason.
    pub(crate) async fn build(
        &self,
        app: &App,
        d: &Deployment,
        who: Option<&PullAs>,
    ) -> plateau_store::Result<Result<String, String>> {
        let Some(who) = who else {
            return Ok(Err(
                "the host restarted before the source was built; deploy again".to_owned(),
            ));
        };
        let (Some(builder), Some(scratch)) =
            (self.inner.builder.clone(), self.config().builds_dir.clone())
        else {
            return Ok(Err(
                "this host builds no sources; deploy an image".to_owned()
            ));
        };
        deployments::set_working(self.db(), &d.id, "building").await?;
        self.record(
            app,
            "app.deployment.building",
            json!({ "deploymentId": d.id, "source": d.source_type }),
        )
        .await?;
        let dir = scratch.join(&d.id);
        let _ = tokio::fs::remove_dir_all(&dir).await;
        let outcome = self.checkout_and_build(app, d, who, &dir, builder).await;
        let _ = tokio::fs::remove_dir_all(&dir).await;
        match outcome {
            Ok(built) => {
                deployments::set_built(self.db(), &d.id, Some(&built.image), &built.log).await?;
                deployments::set_working(self.db(), &d.id, "deploying").await?;
                self.record(
                    app,
                    "app.deployment.built",
                    json!({ "deploymentId": d.id, "image": built.image }),
                )
                .await?;
                Ok(Ok(built.image))
            }
            Err(failure) => {
                deployments::set_built(self.db(), &d.id, None, &failure.log).await?;
                Ok(Err(failure.reason()))
            }
        }
    }

    async fn checkout_and_build(
        &self,
        app: &App,
        d: &Deployment,
        who: &PullAs,
        dir: &std::path::Path,
        builder: std::sync::Arc<dyn super::Builder>,
    ) -> Result<super::Built, BuildFailure> {
        let started = std::time::Instant::now();
        tokio::fs::create_dir_all(dir).await.map_err(|e| {
            BuildFailure::new(
                "build_failed",
                format!("the scratch directory cannot be made: {e}"),
                String::new(),
            )
        })?;
        let source = dir.join("src");
        let mut log = String::new();
        match d.source_type.as_str() {
            "git" => {
                let (Some(repo), Some(branch)) = (d.repo.as_deref(), d.branch.as_deref()) else {
                    return Err(BuildFailure::new(
                        "build_failed",
                        "the deployment names no repository",
                        String::new(),
                    ));
                };
                if !git::allowed(repo, &self.config().git_allow) {
                    return Err(BuildFailure::new(
                        "build_failed",
                        format!("{repo} is not among the git URLs the operator allows"),
                        String::new(),
                    ));
                }
                log = git::clone(repo, branch, &source, self.config().build_timeout)
                    .await
                    .map_err(|(message, log)| BuildFailure::new("build_failed", message, log))?;
            }
            "upload" => {
                self.unpack_upload(d, &source).await?;
            }
            other => {
                return Err(BuildFailure::new(
                    "build_failed",
                    format!("{other} sources are not built"),
                    String::new(),
                ));
            }
        }
        let local = self.inner.registry.local_address();
        let tag = d.id.replace('_', "-");
        let job = BuildJob {
            id: d.id.clone(),
            source,
            target: format!("{local}/{}/{}:{tag}", app.org_id, app.slug),
            push_password: self.inner.registry.push_bearer(
                &who.org_id,
                &who.token_id,
                who.user_id.as_deref(),
            ),
            timeout: self
                .config()
                .build_timeout
                .saturating_sub(started.elapsed()),
            memory_bytes: self.config().build_memory_bytes,
            cpus: self.config().build_cpus,
        };
        let result = builder.build(job).await;
        match result {
            Ok(mut built) => {
                built.log = super::cap_log(&format!("{log}{}", built.log));
                Ok(built)
            }
            Err(mut failure) => {
                failure.log = super::cap_log(&format!("{log}{}", failure.log));
                Err(failure)
            }
        }
    }

    /// Unpacks the deployment's uploaded archive into `into`; the
    /// archive is built once, so it goes once unpacked.
    async fn unpack_upload(
        &self,
        d: &Deployment,
        into: &std::path::Path,
    ) -> Result<(), BuildFailure> {
        let failed = |message: String| BuildFailure::new("build_failed", message, String::new());
        let (Some(upload), Some(dir)) =
            (d.upload_id.as_deref(), self.config().uploads_dir.as_deref())
        else {
            return Err(failed(
                "the deployment names no uploaded archive".to_owned(),
            ));
        };
        let archive = crate::upload::archive_path(dir, upload);
        let into = into.to_owned();
        let unpacked = {
            let archive = archive.clone();
            tokio::task::spawn_blocking(move || crate::upload::unpack(&archive, &into))
                .await
                .map_err(|e| failed(format!("unpacking stopped: {e}")))?
        };
        let _ = tokio::fs::remove_file(&archive).await;
        unpacked.map_err(failed)
    }

    async fn record(
        &self,
        app: &App,
        kind: &str,
        data: serde_json::Value,
    ) -> plateau_store::Result<()> {
        let now = time::now_ms();
        let mut tx = self.db().begin().await?;
        events::record(
            &mut tx,
            &event(app, kind, "deploy", &Actor::system()).data(data),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}
