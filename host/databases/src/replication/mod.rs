//! Logical replication (spec 4.6, issue 32): a subscription made after a
//! preflight, its lag and cutover verdict, the sequences set before a
//! cutover, the subscription dropped with what it made on its source.
//!
//! The preflight refuses, naming why (a 400 with its code): a source the
//! egress guard refuses or that does not answer (`source_unreachable`), a
//! source newer than the subscriber or older than 10
//! (`unsupported_version_pair`: replication here moves data to the same or
//! a newer version), a source whose `wal_level` is not `logical`
//! (`wal_level_not_logical`; a Plateau database started before logical
//! replication was offered gets it at its next restart, which `POST
//! /databases/{id}/apply-config` does), a connection string's role
//! without `REPLICATION` (`source_role_cannot_replicate`), a publication
//! the source lacks (`publication_missing`), published tables without a
//! replica identity (`replica_identity_missing`), published tables the
//! subscriber lacks (`tables_missing`).
//!
//! On a Plateau source the host makes a login role of its own per
//! subscription (`plateau_sub_<hash>`, also the replication slot's name):
//! `REPLICATION`, a member of the source's owner role (to read the tables
//! for the first copy), a generated password that only the subscriber's
//! catalog holds. The subscriber reaches the source's write endpoint, so
//! a switchover keeps it streaming. A failover keeps it streaming on 17
//! (source and subscriber): its slot is a failover slot, which the
//! source's standbys keep a copy of (`local::conf`); on 15 and 16 the
//! slot lives on the old leader only and the subscription stops.

pub mod source;

use plateau_core::time;
use plateau_store::databases::subscriptions::{self as rows, Subscription};
use plateau_store::databases::{self as dbs, Database};
use sha2::Digest;
use sqlx::Connection as _;

use crate::inside::quote_ident;
use crate::inside::subscriptions::{self as sql, NewSubscription};
use crate::local::quote_literal;
use crate::service::DatabaseService;
use crate::{Error, Result};
pub use source::{External, Source};

/// What a subscription is asked with.
pub struct Request<'a> {
    pub name: &'a str,
    pub source: &'a str,
    pub publication: &'a str,
    pub copy_data: bool,
}

fn refused(code: &'static str, detail: String) -> Error {
    Error::Refused { code, detail }
}

/// The slot (and, on a Plateau source, role) of subscription `name` of
/// database `id`: unique per subscription, at most 63 bytes.
pub fn slot_name(id: &str, name: &str) -> String {
    let digest = sha2::Sha256::digest(format!("{id}/{name}").as_bytes());
    format!("plateau_sub_{}", hex::encode(&digest[..10]))
}

impl DatabaseService {
    /// The source a request names: a database of `org_id` by id, or a
    /// connection string checked by the egress guard.
    pub async fn subscription_source(&self, org_id: &str, source: &str) -> Result<Source> {
        if source.starts_with("postgres://") || source.starts_with("postgresql://") {
            return Ok(Source::External(
                External::parse(source, &self.config().egress_allow).await?,
            ));
        }
        let d = dbs::get(self.db(), org_id, source).await?.ok_or_else(|| {
            refused(
                "invalid_source",
                format!("source: no database {source} in this organisation"),
            )
        })?;
        DatabaseService::placement(&d)?;
        Ok(Source::Plateau(Box::new(d)))
    }

    /// The preflight of a subscription of `target` to `publication` of
    /// `source`: the published tables and the source's major version, or
    /// the first check that blocks.
    pub async fn preflight(
        &self,
        target: &Database,
        source: &Source,
        publication: &str,
    ) -> Result<(Vec<(String, String)>, u32)> {
        let mut conn = source.connect(self).await?;
        let facts = sql::source_facts(&mut conn).await?;
        let target_major: u32 = target.version.parse().unwrap_or(0);
        if facts.major < 10 || facts.major > target_major {
            return Err(refused(
                "unsupported_version_pair",
                format!(
                    "the source runs PostgreSQL {} and this database {target_major}: replication here moves data from 10 or later to the same or a newer version",
                    facts.major
                ),
            ));
        }
        if facts.wal_level != "logical" {
            let how = match source {
                Source::Plateau(d) => format!(
                    "database {} started before logical replication was offered; POST /databases/{}/apply-config restarts it with wal_level=logical",
                    d.id, d.id
                ),
                Source::External(_) => "set wal_level = logical and restart it".to_owned(),
            };
            return Err(refused(
                "wal_level_not_logical",
                format!("the source runs with wal_level={}: {how}", facts.wal_level),
            ));
        }
        if !facts.can_replicate {
            return Err(refused(
                "source_role_cannot_replicate",
                "the source's role has no REPLICATION attribute".to_owned(),
            ));
        }
        let tables = sql::published_tables(&mut conn, publication)
            .await?
            .ok_or_else(|| {
                refused(
                    "publication_missing",
                    format!("publication: the source has no publication {publication}"),
                )
            })?;
        let bare = sql::without_identity(&mut conn, publication).await?;
        let _ = conn.close().await;
        if !bare.is_empty() {
            return Err(refused(
                "replica_identity_missing",
                format!(
                    "published tables without a replica identity (a primary key, or REPLICA IDENTITY USING INDEX or FULL) cannot replicate updates and deletes: {}",
                    bare.join(", ")
                ),
            ));
        }
        let mut conn = self.admin(target).await?;
        let missing = sql::missing_tables(&mut conn, &tables).await?;
        let _ = conn.close().await;
        if !missing.is_empty() {
            return Err(refused(
                "tables_missing",
                format!(
                    "this database lacks published tables (create them first, with the same columns): {}",
                    missing.join(", ")
                ),
            ));
        }
        Ok((tables, facts.major))
    }

    /// Makes subscription `req` in `target` after its preflight: on a
    /// Plateau source, its role first; then the subscription (its slot on
    /// the source), then the row. A failure undoes what was made.
    pub async fn subscribe(&self, target: &Database, req: &Request<'_>) -> Result<Subscription> {
        let placement = DatabaseService::placement(target)?;
        let mut conn = self.admin(target).await?;
        let taken = sql::exists(&mut conn, req.name).await?
            || rows::get(self.db(), &target.id, req.name).await?.is_some();
        if taken {
            return Err(refused(
                "subscription_exists",
                format!("name: this database has a subscription {}", req.name),
            ));
        }
        let source = self.subscription_source(&target.org_id, req.source).await?;
        if let Source::Plateau(d) = &source
            && d.id == target.id
        {
            return Err(refused(
                "invalid_source",
                "source: a database cannot subscribe to itself".to_owned(),
            ));
        }
        let (_, source_major) = self.preflight(target, &source, req.publication).await?;
        // A failover slot (17 on both ends): the source's standbys keep a
        // copy, so the subscription follows a failover of the source.
        let failover = source_major >= 17 && crate::local::failover_slots(&target.version);
        let slot = slot_name(&target.id, req.name);
        let (conninfo, display, source_role) = match &source {
            Source::Plateau(d) => {
                let conninfo = self.make_source_role(d, &slot).await?;
                (conninfo, d.id.clone(), slot.clone())
            }
            Source::External(e) => (e.conninfo(), e.display(), String::new()),
        };
        let made = sql::create(
            &mut conn,
            &placement.owner,
            &NewSubscription {
                name: req.name,
                conninfo: &conninfo,
                publication: req.publication,
                slot: &slot,
                copy_data: req.copy_data,
                failover,
            },
        )
        .await;
        let row = Subscription {
            database_id: target.id.clone(),
            name: req.name.to_owned(),
            org_id: target.org_id.clone(),
            source_database_id: match &source {
                Source::Plateau(d) => Some(d.id.clone()),
                Source::External(_) => None,
            },
            source_display: display,
            publication: req.publication.to_owned(),
            source_role,
            slot_name: slot,
            copy_data: i64::from(req.copy_data),
            created_at: time::now_ms(),
        };
        let kept = match made {
            Ok(()) => rows::insert(self.db(), &row).await.map_err(Error::from),
            Err(e) => Err(e),
        };
        if let Err(e) = kept {
            let _ = sql::drop(&mut conn, req.name).await;
            self.drop_source_role(&row).await;
            return Err(e);
        }
        let _ = conn.close().await;
        Ok(row)
    }

    /// Makes the login role of a subscription on Plateau source `d`; the
    /// connection string that logs in as it, through the write endpoint.
    async fn make_source_role(&self, d: &Database, role: &str) -> Result<String> {
        let placement = DatabaseService::placement(d)?;
        let password = DatabaseService::generate_password();
        let mut conn = self.admin(d).await?;
        // What an interrupted try may have left: its slot, its role.
        drop_idle_slot(&mut conn, role).await?;
        drop_role(&mut conn, role).await?;
        let quoted = quote_ident(role);
        sqlx::query(&format!(
            "CREATE ROLE {quoted} LOGIN REPLICATION NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS INHERIT PASSWORD {}",
            quote_literal(&crate::scram::verifier(&password))
        ))
        .execute(&mut conn)
        .await?;
        sqlx::query(&format!(
            "GRANT {} TO {quoted}",
            quote_ident(&placement.owner)
        ))
        .execute(&mut conn)
        .await?;
        let _ = conn.close().await;
        Ok(source::conninfo(&[
            ("host", &placement.address),
            ("port", &placement.write_port().to_string()),
            ("dbname", &placement.database),
            ("user", role),
            ("password", &password),
            ("sslmode", "prefer"),
            ("connect_timeout", "10"),
        ]))
    }

    /// Removes what subscription `s` left on its Plateau source: its slot
    /// (when no subscriber streams from it) and its role. Best effort: a
    /// source that is gone took them along.
    pub(crate) async fn drop_source_role(&self, s: &Subscription) {
        let Some(id) = &s.source_database_id else {
            return;
        };
        let Ok(Some(d)) = dbs::get(self.db(), &s.org_id, id).await else {
            return;
        };
        let Ok(mut conn) = self.admin(&d).await else {
            return;
        };
        let _ = drop_idle_slot(&mut conn, &s.slot_name).await;
        if !s.source_role.is_empty() {
            let _ = drop_role(&mut conn, &s.source_role).await;
        }
        let _ = conn.close().await;
    }

    /// Drops subscription `s` of `target` (and its slot on the source,
    /// through the subscriber when the source answers), what it made on a
    /// Plateau source, and its row.
    pub async fn unsubscribe(&self, target: &Database, s: &Subscription) -> Result<()> {
        let mut conn = self.admin(target).await?;
        sql::drop(&mut conn, &s.name).await?;
        let _ = conn.close().await;
        self.drop_source_role(s).await;
        rows::remove(self.db(), &s.database_id, &s.name).await?;
        Ok(())
    }

    /// Drops every subscription of `target`, which is being deleted, so
    /// no slot on a source keeps its WAL for a subscriber that is gone.
    pub(crate) async fn unsubscribe_all(&self, target: &Database) -> Result<()> {
        for s in rows::of(self.db(), &target.id).await? {
            if let Err(e) = self.unsubscribe(target, &s).await {
                tracing::warn!(database = %target.id, subscription = %s.name, "dropping a subscription: {e}");
                self.drop_source_role(&s).await;
                rows::remove(self.db(), &s.database_id, &s.name).await?;
            }
        }
        Ok(())
    }
}

/// Drops replication slot `slot` unless a subscriber streams from it.
async fn drop_idle_slot(conn: &mut sqlx::PgConnection, slot: &str) -> Result<()> {
    sqlx::query(
        "SELECT pg_catalog.pg_drop_replication_slot(slot_name) \
         FROM pg_catalog.pg_replication_slots WHERE slot_name = $1 AND NOT active",
    )
    .bind(slot)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Drops the host's role `role` if it exists; `DROP OWNED` first takes
/// away what the tenant may have granted it.
async fn drop_role(conn: &mut sqlx::PgConnection, role: &str) -> Result<()> {
    let found = sqlx::query("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1")
        .bind(role)
        .fetch_optional(&mut *conn)
        .await?;
    if found.is_some() {
        let quoted = quote_ident(role);
        for sql in [
            format!("DROP OWNED BY {quoted}"),
            format!("DROP ROLE {quoted}"),
        ] {
            sqlx::query(&sql).execute(&mut *conn).await?;
        }
    }
    Ok(())
}

pub mod status;
