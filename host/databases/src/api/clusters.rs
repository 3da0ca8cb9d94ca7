//! The clusters themselves: list, create (under the plan's ceilings),
//! read, rename or change the backup retention, delete, and the connection
//! details (owners and admins): the owner role's for callers with
//! `databases:write`, the host's read-only role's for the others.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_api::pagination::{Page, Pager};
use plateau_api::routes::{Pairs, page_and_filters};
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_kernel::Status;
use plateau_store::databases::backups::{self, Restore};
use plateau_store::databases::branches::{self, Branch};
use plateau_store::databases::{self as db, Database};
use plateau_store::events::{self, NewEvent};
use plateau_store::managed::{self, Table};
use plateau_store::{plans, projects};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{DatabaseView, Service, find};
use crate::inside::roles;
use crate::service::{DatabaseService, Which};
use crate::spec::{DEFAULT_VERSION, VERSIONS};

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateDatabase {
    /// Unique within the organisation, 1 to 100 characters.
    #[schema(schema_with = plateau_api::openapi::name_schema)]
    pub name: String,
    /// The PostgreSQL major version: 15, 16 or 17 (default).
    #[schema(value_type = Option<String>, pattern = "^(15|16|17)$")]
    pub version: Option<String>,
    /// Hot standbys streaming from the leader, at most the plan's maximum;
    /// 0 by default. With replicas, commits are synchronous to any one of
    /// them and the leader fails over to the most advanced.
    #[schema(minimum = 0)]
    pub replicas: Option<i64>,
    /// Memory for the server in MiB (shared_buffers is a quarter); 256 by
    /// default, at most the plan's ceiling.
    #[schema(minimum = 64)]
    pub memory_mb: Option<i64>,
    /// CPUs for parallel queries; 1 by default.
    #[schema(minimum = 1)]
    pub cpus: Option<i64>,
    /// Disk in GB, counted against the plan's DB disk; 1 by default.
    #[schema(minimum = 1)]
    pub disk_gb: Option<i64>,
    /// The project it belongs to; the organisation's default by default.
    pub project_id: Option<String>,
}

fn plan_limit(detail: String) -> ApiError {
    ApiError::conflict("plan_limit_reached", detail)
}

/// List the organisation's databases, oldest first.
#[utoipa::path(get, path = "/databases", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "databases", body = Page<DatabaseView>)))]
pub async fn list(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<DatabaseView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(app.cursors(), &page, "databases", &caller.org_id, filters)?;
    let listed = db::list(app.db(), &caller.org_id, pager.keyset()).await?;
    let page = pager.finish(listed, |d| d.id.clone(), Ok::<Database, ApiError>);
    let mut items = Vec::with_capacity(page.items.len());
    for d in page.items {
        items.push(DatabaseView::of(&service, d?).await?);
    }
    Ok(Json(Page {
        items,
        next_cursor: page.next_cursor,
        total: page.total,
    }))
}

/// Create a database: a PostgreSQL leader with a generated owner role, its
/// standbys and a pooler. The answer comes before the cluster runs: the
/// database is `creating` until the host has brought it up, then `running`
/// (or `failed`, with the reason in `statusDetail`); poll
/// `GET /databases/{id}` until it runs.
#[utoipa::path(post, path = "/databases", tag = "databases",
    security(("bearer" = ["databases:write"])),
    request_body = CreateDatabase,
    responses((status = 201, description = "the new database, `creating`", body = DatabaseView),
              (status = 409, description = "the name is taken, or a plan limit (databases, DB disk, memory, CPUs) is reached", body = plateau_api::error::Problem)))]
pub async fn create(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Body(input): Body<CreateDatabase>,
) -> Result<(StatusCode, Json<DatabaseView>), ApiError> {
    let version = input
        .version
        .as_deref()
        .unwrap_or(DEFAULT_VERSION)
        .to_owned();
    let replicas = input.replicas.unwrap_or(0);
    let memory_mb = input.memory_mb.unwrap_or(256);
    let cpus = input.cpus.unwrap_or(1);
    let disk_gb = input.disk_gb.unwrap_or(1);
    Validator::new()
        .name("name", &input.name)
        .check(
            VERSIONS.contains(&version.as_str()),
            "version",
            "must be one of 15, 16, 17",
        )
        .check(replicas >= 0, "replicas", "must be at least 0")
        .check(memory_mb >= 64, "memoryMb", "must be at least 64")
        .check(cpus >= 1, "cpus", "must be at least 1")
        .check(disk_gb >= 1, "diskGb", "must be at least 1")
        .finish()?;
    let project_id = match &input.project_id {
        Some(id) => Some(
            projects::get(app.db(), &caller.org_id, id)
                .await?
                .map(|p| p.id)
                .ok_or_else(|| {
                    ApiError::invalid("projectId", "no such project in this organization")
                })?,
        ),
        None => caller.project_id.clone(),
    };

    let d = insert_new(
        &app,
        &service,
        &caller,
        NewCluster {
            name: input.name.trim().to_owned(),
            version,
            replicas,
            memory_mb,
            cpus,
            disk_gb,
            project_id,
        },
        None,
        None,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(DatabaseView::of(&service, d).await?),
    ))
}

/// A new cluster's settings, checked.
pub(super) struct NewCluster {
    pub name: String,
    pub version: String,
    pub replicas: i64,
    pub memory_mb: i64,
    pub cpus: i64,
    pub disk_gb: i64,
    pub project_id: Option<String>,
}

/// Records a new cluster (`creating`) under the plan's ceilings, with its
/// event, and the restore that makes it if any, in one transaction.
pub(super) async fn insert_new(
    app: &AppState,
    service: &DatabaseService,
    caller: &Caller,
    new: NewCluster,
    restore: Option<Restore>,
    branch: Option<Branch>,
) -> Result<Database, ApiError> {
    let NewCluster {
        version,
        replicas,
        memory_mb,
        cpus,
        disk_gb,
        project_id,
        ..
    } = new;
    plateau_api::cost::check_new_resource(
        app.db(),
        caller,
        project_id.as_deref(),
        "creating a database",
    )
    .await?;
    let limits = db::plan_limits(app.db(), &caller.plan)
        .await?
        .ok_or_else(|| {
            ApiError::Internal(format!("no database limits for plan {}", caller.plan))
        })?;
    let plan = plans::get(app.db(), &caller.plan)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("no plan {}", caller.plan)))?;
    if memory_mb > limits.max_memory_mb || cpus > limits.max_cpus || replicas > limits.max_replicas
    {
        return Err(plan_limit(format!(
            "the {} plan allows at most {} MB, {} CPUs and {} replicas per database; lower the setting or move to a larger plan",
            caller.plan, limits.max_memory_mb, limits.max_cpus, limits.max_replicas
        )));
    }
    let over = |(count, disk): (i64, i64)| -> Option<ApiError> {
        if count >= plan.databases {
            Some(plan_limit(format!(
                "the {} plan allows {} database{}; delete one or move to a larger plan",
                caller.plan,
                plan.databases,
                if plan.databases == 1 { "" } else { "s" }
            )))
        } else if disk + disk_gb > plan.db_disk_gb {
            Some(plan_limit(format!(
                "the {} plan allows {} GB of database disk and {} GB are used; ask for less or move to a larger plan",
                caller.plan, plan.db_disk_gb, disk
            )))
        } else {
            None
        }
    };
    if let Some(e) = over(db::usage(app.db(), &caller.org_id).await?) {
        return Err(e);
    }
    let id = new_id("dbs");
    let now = time::now_ms();
    let d = Database {
        id: id.clone(),
        org_id: caller.org_id.clone(),
        project_id,
        name: new.name,
        status: Status::Creating.as_str().to_owned(),
        status_detail: None,
        generation: 1,
        version,
        replicas,
        memory_mb,
        cpus,
        disk_gb,
        backup_retention_days: 7,
        host_id: service.host_id().to_owned(),
        placement: String::new(),
        owner_password_sealed: service.seal(
            &caller.org_id,
            &id,
            Which::Owner,
            &DatabaseService::generate_password(),
        )?,
        admin_password_sealed: service.seal(
            &caller.org_id,
            &id,
            Which::Admin,
            &DatabaseService::generate_password(),
        )?,
        created_at: now,
        updated_at: now,
    };
    service.provider().admit(&DatabaseService::spec(&d))?;
    let event = NewEvent::audited(
        &caller.org_id,
        "database.created",
        "resources",
        "create",
        &caller.actor(),
    )
    .resource("database", &id)
    .data(json!({
        "name": d.name,
        "version": d.version,
        "memoryMb": memory_mb,
        "cpus": cpus,
        "diskGb": disk_gb,
    }));
    let mut tx = app.db().begin().await?;
    if let Some(mut r) = restore {
        r.database_id = d.id.clone();
        backups::insert_restore(&mut tx, &r).await?;
    }
    if let Some(mut b) = branch {
        b.database_id = d.id.clone();
        branches::insert(&mut tx, &b).await?;
    }
    if let Some(e) = over(db::usage_for_update(&mut tx, &caller.org_id).await?) {
        return Err(e);
    }
    if let Err(e) = db::insert(&mut tx, &d, &event, now).await {
        return Err(if e.is_unique_violation() {
            ApiError::conflict(
                "name_taken",
                format!(
                    "a database named {:?} already exists; choose another name",
                    d.name
                ),
            )
        } else {
            e.into()
        });
    }
    tx.commit_last().await?;
    Ok(d)
}

/// One database, with its members and their roles.
#[utoipa::path(get, path = "/databases/{id}", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "the database", body = DatabaseView)))]
pub async fn get(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<DatabaseView>, ApiError> {
    let d = find(&app, &caller, &id).await?;
    Ok(Json(DatabaseView::of(&service, d).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateDatabase {
    #[schema(schema_with = plateau_api::openapi::optional_name_schema)]
    pub name: Option<String>,
    /// Days backups are kept, 1 to 35.
    #[schema(minimum = 1, maximum = 35)]
    pub backup_retention_days: Option<i64>,
}

/// Rename a database or change its backup retention; the connection never
/// changes.
#[utoipa::path(patch, path = "/databases/{id}", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = Option<UpdateDatabase>,
    responses((status = 200, description = "the changed database", body = DatabaseView),
              (status = 409, description = "the name is taken", body = plateau_api::error::Problem)))]
pub async fn update(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(object): Body<serde_json::Map<String, serde_json::Value>>,
) -> Result<Json<DatabaseView>, ApiError> {
    // Through a map: serde would take a struct of options from an array.
    let input: UpdateDatabase = plateau_api::json::parse(
        &serde_json::to_vec(&object).map_err(|e| ApiError::Internal(e.to_string()))?,
    )?;
    let d = find(&app, &caller, &id).await?;
    let name = input.name.as_deref().unwrap_or(&d.name).trim().to_owned();
    let retention = input
        .backup_retention_days
        .unwrap_or(d.backup_retention_days);
    Validator::new()
        .name("name", &name)
        .check(
            (1..=35).contains(&retention),
            "backupRetentionDays",
            "must be between 1 and 35",
        )
        .finish()?;
    let now = time::now_ms();
    let event = NewEvent::audited(
        &caller.org_id,
        "database.updated",
        "resources",
        "update",
        &caller.actor(),
    )
    .resource("database", &id)
    .data(json!({ "name": name, "backupRetentionDays": retention }));
    let mut tx = app.db().begin().await?;
    if let Err(e) =
        db::update_settings(&mut tx, &caller.org_id, &id, &name, retention, &event, now).await
    {
        return Err(if e.is_unique_violation() {
            ApiError::conflict(
                "name_taken",
                format!("a database named {name:?} already exists; choose another name"),
            )
        } else {
            e.into()
        });
    }
    let changed = db::get_for_update(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(|| super::not_found(&id))?;
    tx.commit_last().await?;
    Ok(Json(DatabaseView::of(&service, changed).await?))
}

/// Delete a database: its servers stop and its data is removed. The
/// answer comes first, with the database `deleting`; it is gone (404) once
/// the host has removed it.
#[utoipa::path(delete, path = "/databases/{id}", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 202, description = "the database, `deleting`", body = DatabaseView)))]
pub async fn delete(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<DatabaseView>), ApiError> {
    let d = find(&app, &caller, &id).await?;
    super::branches::refuse_protected(&app, &caller, &d).await?;
    let now = time::now_ms();
    let event = NewEvent::audited(
        &caller.org_id,
        "database.deleted",
        "resources",
        "delete",
        &caller.actor(),
    )
    .resource("database", &id)
    .data(json!({ "name": d.name }));
    let mut tx = app.db().begin().await?;
    let status = Status::Deleting.as_str();
    managed::request(&mut tx, Table::Databases, &caller.org_id, &id, status, now).await?;
    events::record(&mut tx, &event, now).await?;
    let deleting = db::get_for_update(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(|| super::not_found(&id))?;
    tx.commit_last().await?;
    let mut view = DatabaseView::of(&service, deleting).await?;
    view.members.clear();
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// How to connect, with a role's password.
#[derive(Serialize, ToSchema)]
#[schema(as = DatabaseConnection)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionView {
    /// Through the pooler (pgbouncer, transaction mode):
    /// `postgresql://OWNER:PASSWORD@HOST:PORT/DATABASE?sslmode=require`.
    /// Every URI asks for TLS; to verify the server, save
    /// `caCertificate` and add `sslmode=verify-full&sslrootcert=FILE`.
    pub uri: String,
    /// To a replica (read-only), through the pooler's `<database>_ro`
    /// database, which follows the replicas across failovers; only for
    /// databases with replicas.
    pub read_uri: Option<String>,
    /// To the leader, bypassing the pool (sessions, prepared statements,
    /// LISTEN, migrations), through the database's write endpoint, which
    /// follows the leader across failovers and switchovers.
    pub write_uri: String,
    pub host: String,
    /// The pooler's port.
    pub port: u16,
    /// The write endpoint's port.
    pub write_port: u16,
    pub database: String,
    /// The owner role, or `plateau_reader` for a caller without
    /// databases:write.
    pub username: String,
    pub password: String,
    /// The certificate (PEM) of the database's own CA, which signed the
    /// certificate every endpoint presents (for the host's address,
    /// `localhost` and `127.0.0.1`); null for a database made before
    /// databases had TLS.
    pub ca_certificate: Option<String>,
}

/// The connection details with a password, for owners and admins. With
/// databases:write they are the owner role's, which may change anything
/// in the database; with databases:read only, they are those of the
/// read-only role `plateau_reader` (it reads every table, writes none), so
/// a read-only token never hands out a way to write.
#[utoipa::path(get, path = "/databases/{id}/connection", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "how to connect", body = ConnectionView),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn connection(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ConnectionView>, ApiError> {
    let d = find(&app, &caller, &id).await?;
    caller.require_manager("reading a database's password")?;
    let placement = DatabaseService::placement(&d)?;
    let credentials = service.credentials(&d)?;
    let (username, password) = if caller.scopes.allows("databases:write") {
        service.login(&d, &placement).await?
    } else {
        // The reconciler made the role when it created the cluster (or
        // first observed it, for an older one): a GET never writes.
        let password = DatabaseService::reader_password(&credentials);
        (roles::READER_ROLE.to_owned(), password)
    };
    let ca_certificate = service.provider().ca_certificate(&placement);
    let tls = ca_certificate.is_some();
    let uri = |port: u16, database: &str| {
        connection_uri(&placement, &username, &password, port, database, tls)
    };
    let read_uri = (!placement.standbys().is_empty()).then(|| {
        uri(
            placement.pooler_port,
            &crate::local::read_database(&placement.database),
        )
    });
    Ok(Json(ConnectionView {
        uri: uri(placement.pooler_port, &placement.database),
        read_uri,
        write_uri: uri(placement.write_port(), &placement.database),
        host: placement.address.clone(),
        port: placement.pooler_port,
        write_port: placement.write_port(),
        database: placement.database.clone(),
        username,
        password,
        ca_certificate,
    }))
}

/// The one shape of a connection string: `username` to `database` at
/// `port` of the cluster's address, asking for TLS when it has it.
fn connection_uri(
    placement: &crate::Placement,
    username: &str,
    password: &str,
    port: u16,
    database: &str,
    tls: bool,
) -> String {
    let tls = if tls { "?sslmode=require" } else { "" };
    format!(
        "postgresql://{username}:{password}@{}:{port}/{database}{tls}",
        placement.address
    )
}

/// The owner's connection string of database `d` through the pooler,
/// as `connection` answers a caller with databases:write (an app's
/// preview gets it in its environment).
pub async fn owner_uri(service: &DatabaseService, d: &Database) -> Result<String, ApiError> {
    let placement = DatabaseService::placement(d)?;
    let (username, password) = service.login(d, &placement).await?;
    let tls = service.provider().ca_certificate(&placement).is_some();
    Ok(connection_uri(
        &placement,
        &username,
        &password,
        placement.pooler_port,
        &placement.database,
        tls,
    ))
}
