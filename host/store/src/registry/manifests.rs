//! Manifests (their exact bytes, media type, subject and artifact type),
//! what each references, and tags.

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Manifest {
    pub digest: String,
    pub media_type: String,
    pub size: i64,
    pub content: Vec<u8>,
}

/// A manifest as the referrers API describes it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Referrer {
    pub digest: String,
    pub media_type: String,
    pub size: i64,
    pub artifact_type: Option<String>,
    pub annotations: Option<String>,
}

/// A manifest to store.
pub struct NewManifest<'a> {
    pub org_id: &'a str,
    pub repository: &'a str,
    pub digest: &'a str,
    pub media_type: &'a str,
    pub artifact_type: Option<&'a str>,
    pub subject: Option<&'a str>,
    pub annotations: Option<String>,
    pub content: &'a [u8],
    /// Blobs and child manifests it references.
    pub references: Vec<String>,
}

/// Stores a manifest (again: the bytes are the same for the same digest).
pub async fn put(tx: &mut Tx, m: &NewManifest<'_>, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO registry_manifests (repository, digest, org_id, media_type, artifact_type, \
         subject, annotations, size, content, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT (repository, digest) DO NOTHING",
    )
    .bind(m.repository)
    .bind(m.digest)
    .bind(m.org_id)
    .bind(m.media_type)
    .bind(m.artifact_type)
    .bind(m.subject)
    .bind(&m.annotations)
    .bind(m.content.len() as i64)
    .bind(m.content.to_vec())
    .bind(now)
    .execute(tx.conn())
    .await?;
    for digest in &m.references {
        sqlx::query(
            "INSERT INTO registry_manifest_references (repository, manifest, digest, org_id) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (repository, manifest, digest) DO NOTHING",
        )
        .bind(m.repository)
        .bind(m.digest)
        .bind(digest)
        .bind(m.org_id)
        .execute(tx.conn())
        .await?;
    }
    Ok(())
}

pub async fn get(db: &Db, repository: &str, digest: &str) -> Result<Option<Manifest>> {
    Ok(sqlx::query_as(
        "SELECT digest, media_type, size, content FROM registry_manifests \
         WHERE repository = $1 AND digest = $2",
    )
    .bind(repository)
    .bind(digest)
    .fetch_optional(db.pool())
    .await?)
}

/// A manifest's media type and size inside a transaction (index children).
pub async fn describe(
    tx: &mut Tx,
    repository: &str,
    digest: &str,
) -> Result<Option<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT media_type, size FROM registry_manifests WHERE repository = $1 AND digest = $2",
    )
    .bind(repository)
    .bind(digest)
    .fetch_optional(tx.conn())
    .await?)
}

/// Deletes a manifest, its references and the tags pointing at it;
/// returns the tags removed, or None if it did not exist.
pub async fn delete(tx: &mut Tx, repository: &str, digest: &str) -> Result<Option<Vec<String>>> {
    let done = sqlx::query("DELETE FROM registry_manifests WHERE repository = $1 AND digest = $2")
        .bind(repository)
        .bind(digest)
        .execute(tx.conn())
        .await?;
    if done.rows_affected() == 0 {
        return Ok(None);
    }
    sqlx::query("DELETE FROM registry_manifest_references WHERE repository = $1 AND manifest = $2")
        .bind(repository)
        .bind(digest)
        .execute(tx.conn())
        .await?;
    let tags: Vec<(String,)> = sqlx::query_as(
        "DELETE FROM registry_tags WHERE repository = $1 AND digest = $2 RETURNING tag",
    )
    .bind(repository)
    .bind(digest)
    .fetch_all(tx.conn())
    .await?;
    Ok(Some(tags.into_iter().map(|(t,)| t).collect()))
}

/// Points a tag at a digest.
pub async fn set_tag(
    tx: &mut Tx,
    org_id: &str,
    repository: &str,
    tag: &str,
    digest: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO registry_tags (repository, tag, digest, org_id, updated_at) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (repository, tag) DO UPDATE SET digest = excluded.digest, \
         updated_at = excluded.updated_at",
    )
    .bind(repository)
    .bind(tag)
    .bind(digest)
    .bind(org_id)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn resolve_tag(db: &Db, repository: &str, tag: &str) -> Result<Option<String>> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT digest FROM registry_tags WHERE repository = $1 AND tag = $2")
            .bind(repository)
            .bind(tag)
            .fetch_optional(db.pool())
            .await?;
    Ok(row.map(|(d,)| d))
}

/// Removes a tag; returns the digest it pointed at.
pub async fn delete_tag(tx: &mut Tx, repository: &str, tag: &str) -> Result<Option<String>> {
    let row: Option<(String,)> = sqlx::query_as(
        "DELETE FROM registry_tags WHERE repository = $1 AND tag = $2 RETURNING digest",
    )
    .bind(repository)
    .bind(tag)
    .fetch_optional(tx.conn())
    .await?;
    Ok(row.map(|(d,)| d))
}

/// Tags of a repository in byte order, after `last`.
pub async fn list_tags(
    db: &Db,
    repository: &str,
    last: Option<&str>,
    limit: i64,
) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT tag FROM registry_tags WHERE repository = $1 AND tag > $2 ORDER BY tag LIMIT $3",
    )
    .bind(repository)
    .bind(last.unwrap_or(""))
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    Ok(rows.into_iter().map(|(t,)| t).collect())
}

/// Manifests of a repository whose subject is `digest`, optionally of one
/// artifact type, oldest first.
pub async fn referrers(
    db: &Db,
    repository: &str,
    digest: &str,
    artifact_type: Option<&str>,
) -> Result<Vec<Referrer>> {
    let base = "SELECT digest, media_type, size, artifact_type, annotations FROM registry_manifests \
                WHERE repository = $1 AND subject = $2";
    let rows = match artifact_type {
        Some(t) => {
            sqlx::query_as(&format!(
                "{base} AND artifact_type = $3 ORDER BY created_at, digest"
            ))
            .bind(repository)
            .bind(digest)
            .bind(t)
            .fetch_all(db.pool())
            .await?
        }
        None => {
            sqlx::query_as(&format!("{base} ORDER BY created_at, digest"))
                .bind(repository)
                .bind(digest)
                .fetch_all(db.pool())
                .await?
        }
    };
    Ok(rows)
}
