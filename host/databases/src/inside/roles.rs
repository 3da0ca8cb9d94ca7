//! Database roles: list, create (never superuser), drop, reset the
//! password, and the host's read-only role ([`READER_ROLE`]). Role names
//! follow [`super::is_plain_identifier`] and never start with `pg_` or
//! `plateau_` (the host's). A password never reaches the server in clear:
//! it goes in as its SCRAM verifier ([`crate::scram`]), a quoted literal
//! of base64 and separators (PostgreSQL takes no parameters in `CREATE
//! ROLE`), so neither the log nor `pg_stat_statements` can hold it.

use serde::Serialize;
use sqlx::{PgConnection, Row};
use utoipa::ToSchema;

use super::{is_plain_identifier, query_error, quote_ident};
use crate::local::quote_literal;
use crate::scram;
use crate::{Error, Result};

/// The host's read-only role, whose credentials `GET /databases/{id}/connection`
/// gives callers without `databases:write`: a member of
/// `pg_read_all_data` only, read-only by default.
pub const READER_ROLE: &str = "plateau_reader";

/// `PASSWORD '<verifier>'`.
fn password_clause(password: &str) -> String {
    format!("PASSWORD {}", quote_literal(&scram::verifier(password)))
}

/// A role as the API shows it.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoleView {
    pub name: String,
    pub login: bool,
    pub createdb: bool,
    /// The cluster's owner role (made with the cluster; cannot be dropped).
    pub owner: bool,
}

/// Checks a role name a customer chose.
pub fn check_name(name: &str) -> Result<()> {
    if !is_plain_identifier(name) || name.starts_with("pg_") || name.starts_with("plateau_") {
        return Err(Error::Refused {
            code: "invalid_role_name",
            detail: "a role name is a lowercase letter or _, then lowercase letters, digits or _ (at most 63), not starting with pg_ or plateau_".to_owned(),
        });
    }
    Ok(())
}

/// The customer's roles: every role but the host's and PostgreSQL's own.
pub async fn list(conn: &mut PgConnection, owner: &str) -> Result<Vec<RoleView>> {
    let rows = sqlx::query(
        "SELECT rolname, rolcanlogin, rolcreatedb FROM pg_catalog.pg_roles \
         WHERE NOT rolsuper AND rolname NOT LIKE 'pg\\_%' AND rolname NOT LIKE 'plateau\\_%' \
         ORDER BY rolname",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let name: String = r.get(0);
            RoleView {
                owner: name == owner,
                name,
                login: r.get(1),
                createdb: r.get(2),
            }
        })
        .collect())
}

async fn exists(conn: &mut PgConnection, name: &str) -> Result<bool> {
    let row = sqlx::query(
        "SELECT pg_catalog.count(*) FROM pg_catalog.pg_roles WHERE rolname = $1 AND NOT rolsuper",
    )
    .bind(name)
    .fetch_one(&mut *conn)
    .await?;
    Ok(row.get::<i64, _>(0) > 0)
}

/// Creates a role: never superuser, replication, role creation or RLS
/// bypass; it may connect to the cluster's database.
pub async fn create(
    conn: &mut PgConnection,
    database: &str,
    name: &str,
    password: &str,
    login: bool,
    createdb: bool,
) -> Result<()> {
    check_name(name)?;
    let sql = format!(
        "CREATE ROLE {} {} {} NOSUPERUSER NOCREATEROLE NOREPLICATION NOBYPASSRLS {}",
        quote_ident(name),
        if login { "LOGIN" } else { "NOLOGIN" },
        if createdb { "CREATEDB" } else { "NOCREATEDB" },
        password_clause(password),
    );
    sqlx::Executor::execute(&mut *conn, sqlx::raw_sql(&sql))
        .await
        .map_err(|e| {
            if let sqlx::Error::Database(db) = &e
                && db.code().as_deref() == Some("42710")
            {
                return Error::Refused {
                    code: "role_exists",
                    detail: format!("a role named {name} already exists; choose another name"),
                };
            }
            query_error(e)
        })?;
    let grant = format!(
        "GRANT CONNECT ON DATABASE {} TO {}",
        quote_ident(database),
        quote_ident(name)
    );
    sqlx::Executor::execute(&mut *conn, sqlx::raw_sql(&grant)).await?;
    Ok(())
}

/// Drops a role; what it owned in the cluster's database goes to the
/// owner role first.
pub async fn drop(conn: &mut PgConnection, owner: &str, name: &str) -> Result<()> {
    check_name(name)?;
    if name == owner {
        return Err(Error::Refused {
            code: "owner_role",
            detail: "the owner role cannot be dropped; delete the database instead".to_owned(),
        });
    }
    if !exists(conn, name).await? {
        return Err(Error::Missing(format!("role {name} does not exist")));
    }
    for sql in [
        format!(
            "REASSIGN OWNED BY {} TO {}",
            quote_ident(name),
            quote_ident(owner)
        ),
        format!("DROP OWNED BY {}", quote_ident(name)),
        format!("DROP ROLE {}", quote_ident(name)),
    ] {
        sqlx::Executor::execute(&mut *conn, sqlx::raw_sql(&sql))
            .await
            .map_err(query_error)?;
    }
    Ok(())
}

/// Gives a role a new password.
pub async fn set_password(conn: &mut PgConnection, name: &str, password: &str) -> Result<()> {
    check_name(name)?;
    if !exists(conn, name).await? {
        return Err(Error::Missing(format!("role {name} does not exist")));
    }
    let sql = format!(
        "ALTER ROLE {} {}",
        quote_ident(name),
        password_clause(password)
    );
    sqlx::Executor::execute(&mut *conn, sqlx::raw_sql(&sql)).await?;
    Ok(())
}

/// Makes [`READER_ROLE`] what it must be, with `password`: it may log in
/// and read every table (`pg_read_all_data`), nothing more; a role of that
/// name made before the host reserved it loses every other membership.
pub async fn ensure_reader(conn: &mut PgConnection, database: &str, password: &str) -> Result<()> {
    let r = quote_ident(READER_ROLE);
    let exists = sqlx::query("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1")
        .bind(READER_ROLE)
        .fetch_optional(&mut *conn)
        .await?
        .is_some();
    let attributes = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT";
    let mut statements = vec![if exists {
        format!("ALTER ROLE {r} {attributes} {}", password_clause(password))
    } else {
        format!("CREATE ROLE {r} {attributes} {}", password_clause(password))
    }];
    let memberships: Vec<String> = sqlx::query(
        "SELECT g.rolname FROM pg_catalog.pg_auth_members m \
         JOIN pg_catalog.pg_roles g ON g.oid = m.roleid \
         JOIN pg_catalog.pg_roles u ON u.oid = m.member \
         WHERE u.rolname = $1 AND g.rolname <> 'pg_read_all_data'",
    )
    .bind(READER_ROLE)
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|row| row.get(0))
    .collect();
    for group in memberships {
        statements.push(format!("REVOKE {} FROM {r}", quote_ident(&group)));
    }
    statements.push(format!("GRANT pg_read_all_data TO {r}"));
    statements.push(format!(
        "GRANT CONNECT ON DATABASE {} TO {r}",
        quote_ident(database)
    ));
    statements.push(format!(
        "ALTER ROLE {r} SET default_transaction_read_only = on"
    ));
    for sql in statements {
        sqlx::Executor::execute(&mut *conn, sqlx::raw_sql(&sql)).await?;
    }
    Ok(())
}
