//! Inside a database: roles, extensions, the SQL console and the data API
//! (spec sections 4.5 and 4.6). Administration goes through the host's
//! role; the console and the data API run as the owner role.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_api::routes::Pairs;
use plateau_store::events::NewEvent;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::Connection;
use utoipa::ToSchema;

use super::{Service, find};
use crate::inside::console::{QueryResult, TableView};
use crate::inside::extensions::ExtensionView;
use crate::inside::roles::RoleView;
use crate::inside::{console, data, extensions, ops, roles};
use crate::service::DatabaseService;

const WRITE: &str = "databases:write";

/// The audited event of a change `caller` made inside database `id`.
fn changed(caller: &Caller, id: &str, kind: &str, action: &str) -> NewEvent {
    NewEvent::audited(&caller.org_id, kind, "resources", action, &caller.actor())
        .resource("database", id)
}

/// The database's roles (never superusers).
#[utoipa::path(get, path = "/databases/{id}/roles", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "roles", body = Vec<RoleView>),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn list_roles(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<RoleView>>, ApiError> {
    let d = find(&app, &caller, &id).await?;
    let placement = DatabaseService::placement(&d)?;
    let mut conn = service.admin(&d).await?;
    let list = roles::list(&mut conn, &placement.owner).await?;
    let _ = conn.close().await;
    Ok(Json(list))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateRole {
    /// A lowercase identifier, not starting with pg_.
    #[schema(pattern = "^[a-z_][a-z0-9_]{0,62}$")]
    pub name: String,
    #[schema(min_length = 8, max_length = 200)]
    pub password: String,
    /// Whether it may log in; true by default.
    pub login: Option<bool>,
    /// Whether it may create databases; false by default.
    pub createdb: Option<bool>,
}

/// Create a role; roles are never superuser.
#[utoipa::path(post, path = "/databases/{id}/roles", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = CreateRole,
    responses((status = 201, description = "the new role", body = RoleView)))]
pub async fn create_role(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<CreateRole>,
) -> Result<(StatusCode, Json<RoleView>), ApiError> {
    let d = find(&app, &caller, &id).await?;
    let len = input.password.chars().count();
    if !(8..=200).contains(&len) || input.password.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            "password",
            "must be 8 to 200 characters without control characters",
        ));
    }
    let placement = DatabaseService::placement(&d)?;
    let login = input.login.unwrap_or(true);
    let createdb = input.createdb.unwrap_or(false);
    let mut conn = service.admin(&d).await?;
    roles::create(
        &mut conn,
        &placement.database,
        &input.name,
        &input.password,
        login,
        createdb,
    )
    .await?;
    let _ = conn.close().await;
    let event = changed(&caller, &d.id, "database.role_created", "create")
        .data(json!({ "role": input.name, "login": login, "createdb": createdb }));
    service.record_event(&event).await?;
    Ok((
        StatusCode::CREATED,
        Json(RoleView {
            name: input.name,
            login,
            createdb,
            owner: false,
        }),
    ))
}

/// Drop a role; what it owned goes to the owner role.
#[utoipa::path(delete, path = "/databases/{id}/roles/{name}", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id"),
           ("name" = String, Path, description = "role name")),
    responses((status = 204, description = "dropped")))]
pub async fn drop_role(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path((id, name)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let d = find(&app, &caller, &id).await?;
    let placement = DatabaseService::placement(&d)?;
    let mut conn = service.admin(&d).await?;
    roles::drop(&mut conn, &placement.owner, &name).await?;
    let _ = conn.close().await;
    let event =
        changed(&caller, &d.id, "database.role_dropped", "delete").data(json!({ "role": name }));
    service.record_event(&event).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolePassword {
    pub name: String,
    /// The new password, shown once.
    pub password: String,
}

/// Give a role a new generated password.
#[utoipa::path(post, path = "/databases/{id}/roles/{name}/reset-password", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id"),
           ("name" = String, Path, description = "role name")),
    responses((status = 200, description = "the new password", body = RolePassword)))]
pub async fn reset_password(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path((id, name)): Path<(String, String)>,
) -> Result<Json<RolePassword>, ApiError> {
    let d = find(&app, &caller, &id).await?;
    caller.require_manager("resetting a role's password")?;
    let placement = DatabaseService::placement(&d)?;
    if name == placement.owner {
        return Err(ApiError::bad_request(
            "owner_role",
            "the owner role's password is the database's connection password; it cannot be reset here",
        ));
    }
    let password = DatabaseService::generate_password();
    let mut conn = service.admin(&d).await?;
    roles::set_password(&mut conn, &name, &password).await?;
    let _ = conn.close().await;
    let event = changed(&caller, &d.id, "database.role_password_reset", "update")
        .data(json!({ "role": name }));
    service.record_event(&event).await?;
    Ok(Json(RolePassword { name, password }))
}

/// The extension allowlist, with what this database has.
#[utoipa::path(get, path = "/databases/{id}/extensions", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "the allowlist", body = Vec<ExtensionView>),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn list_extensions(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<ExtensionView>>, ApiError> {
    let d = find(&app, &caller, &id).await?;
    let placement = DatabaseService::placement(&d)?;
    let available = service.provider().available_extensions(&placement).await?;
    let mut conn = service.admin(&d).await?;
    let list = extensions::list(&mut conn, &available).await?;
    let _ = conn.close().await;
    Ok(Json(list))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateExtension {
    /// One of pgvector, pg_trgm, unaccent, uuid-ossp, pgcrypto, citext, hstore, pg_stat_statements.
    pub name: String,
    /// The schema to create it in; public by default.
    pub schema: Option<String>,
}

/// Create an allowlisted extension.
#[utoipa::path(post, path = "/databases/{id}/extensions", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = CreateExtension,
    responses((status = 201, description = "the extension", body = ExtensionView)))]
pub async fn create_extension(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<CreateExtension>,
) -> Result<(StatusCode, Json<ExtensionView>), ApiError> {
    let d = find(&app, &caller, &id).await?;
    let placement = DatabaseService::placement(&d)?;
    let available = service.provider().available_extensions(&placement).await?;
    let mut conn = service.admin(&d).await?;
    extensions::create(
        &mut conn,
        &available,
        &d.version,
        &input.name,
        input.schema.as_deref(),
    )
    .await?;
    let list = extensions::list(&mut conn, &available).await?;
    let _ = conn.close().await;
    let view = list
        .into_iter()
        .find(|e| e.name == input.name)
        .ok_or_else(|| ApiError::Internal("a created extension is not listed".to_owned()))?;
    let event = changed(&caller, &d.id, "database.extension_created", "create").data(
        json!({ "extension": view.name, "schema": input.schema.as_deref().unwrap_or("public") }),
    );
    service.record_event(&event).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// The database's tables, for the console.
#[utoipa::path(get, path = "/databases/{id}/query", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "tables", body = Vec<TableView>),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn tables(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<TableView>>, ApiError> {
    let d = find(&app, &caller, &id).await?;
    let mut conn = service.as_owner(&d).await?;
    let list = console::tables(&mut conn).await?;
    let _ = conn.close().await;
    Ok(Json(list))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunQuery {
    /// One SQL statement.
    #[schema(min_length = 1)]
    pub sql: String,
    /// Run in a read-write transaction; needs databases:write.
    #[serde(default)]
    pub write: bool,
}

/// Run one statement as the owner role: read-only unless `write` is true
/// (which needs databases:write), at most 1000 rows and 10 seconds.
#[utoipa::path(post, path = "/databases/{id}/query", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    request_body = RunQuery,
    responses((status = 200, description = "the result", body = QueryResult)))]
pub async fn run_query(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<RunQuery>,
) -> Result<Json<QueryResult>, ApiError> {
    if input.write && !caller.scopes.allows(WRITE) {
        return Err(ApiError::MissingScope(WRITE.to_owned()));
    }
    if input.sql.trim().is_empty() {
        return Err(ApiError::invalid("sql", "must not be empty"));
    }
    let d = find(&app, &caller, &id).await?;
    let mut conn = service.as_owner(&d).await?;
    let result = console::run(&mut conn, &input.sql, input.write).await;
    let _ = conn.close().await;
    let result = result.map_err(|e| match e {
        crate::Error::Query(m) if m.contains("25006") => ApiError::bad_request(
            "read_only",
            format!("{m}; send write true with a databases:write token to change data"),
        ),
        other => other.into(),
    })?;
    Ok(Json(result))
}

/// Read rows of a table of the public schema, PostgREST style:
/// `select=a,b`, `filter=col.op.value` (or `col=op.value`), `order=col.desc`,
/// `limit=N` (1 to 200, default 100).
#[utoipa::path(get, path = "/databases/{id}/data/{table}", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id"),
           ("table" = String, Path, description = "table of the public schema"),
           ("select" = Option<String>, Query, description = "columns, comma-separated"),
           ("filter" = Option<String>, Query, pattern = "^[^.]+[.][a-z]+[.]", description = "column.operator.value (eq, neq, gt, gte, lt, lte, like, ilike, is, in); repeatable"),
           ("order" = Option<String>, Query, pattern = "^[^.,]+([.](asc|desc))?(,[^.,]+([.](asc|desc))?)*$", description = "column[.asc|.desc], comma-separated"),
           ("limit" = Option<i64>, Query, minimum = 1, maximum = 200, description = "1 to 200, default 100")),
    responses((status = 200, description = "rows", body = Vec<Object>),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn read_data(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path((id, table)): Path<(String, String)>,
    pairs: Pairs,
) -> Result<Json<Vec<Value>>, ApiError> {
    let mut q = data::Read::default();
    for (key, value) in pairs.0.iter() {
        // An empty parameter asks for nothing.
        if value.trim().is_empty() {
            continue;
        }
        match key.as_str() {
            "select" => {
                q.select = value
                    .split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect()
            }
            "filter" => q.filters.push(data::Filter::parse(value)?),
            "order" => {
                for part in value.split(',') {
                    let part = part.trim();
                    let (col, desc) = match part.rsplit_once('.') {
                        Some((c, "desc")) => (c, true),
                        Some((c, "asc")) => (c, false),
                        _ => (part, false),
                    };
                    q.order.push((col.to_owned(), desc));
                }
            }
            "limit" => {
                q.limit = Some(
                    value
                        .parse()
                        .map_err(|_| ApiError::invalid("limit", "must be a number"))?,
                )
            }
            column => q
                .filters
                .push(data::Filter::parse(&format!("{column}.{value}"))?),
        }
    }
    let d = find(&app, &caller, &id).await?;
    let mut conn = service.as_owner(&d).await?;
    let rows = data::read(&mut conn, &table, &q).await;
    let _ = conn.close().await;
    Ok(Json(rows?))
}

/// Insert one row (an object) or several (an array of objects) into a
/// table of the public schema; the inserted rows.
#[utoipa::path(post, path = "/databases/{id}/data/{table}", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id"),
           ("table" = String, Path, description = "table of the public schema")),
    request_body = Object,
    responses((status = 201, description = "the inserted rows", body = Vec<Object>)))]
pub async fn insert_data(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path((id, table)): Path<(String, String)>,
    Body(body): Body<Value>,
) -> Result<(StatusCode, Json<Vec<Value>>), ApiError> {
    let d = find(&app, &caller, &id).await?;
    let mut conn = service.as_owner(&d).await?;
    let rows = data::insert(&mut conn, &table, &body).await;
    let _ = conn.close().await;
    Ok((StatusCode::CREATED, Json(rows?)))
}

/// Connections, transactions, cache hit ratio, size, replication lag and
/// the disk quota.
#[utoipa::path(get, path = "/databases/{id}/metrics", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "figures", body = ops::Metrics),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn metrics(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ops::Metrics>, ApiError> {
    let d = find(&app, &caller, &id).await?;
    let placement = DatabaseService::placement(&d)?;
    let mut conn = service.admin(&d).await?;
    let figures = ops::metrics(&mut conn, &placement.database, d.disk_gb).await;
    let _ = conn.close().await;
    Ok(Json(figures?))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseLogs {
    /// The last lines of the leader's log, oldest first.
    pub lines: Vec<String>,
}

/// The last lines of the leader's log (`lines`, 1 to 1000, default 200).
#[utoipa::path(get, path = "/databases/{id}/logs", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id"),
           ("lines" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "how many of the last lines, 1 to 1000, default 200")),
    responses((status = 200, description = "the log", body = DatabaseLogs),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn logs(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    pairs: Pairs,
) -> Result<Json<DatabaseLogs>, ApiError> {
    let limit = match plateau_api::routes::param(&pairs.0, "lines") {
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| ApiError::invalid("lines", "must be between 1 and 1000"))?,
        None => 200,
    };
    let d = find(&app, &caller, &id).await?;
    let placement = DatabaseService::placement(&d)?;
    let lines = service.provider().logs(&placement, limit).await?;
    Ok(Json(DatabaseLogs { lines }))
}

/// Make the owner role own every object of the database's other roles,
/// with grants and default privileges; idempotent.
#[utoipa::path(post, path = "/databases/{id}/fix-ownership", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "what changed hands", body = ops::Ownership)))]
pub async fn fix_ownership(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ops::Ownership>, ApiError> {
    let d = find(&app, &caller, &id).await?;
    let placement = DatabaseService::placement(&d)?;
    let mut conn = service.admin(&d).await?;
    let done = ops::fix_ownership(&mut conn, &placement.owner).await;
    let _ = conn.close().await;
    Ok(Json(done?))
}
