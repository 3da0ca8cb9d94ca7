//! Logical replication (spec 4.6, issue 32): `/databases/{id}/publications`
//! (list, create of every table or of tables named, drop) and
//! `/databases/{id}/subscriptions` (list with lag and the cutover verdict,
//! create after a preflight, drop, and `sync-sequences` before a cutover).
//! What the preflight refuses and who runs what: [`crate::replication`],
//! [`crate::inside::subscriptions`].

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_store::databases::subscriptions::{self as rows, Subscription};
use plateau_store::events::NewEvent;
use serde::Deserialize;
use serde_json::json;
use sqlx::Connection as _;
use utoipa::ToSchema;

use super::{Service, find};
use crate::inside::is_plain_identifier;
use crate::inside::publications::{self, PublicationView};
use crate::replication::Request;
use crate::replication::status::{SubscriptionView, SyncedSequence};

type Problem = plateau_api::error::Problem;

fn changed(caller: &Caller, id: &str, kind: &str, action: &str) -> NewEvent {
    NewEvent::audited(&caller.org_id, kind, "resources", action, &caller.actor())
        .resource("database", id)
}

fn name_ok(name: &str) -> bool {
    is_plain_identifier(name) && !name.starts_with("pg_")
}

const NAME_RULE: &str = "a lowercase letter or _, then lowercase letters, digits or _ (at most 63), not starting with pg_";

/// The database's publications.
#[utoipa::path(get, path = "/databases/{id}/publications", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "publications", body = Vec<PublicationView>),
              (status = 409, description = "not ready: the resource is still being created", body = Problem)))]
pub async fn list_publications(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<PublicationView>>, ApiError> {
    let d = find(&app, &caller, &id).await?;
    let mut conn = service.admin(&d).await?;
    let list = publications::list(&mut conn).await?;
    let _ = conn.close().await;
    Ok(Json(list))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreatePublication {
    #[schema(pattern = "^[a-z_][a-z0-9_]{0,62}$")]
    pub name: String,
    /// Publish every table, those made later included (or name `tables`).
    pub all_tables: Option<bool>,
    /// The tables to publish, `schema.table` or `table` (in `public`).
    #[schema(max_items = 1000)]
    pub tables: Option<Vec<String>>,
}

/// Create a publication of every table or of the tables named.
#[utoipa::path(post, path = "/databases/{id}/publications", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = CreatePublication,
    responses((status = 201, description = "the publication", body = PublicationView),
              (status = 400, description = "a bad field, or a table the database lacks", body = Problem),
              (status = 409, description = "not ready: the resource is still being created", body = Problem)))]
pub async fn create_publication(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<CreatePublication>,
) -> Result<(StatusCode, Json<PublicationView>), ApiError> {
    let d = find(&app, &caller, &id).await?;
    let all = input.all_tables.unwrap_or(false);
    let tables = input.tables.unwrap_or_default();
    Validator::new()
        .check(name_ok(&input.name), "name", NAME_RULE)
        .check(
            all == tables.is_empty(),
            "tables",
            "name at least one table, or set allTables (not both)",
        )
        .check(
            tables.len() <= 1000 && tables.iter().all(|t| !t.is_empty() && t.len() <= 127),
            "tables",
            "at most 1000 names of at most 127 characters",
        )
        .finish()?;
    let mut conn = service.admin(&d).await?;
    let made = publications::create(&mut conn, &input.name, all, &tables).await;
    let _ = conn.close().await;
    let made = made?;
    let event = changed(&caller, &d.id, "database.publication_created", "create").data(
        json!({ "publication": made.name, "allTables": made.all_tables, "tables": made.tables }),
    );
    service.record_event(&event).await?;
    Ok((StatusCode::CREATED, Json(made)))
}

/// Drop a publication (subscriptions to it stop receiving changes).
#[utoipa::path(delete, path = "/databases/{id}/publications/{name}", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id"),
           ("name" = String, Path, description = "publication name")),
    responses((status = 204, description = "dropped"),
              (status = 404, description = "no such publication", body = Problem)))]
pub async fn drop_publication(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path((id, name)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let d = find(&app, &caller, &id).await?;
    let mut conn = service.admin(&d).await?;
    let dropped = publications::drop(&mut conn, &name).await;
    let _ = conn.close().await;
    dropped?;
    let event = changed(&caller, &d.id, "database.publication_dropped", "delete")
        .data(json!({ "publication": name }));
    service.record_event(&event).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The database's subscriptions, with their lag and cutover verdict.
#[utoipa::path(get, path = "/databases/{id}/subscriptions", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "subscriptions", body = Vec<SubscriptionView>),
              (status = 409, description = "not ready: the resource is still being created", body = Problem)))]
pub async fn list_subscriptions(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<SubscriptionView>>, ApiError> {
    let d = find(&app, &caller, &id).await?;
    let mut out = Vec::new();
    for s in rows::of(app.db(), &d.id).await? {
        out.push(service.subscription_view(&d, &s).await?);
    }
    Ok(Json(out))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateSubscription {
    #[schema(pattern = "^[a-z_][a-z0-9_]{0,62}$")]
    pub name: String,
    /// A database of this organisation by id, or a connection string
    /// `postgresql://user:password@host:port/dbname[?sslmode=require]`
    /// whose host the egress guard lets through.
    #[schema(min_length = 1, max_length = 2048)]
    pub source: String,
    /// The source's publication.
    #[schema(pattern = "^[a-z_][a-z0-9_]{0,62}$")]
    pub publication: String,
    /// Copy the tables' rows first; true by default.
    pub copy_data: Option<bool>,
}

/// Subscribe to a publication of another database, after a preflight
/// (wal_level, replica identities, tables, versions, reachability).
#[utoipa::path(post, path = "/databases/{id}/subscriptions", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = CreateSubscription,
    responses((status = 201, description = "the subscription", body = SubscriptionView),
              (status = 400, description = "a bad field, or the preflight check that blocks, named by its code", body = Problem),
              (status = 409, description = "not ready: the resource is still being created", body = Problem)))]
pub async fn create_subscription(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<CreateSubscription>,
) -> Result<(StatusCode, Json<SubscriptionView>), ApiError> {
    let d = find(&app, &caller, &id).await?;
    Validator::new()
        .check(name_ok(&input.name), "name", NAME_RULE)
        .check(
            !input.source.is_empty() && input.source.len() <= 2048,
            "source",
            "a database id or a postgresql:// connection string",
        )
        .check(
            is_plain_identifier(&input.publication),
            "publication",
            "a lowercase identifier of at most 63 characters",
        )
        .finish()?;
    let request = Request {
        name: &input.name,
        source: &input.source,
        publication: &input.publication,
        copy_data: input.copy_data.unwrap_or(true),
    };
    let made = service.subscribe(&d, &request).await?;
    let event = changed(&caller, &d.id, "database.subscription_created", "create").data(json!({
        "subscription": made.name,
        "source": made.source_display,
        "publication": made.publication,
    }));
    service.record_event(&event).await?;
    let view = service.subscription_view(&d, &made).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

async fn find_subscription(
    app: &AppState,
    caller: &Caller,
    id: &str,
    name: &str,
) -> Result<(plateau_store::databases::Database, Subscription), ApiError> {
    let d = find(app, caller, id).await?;
    let s = rows::get(app.db(), &d.id, name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no subscription {name} in database {id}")))?;
    Ok((d, s))
}

/// One subscription, with its lag and cutover verdict.
#[utoipa::path(get, path = "/databases/{id}/subscriptions/{name}", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id"),
           ("name" = String, Path, description = "subscription name")),
    responses((status = 200, description = "the subscription", body = SubscriptionView),
              (status = 404, description = "no such subscription", body = Problem)))]
pub async fn get_subscription(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path((id, name)): Path<(String, String)>,
) -> Result<Json<SubscriptionView>, ApiError> {
    let (d, s) = find_subscription(&app, &caller, &id, &name).await?;
    Ok(Json(service.subscription_view(&d, &s).await?))
}

/// Drop a subscription, with its replication slot on the source.
#[utoipa::path(delete, path = "/databases/{id}/subscriptions/{name}", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id"),
           ("name" = String, Path, description = "subscription name")),
    responses((status = 204, description = "dropped"),
              (status = 404, description = "no such subscription", body = Problem)))]
pub async fn drop_subscription(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path((id, name)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let (d, s) = find_subscription(&app, &caller, &id, &name).await?;
    service.unsubscribe(&d, &s).await?;
    let event = changed(&caller, &d.id, "database.subscription_dropped", "delete")
        .data(json!({ "subscription": name }));
    service.record_event(&event).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Before a cutover (writes to the source stopped, the lag at 0): moves
/// each of this database's sequences the source has used to the source's
/// value, never back.
#[utoipa::path(post, path = "/databases/{id}/subscriptions/{name}/sync-sequences", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id"),
           ("name" = String, Path, description = "subscription name")),
    responses((status = 200, description = "the sequences set", body = Vec<SyncedSequence>),
              (status = 400, description = "the source cannot be reached", body = Problem),
              (status = 404, description = "no such subscription", body = Problem)))]
pub async fn sync_sequences(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path((id, name)): Path<(String, String)>,
) -> Result<Json<Vec<SyncedSequence>>, ApiError> {
    let (d, s) = find_subscription(&app, &caller, &id, &name).await?;
    let synced = service.sync_sequences(&d, &s).await?;
    let event = changed(&caller, &d.id, "database.sequences_synced", "update")
        .data(json!({ "subscription": name, "sequences": synced.len() }));
    service.record_event(&event).await?;
    Ok(Json(synced))
}
