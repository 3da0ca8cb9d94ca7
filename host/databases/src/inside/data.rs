//! The data API: PostgREST-style reads (`select`, `filter`, `order`,
//! `limit`) and inserts on one table of the `public` schema, as the owner
//! role. The table and every column are looked up in the catalog before
//! any SQL is built, and only the catalog's spelling is quoted into it;
//! every value is bound as a parameter.

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::{PgConnection, Row};

use super::{query_error, quote_ident};
use crate::{Error, Result};

/// Rows one read returns at most, and by default.
pub const MAX_LIMIT: i64 = 200;
pub const DEFAULT_LIMIT: i64 = 100;

/// A filter: `column.op.value` (or PostgREST's `column=op.value`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub column: String,
    pub op: String,
    pub value: String,
}

impl Filter {
    /// Parses `column.op.value`.
    pub fn parse(text: &str) -> Result<Filter> {
        let mut parts = text.splitn(3, '.');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(column), Some(op), Some(value)) if !column.is_empty() => Ok(Filter {
                column: column.to_owned(),
                op: op.to_owned(),
                value: value.to_owned(),
            }),
            _ => Err(refused(format!(
                "filter {text:?} must be column.operator.value, for example id.eq.3"
            ))),
        }
    }
}

/// A read of a table.
#[derive(Clone, Debug, Default)]
pub struct Read {
    /// Columns to return; all when empty.
    pub select: Vec<String>,
    pub filters: Vec<Filter>,
    /// `(column, descending)`.
    pub order: Vec<(String, bool)>,
    pub limit: Option<i64>,
}

fn refused(detail: String) -> Error {
    Error::Refused {
        code: "invalid_data_request",
        detail,
    }
}

/// The columns of `public.table` with their types, from the catalog;
/// a table the owner cannot see is missing.
async fn columns(conn: &mut PgConnection, table: &str) -> Result<BTreeMap<String, String>> {
    let rows = sqlx::query(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a \
         JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = 'public' AND c.relname = $1 AND c.relkind IN ('r', 'p', 'v', 'm') \
         AND a.attnum > 0 AND NOT a.attisdropped",
    )
    .bind(table)
    .fetch_all(&mut *conn)
    .await?;
    if rows.is_empty() {
        return Err(Error::Missing(format!("table {table} does not exist")));
    }
    Ok(rows
        .into_iter()
        .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1)))
        .collect())
}

fn known<'a>(cols: &'a BTreeMap<String, String>, table: &str, name: &str) -> Result<&'a str> {
    cols.get(name)
        .map(String::as_str)
        .ok_or_else(|| refused(format!("table {table} has no column {name:?}")))
}

/// Reads rows as JSON objects, in a read-only transaction.
pub async fn read(conn: &mut PgConnection, table: &str, q: &Read) -> Result<Vec<Value>> {
    let cols = columns(conn, table).await?;
    let select = if q.select.is_empty() {
        "*".to_owned()
    } else {
        let mut names = Vec::new();
        for name in &q.select {
            known(&cols, table, name)?;
            names.push(quote_ident(name));
        }
        names.join(", ")
    };
    let mut binds: Vec<String> = Vec::new();
    let mut conditions = Vec::new();
    for f in &q.filters {
        let ty = known(&cols, table, &f.column)?;
        let col = quote_ident(&f.column);
        let mut bind = |v: &str| {
            binds.push(v.to_owned());
            format!("CAST(${} AS {ty})", binds.len())
        };
        let condition = match f.op.as_str() {
            "eq" => format!("{col} = {}", bind(&f.value)),
            "neq" => format!("{col} <> {}", bind(&f.value)),
            "gt" => format!("{col} > {}", bind(&f.value)),
            "gte" => format!("{col} >= {}", bind(&f.value)),
            "lt" => format!("{col} < {}", bind(&f.value)),
            "lte" => format!("{col} <= {}", bind(&f.value)),
            "like" | "ilike" => {
                binds.push(f.value.replace('*', "%"));
                let op = if f.op == "like" { "LIKE" } else { "ILIKE" };
                format!("{col}::text {op} ${}", binds.len())
            }
            "is" => match f.value.as_str() {
                "null" => format!("{col} IS NULL"),
                "true" => format!("{col} IS TRUE"),
                "false" => format!("{col} IS FALSE"),
                _ => return Err(refused("is takes null, true or false".to_owned())),
            },
            "in" => {
                let list = f.value.trim_start_matches('(').trim_end_matches(')');
                let items: Vec<String> = list.split(',').map(|v| bind(v.trim())).collect();
                format!("{col} IN ({})", items.join(", "))
            }
            other => {
                return Err(refused(format!(
                    "unknown operator {other:?}; use eq, neq, gt, gte, lt, lte, like, ilike, is or in"
                )));
            }
        };
        conditions.push(condition);
    }
    let mut order = Vec::new();
    for (name, desc) in &q.order {
        known(&cols, table, name)?;
        order.push(format!(
            "{} {}",
            quote_ident(name),
            if *desc { "DESC" } else { "ASC" }
        ));
    }
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(refused(format!("limit must be between 1 and {MAX_LIMIT}")));
    }
    let mut sql = format!("SELECT {select} FROM public.{}", quote_ident(table));
    if !conditions.is_empty() {
        sql.push_str(&format!(" WHERE {}", conditions.join(" AND ")));
    }
    if !order.is_empty() {
        sql.push_str(&format!(" ORDER BY {}", order.join(", ")));
    }
    sql.push_str(&format!(" LIMIT {limit}"));
    let wrapped = format!("SELECT coalesce(json_agg(row_to_json(q)), '[]')::text FROM ({sql}) q");
    sqlx::Executor::execute(&mut *conn, sqlx::raw_sql("BEGIN READ ONLY")).await?;
    let mut query = sqlx::query(&wrapped);
    for b in &binds {
        query = query.bind(b);
    }
    let row = query.fetch_one(&mut *conn).await.map_err(query_error)?;
    sqlx::Executor::execute(&mut *conn, sqlx::raw_sql("COMMIT")).await?;
    let text: String = row.get(0);
    match serde_json::from_str(&text) {
        Ok(Value::Array(rows)) => Ok(rows),
        _ => Err(Error::Internal(
            "the data API read no JSON array".to_owned(),
        )),
    }
}

/// Inserts one object or an array of objects; the inserted rows.
pub async fn insert(conn: &mut PgConnection, table: &str, body: &Value) -> Result<Vec<Value>> {
    let cols = columns(conn, table).await?;
    let objects: Vec<&serde_json::Map<String, Value>> = match body {
        Value::Object(o) => vec![o],
        Value::Array(items) => items
            .iter()
            .map(|v| {
                v.as_object()
                    .ok_or_else(|| refused("each row must be a JSON object".to_owned()))
            })
            .collect::<Result<_>>()?,
        _ => {
            return Err(refused(
                "the body must be a JSON object or an array of objects".to_owned(),
            ));
        }
    };
    if objects.is_empty() {
        return Ok(Vec::new());
    }
    let mut names: Vec<&str> = Vec::new();
    for o in &objects {
        for key in o.keys() {
            known(&cols, table, key)?;
            if !names.contains(&key.as_str()) {
                names.push(key);
            }
        }
    }
    if names.is_empty() {
        return Err(refused("a row needs at least one column".to_owned()));
    }
    let list = names
        .iter()
        .map(|n| quote_ident(n))
        .collect::<Vec<_>>()
        .join(", ");
    let table_ident = format!("public.{}", quote_ident(table));
    let sql = format!(
        "WITH ins AS (INSERT INTO {table_ident} ({list}) \
         SELECT {list} FROM json_populate_recordset(NULL::{table_ident}, $1::json) RETURNING *) \
         SELECT coalesce(json_agg(row_to_json(ins)), '[]')::text FROM ins"
    );
    let rows = Value::Array(objects.into_iter().cloned().map(Value::Object).collect());
    let row = sqlx::query(&sql)
        .bind(rows.to_string())
        .fetch_one(&mut *conn)
        .await
        .map_err(query_error)?;
    let text: String = row.get(0);
    match serde_json::from_str(&text) {
        Ok(Value::Array(rows)) => Ok(rows),
        _ => Err(Error::Internal(
            "the data API inserted no JSON array".to_owned(),
        )),
    }
}
