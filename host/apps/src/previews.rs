//! Previews: a branch of an app's linked repository deployed under its
//! own host name, `<slug>-<branch>`. A preview runs as an app row of its
//! own (`app_previews` says whose), so the pipeline, the data plane and
//! the edge serve it as any app. Here: its host name, the environment a
//! replica gets (`target` of the app's variables), and the teardown that
//! removes everything a deleted preview made.

use std::collections::BTreeMap;
use std::time::Duration;

use plateau_seal::Sealer;
use plateau_store::apps::previews::{self, Preview};
use plateau_store::apps::{self, App, env, plugin_env};
use plateau_store::{Db, Tx};

use crate::Apps;

/// The longest DNS label, which a slug is.
const MAX_LABEL: usize = 63;
/// How often the API process finishes the deletes it did not finish.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// `<parent>-<branch>`: the branch lowercased, every run of other
/// characters than letters and digits one `-`, cut to a DNS label;
/// `n` > 1 adds `-n` to tell apart branches that read the same.
pub fn slug(parent: &str, branch: &str, n: u32) -> String {
    let mut label = String::new();
    for c in branch.chars() {
        if c.is_ascii_alphanumeric() {
            label.push(c.to_ascii_lowercase());
        } else if !label.is_empty() && !label.ends_with('-') {
            label.push('-');
        }
    }
    let label = label.trim_matches('-');
    let label = if label.is_empty() { "branch" } else { label };
    let suffix = if n > 1 {
        format!("-{n}")
    } else {
        String::new()
    };
    let room = MAX_LABEL.saturating_sub(parent.len() + 1 + suffix.len());
    let label: String = label.chars().take(room.max(1)).collect();
    format!("{parent}-{}{suffix}", label.trim_end_matches('-'))
}

/// A slug for `branch`'s preview no app has.
pub async fn free_slug(tx: &mut Tx, parent: &str, branch: &str) -> plateau_store::Result<String> {
    let mut n = 1;
    loop {
        let candidate = slug(parent, branch, n);
        if !apps::slug_taken(tx, &candidate).await? {
            return Ok(candidate);
        }
        n += 1;
    }
}

/// The variables a replica of `app` gets, by name: for an app, its
/// plugins' layers (a linked config environment's values), then its own
/// but those of target `preview` over them; for a preview, its app's own
/// but those of target `production`, then its own (its `env` and
/// `dbEnvKey`) over them.
pub async fn environment(
    db: &Db,
    sealer: &Sealer,
    app: &App,
) -> Result<Vec<(String, String)>, String> {
    let fail = |e: plateau_store::Error| e.to_string();
    let mut vars = BTreeMap::new();
    let own = env::list(db, &app.id).await.map_err(fail)?;
    match previews::of_app(db, &app.id).await.map_err(fail)? {
        Some(p) => {
            for var in env::list(db, &p.parent_id).await.map_err(fail)? {
                if var.target != "production" {
                    let value = crate::env::open(sealer, &p.parent_id, &var.name, &var.sealed)?;
                    vars.insert(var.name, value);
                }
            }
            for var in own {
                let value = crate::env::open(sealer, &app.id, &var.name, &var.sealed)?;
                vars.insert(var.name, value);
            }
        }
        None => {
            for var in plugin_env::list(db, &app.id).await.map_err(fail)? {
                let value =
                    crate::env::open_layer(sealer, &app.id, &var.plugin, &var.name, &var.sealed)?;
                vars.insert(var.name, value);
            }
            for var in own.into_iter().filter(|v| v.target != "preview") {
                let value = crate::env::open(sealer, &app.id, &var.name, &var.sealed)?;
                vars.insert(var.name, value);
            }
        }
    }
    Ok(vars.into_iter().collect())
}

impl Apps {
    /// Finishes deleting preview `p` (its app trashed, the row
    /// `deleting`) in the background.
    pub(crate) fn spawn_purge(&self, p: Preview) {
        let apps = self.clone();
        tokio::spawn(async move {
            if let Err(e) = apps.purge_preview(&p).await {
                tracing::warn!(preview = %p.id, error = %e, "apps: removing a preview");
            }
        });
    }

    /// Removes what deleted preview `p` made: the data plane takes its
    /// replicas and route down first (its app is in the trash), then its
    /// rows, builds and stored components go in one transaction, then the
    /// images unpacked on this host. Waits for a pipeline of the preview
    /// to finish; a failure is tried again by the sweep.
    pub(crate) async fn purge_preview(&self, p: &Preview) -> Result<(), String> {
        let lock = self.lock_for(&p.app_id);
        let _turn = lock.lock().await;
        self.follow_on_agent(&p.app_id).await;
        let fail = |e: plateau_store::Error| e.to_string();
        let slug = apps::get_any(self.db(), &p.app_id)
            .await
            .map_err(fail)?
            .map(|a| a.slug)
            .unwrap_or_default();
        let repository = format!("{}/{slug}", p.org_id);
        let mut tx = self.db().begin().await.map_err(fail)?;
        let removed = previews::purge(&mut tx, p, &repository)
            .await
            .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        if let Some(images) = &self.inner.images {
            for digest in removed {
                let rootfs = crate::linux_image::rootfs(images, &p.org_id, &digest);
                if let Some(dir) = rootfs.parent()
                    && dir.exists()
                    && let Err(e) = std::fs::remove_dir_all(dir)
                {
                    tracing::warn!(dir = %dir.display(), error = %e, "apps: removing a preview's image");
                }
            }
        }
        tracing::info!(preview = %p.id, app = %p.app_id, "apps: a preview is removed");
        Ok(())
    }

    /// Finishes, every few seconds, the deletes of previews a previous
    /// run (or a failed step) left `deleting`.
    pub(crate) async fn sweep_previews(self) {
        loop {
            match previews::deleting(self.db()).await {
                Ok(all) => {
                    for p in all {
                        if let Err(e) = self.purge_preview(&p).await {
                            tracing::warn!(preview = %p.id, error = %e, "apps: removing a preview");
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "apps: listing previews being deleted"),
            }
            tokio::time::sleep(SWEEP_EVERY).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::slug;

    #[test]
    fn slugs_are_dns_labels() {
        assert_eq!(
            slug("shop-abc123", "feature/Login", 1),
            "shop-abc123-feature-login"
        );
        assert_eq!(
            slug("shop-abc123", "feature/Login", 2),
            "shop-abc123-feature-login-2"
        );
        assert_eq!(slug("shop-abc123", "--", 1), "shop-abc123-branch");
        let long = slug(&"a".repeat(47), &"b-".repeat(40), 12);
        assert!(long.len() <= 63, "{long}");
        assert!(long.ends_with("-12") && !long.contains("--"), "{long}");
    }
}
