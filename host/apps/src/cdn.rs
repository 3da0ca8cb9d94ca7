//! An app's edge CDN on this host: on or off as the database says, and
//! each purge asked for (`POST /apps/{id}/cdn/purge`) applied once, in
//! order, when the plane follows the app. A purge recorded while the
//! agent was down is applied when it next follows the app; an agent that
//! starts holds nothing (its CDN directory is emptied), so it starts from
//! the purges as they stand.

use std::collections::HashMap;
use std::sync::Mutex;

use plateau_edge::Edge;
use plateau_store::Db;
use plateau_store::apps::App;
use plateau_store::apps::cdn;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The purges this plane applied, by app id.
#[derive(Default)]
pub struct CdnFollow {
    applied: Mutex<HashMap<String, i64>>,
}

impl CdnFollow {
    /// Brings the edge's CDN of `app` in step with the database.
    pub async fn follow(&self, db: &Db, edge: &Edge, app: &App) -> plateau_store::Result<()> {
        let row = cdn::get(db, &app.id).await?;
        let applied = self.applied().get(&app.id).copied();
        if let Some(last) = applied
            && last < row.purges
        {
            let purges = cdn::purges_after(db, &app.id, last).await?;
            if purges.first().is_none_or(|p| p.seq != last + 1) {
                // Further behind than the purges kept: all of it.
                edge.cdn().purge(&app.slug, "");
            }
            for purge in purges {
                let gone = edge.cdn().purge(&app.slug, &purge.prefix);
                tracing::info!(app = %app.id, prefix = %purge.prefix, gone, "cdn: purged");
            }
        }
        self.applied().insert(app.id.clone(), row.purges);
        edge.set_cdn(&app.slug, row.enabled == 1);
        Ok(())
    }

    fn applied(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.applied.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the CDN of the host serving an app did for it since the agent
/// started, and what it holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CdnStats {
    /// Answered from the cache, fresh.
    pub hits: u64,
    /// Answered from the cache while it was revalidated in the background
    /// (`stale-while-revalidate`).
    pub stale: u64,
    /// Answered from the cache after the app said it had not changed (304).
    pub revalidated: u64,
    /// Answered by the app.
    pub misses: u64,
    /// Of the hits, those that waited for another request's miss of the
    /// same path rather than going to the app too (request coalescing).
    #[serde(default)]
    pub coalesced: u64,
    /// Hits, stale and revalidated answers over all cacheable requests.
    pub hit_ratio: f64,
    /// Body bytes answered from the cache.
    pub bytes_served: u64,
    /// Responses stored now.
    pub entries: u64,
    /// Their body bytes.
    pub stored_bytes: u64,
    /// Bytes the app's responses take in the edge's memory (bodies and
    /// heads).
    #[serde(default)]
    pub memory_bytes: u64,
    /// The app's fair share of the edge's memory now: the memory over the
    /// apps with responses in it. When memory is full, apps above their
    /// share lose their least recently used responses first.
    #[serde(default)]
    pub memory_share_bytes: u64,
    /// Bytes of the app's responses in the edge's files.
    #[serde(default)]
    pub disk_bytes: u64,
    /// The app's fair share of the edge's disk, as of memory.
    #[serde(default)]
    pub disk_share_bytes: u64,
}

impl CdnStats {
    /// The counters of `slug` on `edge`.
    pub fn of(edge: &Edge, slug: &str) -> CdnStats {
        let s = edge.cdn().stats(slug);
        CdnStats {
            hits: s.hits,
            stale: s.stale,
            revalidated: s.revalidated,
            misses: s.misses,
            coalesced: s.coalesced,
            hit_ratio: s.hit_ratio(),
            bytes_served: s.bytes_served,
            entries: s.stored.entries,
            stored_bytes: s.stored.bytes,
            memory_bytes: s.share.memory_bytes,
            memory_share_bytes: s.share.memory_share_bytes,
            disk_bytes: s.share.disk_bytes,
            disk_share_bytes: s.share.disk_share_bytes,
        }
    }
}
