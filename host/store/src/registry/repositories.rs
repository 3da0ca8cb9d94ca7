//! Repositories of an organisation, recorded on first use.

use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

/// Records a repository on first use.
pub async fn ensure(tx: &mut Tx, org_id: &str, name: &str, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO registry_repositories (org_id, name, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (org_id, name) DO NOTHING",
    )
    .bind(org_id)
    .bind(name)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn exists(db: &Db, org_id: &str, name: &str) -> Result<bool> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT name FROM registry_repositories WHERE org_id = $1 AND name = $2")
            .bind(org_id)
            .bind(name)
            .fetch_optional(db.pool())
            .await?;
    Ok(row.is_some())
}

/// Repositories of an organisation in byte order, after `last`.
pub async fn list(db: &Db, org_id: &str, last: Option<&str>, limit: i64) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT name FROM registry_repositories WHERE org_id = $1 AND name > $2 \
         ORDER BY name LIMIT $3",
    )
    .bind(org_id)
    .bind(last.unwrap_or(""))
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    Ok(rows.into_iter().map(|(n,)| n).collect())
}

/// A repository as the API lists it: its tags, when a tag last moved,
/// and the bytes of the blobs it may serve.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Summary {
    pub name: String,
    pub created_at: i64,
    pub tag_count: i64,
    pub pushed_at: Option<i64>,
    pub size_bytes: i64,
}

const SUMMARY_COLUMNS: &str = "name, created_at, \
    (SELECT COUNT(*) FROM registry_tags t WHERE t.repository = r.name) AS tag_count, \
    (SELECT MAX(t.updated_at) FROM registry_tags t WHERE t.repository = r.name) AS pushed_at, \
    (SELECT CAST(COALESCE(SUM(b.size), 0) AS BIGINT) FROM registry_repository_blobs rb \
       JOIN registry_blobs b ON b.org_id = rb.org_id AND b.digest = rb.digest \
       WHERE rb.repository = r.name) AS size_bytes";

/// An organisation's repositories with their summaries, by name.
pub async fn summaries(db: &Db, org_id: &str, keyset: &Keyset) -> Result<Listed<Summary>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    crate::query::list(
        db.pool(),
        SUMMARY_COLUMNS,
        "registry_repositories r",
        conds,
        keyset,
        "name",
        Order::Asc,
    )
    .await
}

/// One repository's summary, if the organisation has it.
pub async fn summary(db: &Db, org_id: &str, name: &str) -> Result<Option<Summary>> {
    let sql = format!(
        "SELECT {SUMMARY_COLUMNS} FROM registry_repositories r WHERE org_id = $1 AND name = $2"
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(name)
        .fetch_optional(db.pool())
        .await?)
}

/// A tag and the manifest it names.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Tag {
    pub tag: String,
    pub digest: String,
    pub updated_at: i64,
}

/// A repository's tags, by name.
pub async fn tags(db: &Db, repository: &str, keyset: &Keyset) -> Result<Listed<Tag>> {
    let mut conds = Conditions::new();
    conds.push("repository = ?", Bind::Text(repository.to_owned()));
    crate::query::list(
        db.pool(),
        "tag, digest, updated_at",
        "registry_tags",
        conds,
        keyset,
        "tag",
        Order::Asc,
    )
    .await
}
