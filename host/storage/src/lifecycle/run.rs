//! The lifecycle job. Every `every`, each bucket with rules whose run this
//! host leases (`plateau_store::storage::lifecycle`: one host at a time, at
//! most once per interval) has them applied through the [`Provider`], as
//! the system: expired current objects deleted (a delete marker where
//! versioning is set), noncurrent versions and lone delete markers
//! removed, old multipart uploads aborted.
//!
//! **Invariant:** the job keeps no state of its own: it acts on the
//! bucket's objects as they are, so a run cut short (the host died, its
//! lease expired) is done again by the next one, and a retried action
//! finds nothing left to do.

use std::time::Duration;

use plateau_core::{id::new_id, time};
use plateau_store::Db;
use plateau_store::events::Actor;
use plateau_store::storage::lifecycle as leases;

use super::{Rule, Rules, older_than};
use crate::Storage;
use crate::error::{Error, Result};
use crate::provider::{Bucket, ListQuery, Provider, VersionInfo};

/// How often the job runs and how long a lifecycle day lasts.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub every: Duration,
    /// 24 hours, but for tests (`PLATEAU_STORAGE_LIFECYCLE_DAY_MS`).
    pub day: Duration,
}

/// What a run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    pub expired: u64,
    pub noncurrent: u64,
    pub markers: u64,
    pub aborted: u64,
}

/// Starts the job; it runs until the task is aborted.
pub fn spawn(db: Db, storage: Storage, config: Config) -> tokio::task::JoinHandle<()> {
    let owner = new_id("lc");
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(config.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match run_once(&db, storage.provider(), &owner, config).await {
                Ok(a) if a != Applied::default() => tracing::info!(?a, "lifecycle rules applied"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "lifecycle run"),
            }
        }
    })
}

/// One run over every bucket with rules.
pub async fn run_once(
    db: &Db,
    provider: &dyn Provider,
    owner: &str,
    config: Config,
) -> Result<Applied> {
    let every = config.every.as_millis() as i64;
    let day = (config.day.as_millis() as i64).max(1);
    let mut applied = Applied::default();
    for bucket in leases::buckets(db).await? {
        let now = time::now_ms();
        let lease = now + (every * 10).max(60_000);
        if !leases::lease(db, &bucket.id, owner, now, lease, now - every / 2).await? {
            continue;
        }
        let done = apply(provider, &bucket, now, day, &mut applied).await;
        leases::finish(db, &bucket.id, owner, time::now_ms()).await?;
        if let Err(e) = done {
            tracing::warn!(bucket = %bucket.bucket, error = %e, "lifecycle of a bucket");
        }
    }
    Ok(applied)
}

async fn apply(
    provider: &dyn Provider,
    bucket: &Bucket,
    now: i64,
    day: i64,
    applied: &mut Applied,
) -> Result<()> {
    let Some(body) = provider.bucket_setting(bucket, leases::SETTING).await? else {
        return Ok(());
    };
    let rules: Rules = serde_json::from_str(&body).unwrap_or_default();
    let rules: Vec<&Rule> = rules.iter().filter(|r| r.enabled).collect();
    if rules.is_empty() {
        return Ok(());
    }
    let actor = Actor::system();
    let mut after = String::new();
    loop {
        let query = ListQuery {
            after: after.clone(),
            max_keys: 1000,
            ..Default::default()
        };
        let page = provider.list_versions(bucket, &query, None).await?;
        let mut groups: Vec<Vec<VersionInfo>> = Vec::new();
        for v in page.versions {
            match groups.last_mut() {
                Some(g) if g[0].info.key == v.info.key => g.push(v),
                _ => groups.push(vec![v]),
            }
        }
        // The last key may go on in the next page: it is done there whole,
        // unless it fills the page alone.
        if page.truncated && groups.len() > 1 {
            groups.pop();
        }
        let Some(last) = groups.last().map(|g| g[0].info.key.clone()) else {
            break;
        };
        for group in &groups {
            for (key, version) in decide(&rules, group, now, day, applied) {
                // A version object lock protects is left for a later run.
                match provider
                    .delete_version(
                        bucket,
                        &key,
                        version.as_deref(),
                        false,
                        &Default::default(),
                        &actor,
                    )
                    .await
                {
                    Ok(_) | Err(Error::ObjectLocked) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        if !page.truncated {
            break;
        }
        after = last;
    }
    abort_uploads(provider, bucket, &rules, now, day, applied).await
}

/// The deletes the rules ask of one key's versions (newest first): the
/// key (None, its current version) or a version by id.
fn decide(
    rules: &[&Rule],
    group: &[VersionInfo],
    now: i64,
    day: i64,
    applied: &mut Applied,
) -> Vec<(String, Option<String>)> {
    let mut deletes = Vec::new();
    let mut newer: Option<i64> = None;
    for v in group {
        let info = &v.info;
        let selects = |r: &&&Rule| {
            if v.delete_marker {
                !r.filters_content() && r.selects_key(&info.key)
            } else {
                r.selects(info)
            }
        };
        if v.latest && !v.delete_marker {
            let expired = rules.iter().filter(selects).any(|r| {
                r.expiration_days
                    .is_some_and(|d| older_than(info.modified_at, d, now, day))
                    || r.expiration_date.is_some_and(|at| at <= now)
            });
            if expired {
                deletes.push((info.key.clone(), None));
                applied.expired += 1;
            }
        } else if v.latest {
            let lone = group.len() == 1;
            if lone
                && rules
                    .iter()
                    .filter(selects)
                    .any(|r| r.expired_object_delete_marker == Some(true))
            {
                deletes.push((info.key.clone(), info.version_id.clone()));
                applied.markers += 1;
            }
        } else if let Some(since) = newer {
            let expired = rules.iter().filter(selects).any(|r| {
                r.noncurrent_days
                    .is_some_and(|d| older_than(since, d, now, day))
            });
            if expired {
                deletes.push((info.key.clone(), info.version_id.clone()));
                applied.noncurrent += 1;
            }
        }
        newer = Some(info.modified_at);
    }
    deletes
}

async fn abort_uploads(
    provider: &dyn Provider,
    bucket: &Bucket,
    rules: &[&Rule],
    now: i64,
    day: i64,
    applied: &mut Applied,
) -> Result<()> {
    if rules.iter().all(|r| r.abort_upload_days.is_none()) {
        return Ok(());
    }
    let (mut key, mut id) = (String::new(), String::new());
    loop {
        let (uploads, more) = provider.list_uploads(bucket, "", (&key, &id), 1000).await?;
        for u in &uploads {
            let old = rules.iter().any(|r| {
                !r.filters_content()
                    && r.selects_key(&u.key)
                    && r.abort_upload_days
                        .is_some_and(|d| older_than(u.created_at, d, now, day))
            });
            if old {
                provider.abort_upload(bucket, &u.id).await?;
                applied.aborted += 1;
            }
        }
        match uploads.last() {
            Some(u) if more => (key, id) = (u.key.clone(), u.id.clone()),
            _ => return Ok(()),
        }
    }
}
