//! A subscription as the API shows it: its state on the subscriber, its
//! lag on the source, and the cutover verdict; and the sequences set
//! before a cutover.
//!
//! Cutover, in order: the verdict says `ready` (every table copied, the
//! apply worker streaming, at most [`CUTOVER_LAG_BYTES`] behind); the
//! application stops writing to the source; the lag reaches 0; `POST
//! .../subscriptions/{name}/sync-sequences` moves the subscriber's
//! sequences to the source's values (logical replication carries rows,
//! not sequences); the application points at the subscriber; the
//! subscription is dropped.

use plateau_core::time;
use plateau_store::databases::Database;
use plateau_store::databases::subscriptions::Subscription;
use serde::Serialize;
use sqlx::Connection as _;
use utoipa::ToSchema;

use super::{External, Source};
use crate::inside::subscriptions as sql;
use crate::service::DatabaseService;
use crate::{Error, Result};

/// Most bytes of WAL a subscription may be behind and still be ready for
/// a cutover (the rest drains once writes stop).
pub const CUTOVER_LAG_BYTES: i64 = 1024 * 1024;

/// Whether a cutover may start, and what holds it back.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SubscriptionCutover)]
#[serde(rename_all = "camelCase")]
pub struct Cutover {
    pub ready: bool,
    /// Why it is not ready (empty when it is).
    pub reasons: Vec<String>,
}

/// A subscription of a database.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DatabaseSubscription)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionView {
    pub name: String,
    /// The Plateau database it replicates from, or `host:port/dbname`.
    pub source: String,
    pub source_database_id: Option<String>,
    pub publication: String,
    pub copy_data: bool,
    pub enabled: bool,
    /// Whether its apply worker runs.
    pub streaming: bool,
    /// Tables copied and following the source.
    pub tables_ready: i64,
    /// Tables still being copied.
    pub tables_syncing: i64,
    /// Bytes of the source's WAL not yet applied here; none when the
    /// source cannot be asked.
    pub lag_bytes: Option<i64>,
    /// The last message from the source.
    pub last_message_at: Option<String>,
    /// On a Plateau source with replicas: whether the subscription keeps
    /// streaming through a failover of the source, its slot being a
    /// failover slot that every replica of the source holds (PostgreSQL
    /// 17); always false on 15 and 16, whose slots live on the leader
    /// only. None for other sources.
    pub failover_ready: Option<bool>,
    pub cutover: Cutover,
    pub created_at: String,
}

/// A sequence set by a sync.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SyncedSequence)]
#[serde(rename_all = "camelCase")]
pub struct SyncedSequence {
    /// `schema.name`.
    pub sequence: String,
    /// The source's last value.
    pub source_value: i64,
    /// The subscriber's value now (never below what it had).
    pub value: i64,
}

/// Why the source holds no slot `slot`, and what to do. A Plateau source
/// of 15 or 16 loses it at a failover (its slots live on the leader
/// only; failover slots came in 17): the subscription is not resumed on a
/// slot made again on the new leader, which would start at that moment
/// and silently skip what was committed in between, so it stays stopped
/// and says so.
fn no_slot(source: &Source, slot: &str) -> String {
    match source {
        Source::Plateau(d) if d.version.parse::<u32>().is_ok_and(|v| v < 17) => format!(
            "the source has no slot {slot}: PostgreSQL {} keeps a slot on the source's leader \
             only, so a failover of the source lost it, and no change since has reached this \
             database; drop the subscription and make it again (copyData into emptied tables), \
             or upgrade the source to 17, whose slots follow a failover",
            d.version
        ),
        _ => format!("the source has no slot {slot}"),
    }
}

impl DatabaseService {
    /// The source of `s` as the host reaches it: a Plateau database, or
    /// the server the subscription's own connection string names.
    async fn source_of(&self, s: &Subscription, conninfo: &str) -> Result<Source> {
        match &s.source_database_id {
            Some(id) => self.subscription_source(&s.org_id, id).await,
            None => External::from_conninfo(conninfo)
                .map(Source::External)
                .ok_or_else(|| Error::Internal(format!("subscription {} has no source", s.name))),
        }
    }

    /// Subscription `s` of `target` now.
    pub async fn subscription_view(
        &self,
        target: &Database,
        s: &Subscription,
    ) -> Result<SubscriptionView> {
        let mut conn = self.admin(target).await?;
        let applied = sql::applied(&mut conn, &s.name).await?;
        let _ = conn.close().await;
        let mut reasons = Vec::new();
        let applied = applied.unwrap_or_else(|| {
            reasons.push("the subscription is missing from the database".to_owned());
            Default::default()
        });
        let lag = match self.source_of(s, &applied.conninfo).await {
            Ok(source) => match source.connect(self).await {
                Ok(mut c) => {
                    let lag = sql::slot_lag(&mut c, &s.slot_name).await;
                    let _ = c.close().await;
                    match lag? {
                        Some((bytes, _)) => Some(bytes),
                        None => {
                            reasons.push(no_slot(&source, &s.slot_name));
                            None
                        }
                    }
                }
                Err(e) => {
                    reasons.push(e.to_string());
                    None
                }
            },
            Err(e) => {
                reasons.push(e.to_string());
                None
            }
        };
        if !applied.enabled {
            reasons.push("the subscription is disabled".to_owned());
        } else if !applied.worker {
            reasons.push("its apply worker is not running".to_owned());
        }
        if applied.tables_syncing > 0 {
            reasons.push(format!(
                "{} tables are still being copied",
                applied.tables_syncing
            ));
        }
        if let Some(bytes) = lag
            && bytes > CUTOVER_LAG_BYTES
        {
            reasons.push(format!("{bytes} bytes behind the source"));
        }
        let failover_ready = self.failover_ready(s).await;
        Ok(SubscriptionView {
            name: s.name.clone(),
            source: s.source_display.clone(),
            source_database_id: s.source_database_id.clone(),
            publication: s.publication.clone(),
            copy_data: s.copy_data != 0,
            enabled: applied.enabled,
            streaming: applied.worker,
            tables_ready: applied.tables_ready,
            tables_syncing: applied.tables_syncing,
            lag_bytes: lag,
            last_message_at: applied.last_message_at,
            failover_ready,
            cutover: Cutover {
                ready: reasons.is_empty(),
                reasons,
            },
            created_at: time::to_rfc3339(s.created_at),
        })
    }

    /// Whether the slot of `s` is kept by every replica of its Plateau
    /// source; none for other sources or one without replicas.
    async fn failover_ready(&self, s: &Subscription) -> Option<bool> {
        let id = s.source_database_id.as_deref()?;
        let d = plateau_store::databases::get(self.db(), &s.org_id, id)
            .await
            .ok()??;
        let placement = DatabaseService::placement(&d).ok()?;
        let credentials = self.credentials(&d).ok()?;
        let kept = self
            .provider()
            .slot_on_standbys(&placement, &credentials, &s.slot_name)
            .await;
        (!kept.is_empty()).then(|| kept.iter().all(|(_, k)| *k))
    }

    /// Moves every sequence of `target` that the source of `s` has used
    /// to the source's value (never back); those set.
    pub async fn sync_sequences(
        &self,
        target: &Database,
        s: &Subscription,
    ) -> Result<Vec<SyncedSequence>> {
        let mut conn = self.admin(target).await?;
        let conninfo = sql::applied(&mut conn, &s.name)
            .await?
            .map(|a| a.conninfo)
            .unwrap_or_default();
        let source = self.source_of(s, &conninfo).await?;
        let mut from = source.connect(self).await?;
        let values = sql::sequences(&mut from).await?;
        let _ = from.close().await;
        let mut out = Vec::new();
        for (schema, name, value) in values {
            if let Some(now) = sql::set_sequence(&mut conn, (&schema, &name), value).await? {
                out.push(SyncedSequence {
                    sequence: format!("{schema}.{name}"),
                    source_value: value,
                    value: now,
                });
            }
        }
        let _ = conn.close().await;
        Ok(out)
    }
}
