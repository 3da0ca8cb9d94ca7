//! Publications (logical replication, issue 32): list, create (of every
//! table, or of tables named), drop. They are made by the host's role:
//! `FOR ALL TABLES` needs a superuser, and a publication the tenant
//! cannot alter is one whose table list stays what the API shows. Names
//! follow [`super::is_plain_identifier`]; tables are looked up in the
//! catalog before they are quoted into SQL. No tenant code runs: creating
//! a publication reads the catalog only.

use serde::Serialize;
use sqlx::{PgConnection, Row};
use utoipa::ToSchema;

use super::{is_plain_identifier, query_error, quote_ident};
use crate::{Error, Result};

/// A publication as the API shows it.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(as = DatabasePublication)]
#[serde(rename_all = "camelCase")]
pub struct PublicationView {
    pub name: String,
    /// Whether it publishes every table, those made later included.
    pub all_tables: bool,
    /// The tables it publishes now, `schema.table`.
    pub tables: Vec<String>,
}

/// Checks a publication's or a subscription's name.
pub fn check_name(field: &'static str, name: &str) -> Result<()> {
    if !is_plain_identifier(name) || name.starts_with("pg_") {
        return Err(Error::Refused {
            code: "invalid_name",
            detail: format!(
                "{field} is a lowercase letter or _, then lowercase letters, digits or _ (at most 63), not starting with pg_"
            ),
        });
    }
    Ok(())
}

/// Every publication of the database, by name.
pub async fn list(conn: &mut PgConnection) -> Result<Vec<PublicationView>> {
    let rows = sqlx::query(
        "SELECT p.pubname::pg_catalog.text, p.puballtables, t.schemaname::pg_catalog.text, \
         t.tablename::pg_catalog.text FROM pg_catalog.pg_publication p \
         LEFT JOIN pg_catalog.pg_publication_tables t ON t.pubname = p.pubname \
         ORDER BY 1, 3, 4",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut out: Vec<PublicationView> = Vec::new();
    for r in rows {
        let name: String = r.get(0);
        if out.last().is_none_or(|p| p.name != name) {
            out.push(PublicationView {
                name,
                all_tables: r.get(1),
                tables: Vec::new(),
            });
        }
        if let (Some(schema), Some(table)) =
            (r.get::<Option<String>, _>(2), r.get::<Option<String>, _>(3))
            && let Some(p) = out.last_mut()
        {
            p.tables.push(format!("{schema}.{table}"));
        }
    }
    Ok(out)
}

/// Publication `name`, if there is one.
pub async fn get(conn: &mut PgConnection, name: &str) -> Result<Option<PublicationView>> {
    Ok(list(conn).await?.into_iter().find(|p| p.name == name))
}

/// `schema.table` (or `table`, in `public`) as an ordinary or partitioned
/// table of the database: its schema and name as the catalog has them.
pub async fn find_table(conn: &mut PgConnection, qualified: &str) -> Result<(String, String)> {
    let (schema, table) = qualified.split_once('.').unwrap_or(("public", qualified));
    let row = sqlx::query(
        "SELECT n.nspname::pg_catalog.text, c.relname::pg_catalog.text FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p') \
         AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
         AND n.nspname NOT LIKE 'pg\\_%'",
    )
    .bind(schema)
    .bind(table)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| (r.get(0), r.get(1)))
        .ok_or_else(|| Error::Refused {
            code: "table_missing",
            detail: format!("tables: no table {schema}.{table} in this database"),
        })
}

/// Creates publication `name` of every table (`tables` empty) or of
/// `tables`, each checked in the catalog first.
pub async fn create(
    conn: &mut PgConnection,
    name: &str,
    all_tables: bool,
    tables: &[String],
) -> Result<PublicationView> {
    check_name("name", name)?;
    if get(conn, name).await?.is_some() {
        return Err(Error::Refused {
            code: "publication_exists",
            detail: format!("name: a publication {name} already exists"),
        });
    }
    let target = if all_tables {
        "FOR ALL TABLES".to_owned()
    } else {
        let mut quoted = Vec::new();
        for t in tables {
            let (schema, table) = find_table(conn, t).await?;
            let q = format!("{}.{}", quote_ident(&schema), quote_ident(&table));
            if !quoted.contains(&q) {
                quoted.push(q);
            }
        }
        format!("FOR TABLE {}", quoted.join(", "))
    };
    sqlx::query(&format!(
        "CREATE PUBLICATION {} {target}",
        quote_ident(name)
    ))
    .execute(&mut *conn)
    .await
    .map_err(query_error)?;
    get(conn, name)
        .await?
        .ok_or_else(|| Error::Internal(format!("publication {name} is gone once made")))
}

/// Drops publication `name`; a missing one is a 404.
pub async fn drop(conn: &mut PgConnection, name: &str) -> Result<()> {
    if get(conn, name).await?.is_none() {
        return Err(Error::Missing(format!(
            "no publication {name} in this database"
        )));
    }
    sqlx::query(&format!("DROP PUBLICATION {}", quote_ident(name)))
        .execute(&mut *conn)
        .await
        .map_err(query_error)?;
    Ok(())
}
