//! Extensions: the allowlist of spec section 8, which of them the
//! cluster's server has files for, which are created, and creating one
//! through the host's role in the owner's database. An extension's script
//! runs as a superuser with the target schema (the customer's) on its
//! `search_path`, `pg_catalog` first: the same exposure as PostgreSQL's
//! trusted extensions, which a database owner may create alone. The
//! allowlist holds contrib modules, whose scripts PostgreSQL writes to be
//! safe there, and pgvector.

use serde::Serialize;
use sqlx::{PgConnection, Row};
use utoipa::ToSchema;

use super::{is_plain_identifier, query_error, quote_ident};
use crate::spec::{EXTENSIONS, extension_sql_name};
use crate::{Error, Result};

/// One allowlisted extension in one cluster.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionView {
    pub name: String,
    /// Whether this host's server has its files.
    pub available: bool,
    /// Whether it is created in the database.
    pub installed: bool,
    /// The schema it lives in, once created.
    pub schema: Option<String>,
    pub version: Option<String>,
}

/// The allowlist with what the cluster has.
pub async fn list(conn: &mut PgConnection, available: &[String]) -> Result<Vec<ExtensionView>> {
    let rows = sqlx::query(
        "SELECT e.extname::pg_catalog.text, n.nspname::pg_catalog.text, e.extversion \
         FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(EXTENSIONS
        .iter()
        .map(|name| {
            let sql_name = extension_sql_name(name);
            let created = rows.iter().find(|r| r.get::<String, _>(0) == sql_name);
            ExtensionView {
                name: (*name).to_owned(),
                available: available.iter().any(|a| a == sql_name),
                installed: created.is_some(),
                schema: created.map(|r| r.get(1)),
                version: created.map(|r| r.get(2)),
            }
        })
        .collect())
}

/// Creates an allowlisted extension in `schema` (default `public`).
pub async fn create(
    conn: &mut PgConnection,
    available: &[String],
    version: &str,
    name: &str,
    schema: Option<&str>,
) -> Result<()> {
    if !EXTENSIONS.contains(&name) {
        return Err(Error::Refused {
            code: "extension_not_allowed",
            detail: format!(
                "the extension {name} is not offered; choose one of {}",
                EXTENSIONS.join(", ")
            ),
        });
    }
    let sql_name = extension_sql_name(name);
    if !available.iter().any(|a| a == sql_name) {
        return Err(Error::Refused {
            code: "extension_not_installed",
            detail: format!(
                "the extension {name} is not installed on this host's PostgreSQL {version}; choose another version or ask the operator to install it"
            ),
        });
    }
    let schema = schema.unwrap_or("public");
    if !is_plain_identifier(schema) {
        return Err(Error::Refused {
            code: "invalid_schema",
            detail: "schema must be a lowercase identifier".to_owned(),
        });
    }
    let found =
        sqlx::query("SELECT pg_catalog.count(*) FROM pg_catalog.pg_namespace WHERE nspname = $1")
            .bind(schema)
            .fetch_one(&mut *conn)
            .await?;
    if found.get::<i64, _>(0) == 0 {
        return Err(Error::Missing(format!("schema {schema} does not exist")));
    }
    let sql = format!(
        "CREATE EXTENSION IF NOT EXISTS {} SCHEMA {}",
        quote_ident(sql_name),
        quote_ident(schema)
    );
    sqlx::Executor::execute(&mut *conn, sqlx::raw_sql(&sql))
        .await
        .map_err(query_error)?;
    Ok(())
}
