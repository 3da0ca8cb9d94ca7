//! An organisation's members and invitations: listing, role changes and
//! removal that never leave it without an owner, and invitations accepted
//! once, before they expire.
//!
//! The last-owner rule is checked inside the transaction that would break
//! it, after the owners' rows are read for update (PostgreSQL) or under
//! SQLite's one writer, so two owners demoting each other at once cannot
//! both succeed.

use plateau_core::Role;
use sqlx::FromRow;

use crate::orgs::Member;
use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Invite {
    pub id: String,
    pub org_id: String,
    pub email: String,
    pub role: String,
    pub invited_by: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
    pub accepted_at: Option<i64>,
    pub accepted_user: Option<String>,
    pub revoked_at: Option<i64>,
}

const INVITE_COLUMNS: &str = "id, org_id, email, role, invited_by, created_at, expires_at, \
                              accepted_at, accepted_user, revoked_at";

const MEMBER_FROM: &str = "memberships m JOIN users u ON u.id = m.user_id";
const MEMBER_COLUMNS: &str = "m.user_id AS user_id, u.name AS name, u.email AS email, \
                              m.role AS role, m.created_at AS created_at";

/// Members of an organisation, in user id order.
pub async fn list(db: &Db, org_id: &str, keyset: &Keyset) -> Result<Listed<Member>> {
    let mut conds = Conditions::new();
    conds.push("m.org_id = ?", Bind::Text(org_id.to_owned()));
    crate::query::list(
        db.pool(),
        MEMBER_COLUMNS,
        MEMBER_FROM,
        conds,
        keyset,
        "m.user_id",
        Order::Asc,
    )
    .await
}

/// One member, read inside `tx`.
pub async fn get(tx: &mut Tx, org_id: &str, user_id: &str) -> Result<Option<Member>> {
    let lock = if tx.is_sqlite() {
        ""
    } else {
        " FOR UPDATE OF m"
    };
    let sql = format!(
        "SELECT {MEMBER_COLUMNS} FROM {MEMBER_FROM} WHERE m.org_id = $1 AND m.user_id = $2{lock}"
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(user_id)
        .fetch_optional(tx.conn())
        .await?)
}

/// The organisation's owners, their rows locked until `tx` ends.
pub async fn owners_for_update(tx: &mut Tx, org_id: &str) -> Result<i64> {
    let lock = if tx.is_sqlite() { "" } else { " FOR UPDATE" };
    let sql = format!("SELECT user_id FROM memberships WHERE org_id = $1 AND role = 'owner'{lock}");
    let rows: Vec<(String,)> = sqlx::query_as(&sql)
        .bind(org_id)
        .fetch_all(tx.conn())
        .await?;
    Ok(rows.len() as i64)
}

pub async fn set_role(tx: &mut Tx, org_id: &str, user_id: &str, role: Role) -> Result<()> {
    sqlx::query("UPDATE memberships SET role = $3 WHERE org_id = $1 AND user_id = $2")
        .bind(org_id)
        .bind(user_id)
        .bind(role.as_str())
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Removes the membership and revokes the user's tokens in the
/// organisation (they would fail to authenticate anyway; revoked, they
/// stay refused if the user is invited back).
pub async fn remove(tx: &mut Tx, org_id: &str, user_id: &str, now: i64) -> Result<()> {
    sqlx::query("DELETE FROM memberships WHERE org_id = $1 AND user_id = $2")
        .bind(org_id)
        .bind(user_id)
        .execute(tx.conn())
        .await?;
    sqlx::query(
        "UPDATE tokens SET revoked_at = $3 WHERE org_id = $1 AND user_id = $2 AND revoked_at IS NULL",
    )
    .bind(org_id)
    .bind(user_id)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn insert_invite(tx: &mut Tx, invite: &Invite, secret_hash: &str) -> Result<()> {
    sqlx::query(
        "INSERT INTO member_invites (id, org_id, email, role, secret_hash, invited_by, created_at, \
         expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&invite.id)
    .bind(&invite.org_id)
    .bind(&invite.email)
    .bind(&invite.role)
    .bind(secret_hash)
    .bind(&invite.invited_by)
    .bind(invite.created_at)
    .bind(invite.expires_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Invitations of an organisation, oldest first.
pub async fn list_invites(db: &Db, org_id: &str, keyset: &Keyset) -> Result<Listed<Invite>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    crate::query::list(
        db.pool(),
        INVITE_COLUMNS,
        "member_invites",
        conds,
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

pub async fn get_invite(tx: &mut Tx, org_id: &str, id: &str) -> Result<Option<Invite>> {
    let sql = format!("SELECT {INVITE_COLUMNS} FROM member_invites WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

/// The invitation whose secret hashes to `secret_hash`, in any state.
pub async fn invite_by_secret(tx: &mut Tx, secret_hash: &str) -> Result<Option<Invite>> {
    let sql = format!("SELECT {INVITE_COLUMNS} FROM member_invites WHERE secret_hash = $1");
    Ok(sqlx::query_as(&sql)
        .bind(secret_hash)
        .fetch_optional(tx.conn())
        .await?)
}

/// Marks an open invitation accepted by `user_id`; false if it was no
/// longer open (accepted, revoked or expired meanwhile).
pub async fn mark_accepted(tx: &mut Tx, id: &str, user_id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE member_invites SET accepted_at = $3, accepted_user = $2 WHERE id = $1 \
         AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $3",
    )
    .bind(id)
    .bind(user_id)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Revokes an open invitation; false if it was not open.
pub async fn revoke_invite(tx: &mut Tx, org_id: &str, id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE member_invites SET revoked_at = $3 WHERE org_id = $1 AND id = $2 \
         AND accepted_at IS NULL AND revoked_at IS NULL",
    )
    .bind(org_id)
    .bind(id)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}
