//! Zero-downtime rotation of a database's connection password (spec 4.6:
//! `PUT /databases/{id}/rotation`, `.../rotate`, `.../migrate`).
//!
//! PostgreSQL keeps one password per role and pgbouncer one verifier per
//! user, so no single role can accept an old and a new password at once.
//! A database therefore has two login roles that act alike: its owner
//! role, and [`alias_of`] it (`plateau_<owner>`, made by `migrate`: a
//! member of the owner whose sessions start as the owner, `SET role`, so
//! whatever it creates is the owner's). The connection details name the
//! current one. A rotation gives the *other* role a new password and makes
//! it current; the previous one keeps its password for the overlap
//! (`ServiceConfig::rotation_overlap`), during which both the old and the
//! new URI log in, then the agent removes it (`PASSWORD NULL`): the old
//! URI is refused from then on. Sessions already open are not ended. The
//! schedule (`intervalDays`) and the overlap's end live in the store
//! (`database_rotations`) and are acted on by the agent's supervision
//! rounds, so they survive restarts of either process.

use plateau_core::time;
use plateau_store::databases::rotations::{self, Rotation};
use plateau_store::databases::{self, Database};
use plateau_store::events::{Actor, NewEvent};
use sqlx::{Connection as _, PgConnection, Row};

use crate::local::{quote_ident, quote_literal};
use crate::scram;
use crate::service::{DatabaseService, Which};
use crate::spec::Placement;
use crate::{Error, Result};

/// The second login role of a database whose owner is `owner`. The
/// `plateau_` prefix is the host's: no customer can make or drop it.
pub fn alias_of(owner: &str) -> String {
    format!("plateau_{owner}")
}

/// Whether a scheduled rotation of `r` is due at `now` (milliseconds).
pub fn due(r: &Rotation, now: i64) -> bool {
    let since = r.rotated_at.unwrap_or(r.updated_at);
    r.interval_days > 0 && now >= since.saturating_add(r.interval_days * 86_400_000)
}

/// Makes the alias of `owner` what it must be: a login role (without a
/// password until a rotation gives it one) that is nothing but the owner.
async fn ensure_alias(conn: &mut PgConnection, database: &str, owner: &str) -> Result<()> {
    let alias = alias_of(owner);
    let a = quote_ident(&alias);
    let o = quote_ident(owner);
    let exists = sqlx::query("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1")
        .bind(&alias)
        .fetch_optional(&mut *conn)
        .await?
        .is_some();
    let attributes = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT";
    let statements = [
        if exists {
            format!("ALTER ROLE {a} {attributes}")
        } else {
            format!("CREATE ROLE {a} {attributes}")
        },
        format!("GRANT {o} TO {a}"),
        format!("ALTER ROLE {a} SET role = {}", quote_literal(owner)),
        format!("GRANT CONNECT ON DATABASE {} TO {a}", quote_ident(database)),
    ];
    for sql in statements {
        sqlx::Executor::execute(&mut *conn, sqlx::raw_sql(&sql)).await?;
    }
    Ok(())
}

/// Gives `role` the password `password`, or none (it can no longer log in
/// with one).
async fn set_password(conn: &mut PgConnection, role: &str, password: Option<&str>) -> Result<()> {
    let clause = match password {
        Some(p) => quote_literal(&scram::verifier(p)),
        None => "NULL".to_owned(),
    };
    let sql = format!("ALTER ROLE {} PASSWORD {clause}", quote_ident(role));
    sqlx::Executor::execute(&mut *conn, sqlx::raw_sql(&sql)).await?;
    Ok(())
}

/// Whether `role` exists in the cluster.
async fn role_exists(conn: &mut PgConnection, role: &str) -> Result<bool> {
    let row = sqlx::query("SELECT pg_catalog.count(*) FROM pg_catalog.pg_roles WHERE rolname = $1")
        .bind(role)
        .fetch_one(&mut *conn)
        .await?;
    Ok(row.get::<i64, _>(0) > 0)
}

impl DatabaseService {
    /// Database `d`'s rotation state (the defaults when never set).
    pub async fn rotation(&self, d: &Database) -> Result<Rotation> {
        Ok(rotations::get(self.db(), &d.id)
            .await?
            .unwrap_or_else(|| Rotation {
                database_id: d.id.clone(),
                org_id: d.org_id.clone(),
                updated_at: d.created_at,
                ..Rotation::default()
            }))
    }

    /// The role and password the connection details name.
    pub async fn login(&self, d: &Database, placement: &Placement) -> Result<(String, String)> {
        let password = self.credentials(d)?.owner_password;
        let r = self.rotation(d).await?;
        let role = match r.login_role.as_str() {
            "" => placement.owner.clone(),
            role => role.to_owned(),
        };
        Ok((role, password))
    }

    /// Makes the alias login role (`migrate`); idempotent.
    pub async fn migrate_rotation(&self, d: &Database) -> Result<Rotation> {
        let placement = Self::placement(d)?;
        let mut conn = self.admin(d).await?;
        let made = ensure_alias(&mut conn, &placement.database, &placement.owner).await;
        let _ = conn.close().await;
        made?;
        self.rotation(d).await
    }

    /// Sets the schedule: a rotation every `days` days (0: on demand only),
    /// counted from the last rotation.
    pub async fn set_rotation_interval(&self, d: &Database, days: i64) -> Result<Rotation> {
        let mut r = self.migrate_rotation(d).await?;
        r.interval_days = days;
        r.updated_at = time::now_ms();
        let mut tx = self.db().begin().await?;
        rotations::put(&mut tx, &r).await?;
        tx.commit().await?;
        Ok(r)
    }

    /// Rotates now: the other login role gets a new password and becomes
    /// the one the connection details name; the current one keeps its
    /// password until the overlap ends. Recorded with `event` (its data
    /// completed here). The caller holds the cluster's lock.
    pub async fn rotate(&self, d: &Database, event: NewEvent) -> Result<Rotation> {
        let placement = Self::placement(d)?;
        let mut r = self.migrate_rotation(d).await?;
        let alias = alias_of(&placement.owner);
        let (current, next) = if r.login_role.is_empty() || r.login_role == placement.owner {
            (placement.owner.clone(), alias)
        } else {
            (alias, placement.owner.clone())
        };
        let password = Self::generate_password();
        // The new password works before anything names it: a failure
        // after this leaves a role with a password nobody was given.
        let mut conn = self.admin(d).await?;
        let set = set_password(&mut conn, &next, Some(&password)).await;
        let _ = conn.close().await;
        set?;
        let now = time::now_ms();
        let overlap = self.config().rotation_overlap.as_millis() as i64;
        r.login_role = if next == placement.owner {
            String::new()
        } else {
            next.clone()
        };
        r.retiring_role = current.clone();
        r.retire_at = Some(now + overlap);
        r.rotated_at = Some(now);
        r.updated_at = now;
        let sealed = self.seal(&d.org_id, &d.id, Which::Owner, &password)?;
        let event = event.data(serde_json::json!({
            "role": next,
            "previousRole": current,
            "previousRetiresAt": time::to_rfc3339(now + overlap),
        }));
        let mut tx = self.db().begin().await?;
        rotations::put(&mut tx, &r).await?;
        rotations::set_owner_password(&mut tx, &d.id, &sealed, now).await?;
        plateau_store::events::record(&mut tx, &event, now).await?;
        tx.commit().await?;
        Ok(r)
    }

    /// What the agent's rounds do for a healthy cluster: end an overlap
    /// that is over, and rotate when the schedule says so.
    pub(crate) async fn rotate_when_due(&self, d: &Database) -> Result<()> {
        let Some(r) = rotations::get(self.db(), &d.id).await? else {
            return Ok(());
        };
        let now = time::now_ms();
        if !r.retiring_role.is_empty() && r.retire_at.is_some_and(|at| now >= at) {
            self.retire(d, r.clone()).await?;
        }
        if due(&r, now) {
            let event = NewEvent::audited(
                &d.org_id,
                "database.password_rotated",
                "resources",
                "update",
                &Actor::system(),
            )
            .resource("database", &d.id);
            // Read again: the retirement above changed the row.
            let d = databases::get(self.db(), &d.org_id, &d.id)
                .await?
                .ok_or_else(|| Error::NotPlaced(format!("database {} is gone", d.id)))?;
            self.rotate(&d, event).await?;
        }
        Ok(())
    }

    /// Removes the password of the role the last rotation left behind.
    async fn retire(&self, d: &Database, mut r: Rotation) -> Result<()> {
        let mut conn = self.admin(d).await?;
        let done = async {
            if role_exists(&mut conn, &r.retiring_role).await? {
                set_password(&mut conn, &r.retiring_role, None).await?;
            }
            Ok::<_, Error>(())
        }
        .await;
        let _ = conn.close().await;
        done?;
        let role = std::mem::take(&mut r.retiring_role);
        r.retire_at = None;
        r.updated_at = time::now_ms();
        let event = NewEvent::audited(
            &d.org_id,
            "database.password_retired",
            "resources",
            "update",
            &Actor::system(),
        )
        .resource("database", &d.id)
        .data(serde_json::json!({ "role": role }));
        let mut tx = self.db().begin().await?;
        rotations::put(&mut tx, &r).await?;
        plateau_store::events::record(&mut tx, &event, r.updated_at).await?;
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rotation_is_due_once_its_interval_has_passed_since_the_last() {
        let day = 86_400_000;
        let mut r = Rotation {
            updated_at: 10 * day,
            ..Rotation::default()
        };
        assert!(!due(&r, 100 * day), "no interval, no schedule");
        r.interval_days = 7;
        assert!(!due(&r, 16 * day));
        assert!(due(&r, 17 * day), "counted from when it was set");
        r.rotated_at = Some(20 * day);
        assert!(!due(&r, 26 * day));
        assert!(due(&r, 27 * day), "counted from the last rotation");
    }
}
