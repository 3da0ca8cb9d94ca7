//! The SQL console: the tables of the database, and one statement run as
//! the owner role in a transaction that is read-only unless the caller
//! asked to write, with a statement timeout and a row limit.
//!
//! The statement is first parsed as a prepared statement, which PostgreSQL
//! refuses for more than one command: so `COMMIT; DROP ...` can never
//! leave the read-only transaction. It then runs with the simple protocol,
//! so every value comes back as text, whatever its type.

use futures::TryStreamExt;
use serde::Serialize;
use serde_json::Value;
use sqlx::postgres::{PgRow, PgValueRef};
use sqlx::{Column, Executor, PgConnection, Row, TypeInfo, ValueRef};
use utoipa::ToSchema;

use super::query_error;
use crate::Result;

/// Rows a console answer carries at most.
pub const MAX_ROWS: usize = 1000;
/// How long one statement may run.
pub const TIMEOUT_MS: u64 = 10_000;

/// One table, view or materialized view of the database.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TableView {
    pub schema: String,
    pub name: String,
    /// `table`, `view` or `materialized view`.
    pub kind: String,
    /// The planner's estimate of its rows.
    pub estimated_rows: i64,
}

/// What a statement gave.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryResult {
    pub columns: Vec<ColumnView>,
    /// One array per row, in column order: numbers and booleans as JSON
    /// numbers and booleans, JSON as JSON, everything else as text.
    #[schema(value_type = Vec<Vec<Object>>)]
    pub rows: Vec<Vec<Value>>,
    /// How many rows the statement returned or touched.
    pub row_count: u64,
    /// Whether rows past [`MAX_ROWS`] were left out.
    pub truncated: bool,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ColumnView {
    pub name: String,
    /// PostgreSQL's name of its type.
    #[serde(rename = "type")]
    pub type_name: String,
}

/// The tables of the customer's schemas.
pub async fn tables(conn: &mut PgConnection) -> Result<Vec<TableView>> {
    let rows = sqlx::query(
        "SELECT n.nspname, c.relname, \
         CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' ELSE 'table' END, \
         GREATEST(c.reltuples, 0)::bigint \
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relkind IN ('r', 'p', 'v', 'm') \
         AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
         AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1, 2",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| TableView {
            schema: r.get(0),
            name: r.get(1),
            kind: r.get(2),
            estimated_rows: r.get(3),
        })
        .collect())
}

/// Runs one statement; read-only unless `write`.
pub async fn run(conn: &mut PgConnection, sql: &str, write: bool) -> Result<QueryResult> {
    // One command only: a prepared statement cannot hold two.
    conn.prepare(sql).await.map_err(query_error)?;
    let begin = if write { "BEGIN" } else { "BEGIN READ ONLY" };
    // A first query takes the snapshot, so the statement can no longer
    // turn the transaction read-write.
    let setup = format!("{begin}; SET LOCAL statement_timeout = {TIMEOUT_MS}; SELECT 1");
    sqlx::Executor::execute(&mut *conn, sqlx::raw_sql(&setup)).await?;
    let mut columns: Option<Vec<ColumnView>> = None;
    let mut rows = Vec::new();
    let mut row_count = 0u64;
    let mut truncated = false;
    {
        let mut stream = sqlx::Executor::fetch_many(&mut *conn, sqlx::raw_sql(sql));
        while let Some(item) = stream.try_next().await.map_err(query_error)? {
            match item {
                sqlx::Either::Left(done) => row_count += done.rows_affected(),
                sqlx::Either::Right(row) => {
                    if columns.is_none() {
                        columns = Some(column_views(&row));
                    }
                    if rows.len() < MAX_ROWS {
                        rows.push(values(&row));
                    } else {
                        truncated = true;
                    }
                }
            }
        }
    }
    sqlx::Executor::execute(&mut *conn, sqlx::raw_sql("COMMIT")).await?;
    Ok(QueryResult {
        columns: columns.unwrap_or_default(),
        rows,
        row_count,
        truncated,
    })
}

fn column_views(row: &PgRow) -> Vec<ColumnView> {
    row.columns()
        .iter()
        .map(|c| ColumnView {
            name: c.name().to_owned(),
            type_name: c.type_info().name().to_owned(),
        })
        .collect()
}

/// A row's values as JSON, from their text form.
pub fn values(row: &PgRow) -> Vec<Value> {
    (0..row.columns().len())
        .map(|i| {
            let Ok(raw) = row.try_get_raw(i) else {
                return Value::Null;
            };
            if raw.is_null() {
                return Value::Null;
            }
            let type_name = raw.type_info().name().to_owned();
            let text = text_of(raw);
            to_json(&type_name, text)
        })
        .collect()
}

fn text_of(raw: PgValueRef<'_>) -> String {
    raw.as_str().map(str::to_owned).unwrap_or_default()
}

fn to_json(type_name: &str, text: String) -> Value {
    match type_name {
        "INT2" | "INT4" | "INT8" | "OID" => text
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or(Value::String(text)),
        "FLOAT4" | "FLOAT8" => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or(Value::String(text)),
        "BOOL" => Value::Bool(text == "t"),
        "JSON" | "JSONB" => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        _ => Value::String(text),
    }
}
