//! Runs a plain SQL dump into a database (issue 32, managed dump
//! restore): in one transaction, over a connection as the database's
//! owner role (never a superuser), statement by statement as
//! [`super::script`] splits and sorts them, COPY rows through the COPY
//! protocol. The first error rolls everything back and is the job's root
//! cause, with its line. Afterwards, the row count of every table.

use std::collections::{BTreeMap, HashSet};

use sqlx::postgres::PgConnection;
use sqlx::{Connection as _, Row as _};
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _};

use super::quote_ident;
use super::script::{Piece, Splitter};
use super::statement::{self, Kind};
use crate::{Error, Result};

/// `line N: message (SQLSTATE x)` of a statement the server refused.
fn at_line(line: usize, e: sqlx::Error) -> Error {
    match super::query_error(e) {
        Error::Query(m) => Error::Query(format!("line {line}: {m}")),
        other => other,
    }
}

/// Runs the dump read from `input` in one transaction on `conn`; the
/// extensions the database has (`installed`, by their SQL names) are the
/// only ones its `CREATE EXTENSION` statements may name. Once `input`
/// ends, `ended` says whether it ended whole (what wrote it read the
/// whole dump): only then does the transaction commit. Nothing stays of
/// a dump that fails.
pub async fn restore(
    conn: &mut PgConnection,
    mut input: impl AsyncBufRead + Unpin,
    installed: &HashSet<String>,
    ended: impl std::future::Future<Output = Result<()>>,
) -> Result<()> {
    let mut tx = conn.begin().await?;
    // Whatever the tenant set on its role or database (pg_dump's output
    // sets its own).
    sqlx::Executor::execute(&mut *tx, sqlx::raw_sql("SET LOCAL search_path = public")).await?;
    let mut splitter = Splitter::default();
    let mut raw = Vec::new();
    loop {
        raw.clear();
        if input.read_until(b'\n', &mut raw).await? == 0 {
            break;
        }
        let mut pieces = Vec::new();
        splitter.line(&raw, &mut pieces)?;
        for piece in pieces {
            let Piece::Statement { line, sql } = piece else {
                continue;
            };
            match statement::kind(&sql) {
                Kind::Skip => continue,
                Kind::Refuse(why) => {
                    return Err(Error::Refused {
                        code: "dump_refused",
                        detail: format!("line {line}: {why}"),
                    });
                }
                Kind::Extension(name) if installed.contains(&name) => continue,
                Kind::Extension(name) => {
                    return Err(Error::Refused {
                        code: "extension_not_seeded",
                        detail: format!(
                            "line {line}: the dump creates extension {name}, which this database does not have; name it in preSeed (one of {})",
                            crate::spec::EXTENSIONS.join(", ")
                        ),
                    });
                }
                Kind::Run => {}
            }
            if statement::is_copy_from_stdin(&sql) {
                copy(&mut tx, &mut splitter, &mut input, line, &sql).await?;
            } else {
                sqlx::Executor::execute(&mut *tx, sqlx::raw_sql(&sql))
                    .await
                    .map_err(|e| at_line(line, e))?;
            }
        }
    }
    splitter.finish()?;
    ended.await?;
    tx.commit().await?;
    Ok(())
}

/// Sends the rows of the COPY block `sql` (read on from `input`) through
/// the COPY protocol.
async fn copy(
    conn: &mut PgConnection,
    splitter: &mut Splitter,
    input: &mut (impl AsyncBufRead + Unpin),
    line: usize,
    sql: &str,
) -> Result<()> {
    let mut sink = conn.copy_in_raw(sql).await.map_err(|e| at_line(line, e))?;
    let mut raw = Vec::new();
    loop {
        raw.clear();
        if input.read_until(b'\n', &mut raw).await? == 0 {
            let _ = sink.abort("the dump ends inside the rows of a COPY").await;
            return Err(Error::Refused {
                code: "dump_refused",
                detail: format!("line {line}: the dump ends inside the rows of this COPY"),
            });
        }
        let mut pieces = Vec::new();
        splitter.line(&raw, &mut pieces)?;
        for piece in pieces {
            match piece {
                Piece::Rows(rows) => {
                    sink.send(rows).await.map_err(|e| at_line(line, e))?;
                }
                Piece::CopyEnd { .. } => {
                    sink.finish().await.map_err(|e| at_line(line, e))?;
                    return Ok(());
                }
                Piece::Statement { .. } => {}
            }
        }
    }
}

/// The extensions the database has, by their SQL names.
pub async fn installed(conn: &mut PgConnection) -> Result<HashSet<String>> {
    let rows = sqlx::query("SELECT extname::pg_catalog.text FROM pg_catalog.pg_extension")
        .fetch_all(&mut *conn)
        .await?;
    Ok(rows.iter().map(|r| r.get::<String, _>(0)).collect())
}

/// The number of rows of every table outside the system's schemas, by
/// `schema.table`.
pub async fn table_counts(conn: &mut PgConnection) -> Result<BTreeMap<String, i64>> {
    let tables = sqlx::query(
        "SELECT n.nspname::pg_catalog.text, c.relname::pg_catalog.text FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p']::pg_catalog.\"char\"[]) \
         AND n.nspname OPERATOR(pg_catalog.<>) ALL (ARRAY['pg_catalog', 'information_schema']) \
         AND n.nspname::pg_catalog.text NOT LIKE 'pg\\_%' ORDER BY 1, 2",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut out = BTreeMap::new();
    for t in tables {
        let (schema, table): (String, String) = (t.get(0), t.get(1));
        let sql = format!(
            "SELECT pg_catalog.count(*) FROM {}.{}",
            quote_ident(&schema),
            quote_ident(&table)
        );
        let n: i64 = sqlx::query_scalar(&sql).fetch_one(&mut *conn).await?;
        out.insert(format!("{schema}.{table}"), n);
    }
    Ok(out)
}
