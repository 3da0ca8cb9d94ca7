//! The database branch of a preview (`dbBranchId`): only a branch (never
//! a production database) of the caller's organisation and of the app's
//! project; the preview gets its owner's connection string, and the
//! branch is deleted with the preview unless it is protected then. A
//! branch goes with one preview at most, so deleting one preview never
//! takes another's database.

use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_databases::DatabaseService;
use plateau_store::apps::App;
use plateau_store::databases::{self as dbs, branches};
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::managed::{self, Table};
use plateau_store::{Db, Tx};
use serde_json::json;

const FIELD: &str = "dbBranchId";

/// The owner's connection string of database branch `branch_id`, once
/// checked: the caller may read its password (owners and admins with
/// databases:write, as `GET /databases/{id}/connection`), it is a branch
/// of the organisation in `parent`'s project, and it runs.
pub(super) async fn branch_uri(
    db: &Db,
    databases: &DatabaseService,
    caller: &Caller,
    parent: &App,
    branch_id: &str,
) -> Result<String, ApiError> {
    caller.require_manager("giving a preview a database branch's password")?;
    if !caller.scopes.allows("databases:write") {
        return Err(ApiError::forbidden(
            "insufficient_scope",
            "dbBranchId needs a token with databases:write: the preview gets the branch owner's password",
        ));
    }
    let missing = || {
        ApiError::invalid(
            FIELD,
            format!("no database branch {branch_id} in this organization"),
        )
    };
    let d = dbs::get(db, &caller.org_id, branch_id)
        .await?
        .ok_or_else(missing)?;
    let branch = branches::of(db, &d.id).await?;
    match branch {
        Some(b) if b.org_id == caller.org_id => {}
        Some(_) => return Err(missing()),
        None => {
            return Err(ApiError::invalid(
                FIELD,
                format!(
                    "{branch_id} is a production database, not a branch: a preview deletes its database branch"
                ),
            ));
        }
    }
    if d.project_id.as_deref() != Some(parent.project_id.as_str()) {
        return Err(ApiError::invalid(
            FIELD,
            format!(
                "{branch_id} is not in project {} of app {}",
                parent.project_id, parent.id
            ),
        ));
    }
    if d.status == plateau_kernel::Status::Deleting.as_str() {
        return Err(ApiError::invalid(
            FIELD,
            format!("{branch_id} is being deleted"),
        ));
    }
    plateau_databases::api::owner_uri(databases, &d).await
}

/// Asks for the deletion of database branch `branch_id` of a preview of
/// `app` in `tx`, with its audited event; what became of it: `deleting`,
/// `kept: protected` (protected since the preview was made) or `gone`.
pub(super) async fn delete_branch(
    db: &Db,
    tx: &mut Tx,
    app: &App,
    branch_id: &str,
    actor: &Actor,
    now: i64,
) -> Result<&'static str, ApiError> {
    let Some(d) = dbs::get(db, &app.org_id, branch_id).await? else {
        return Ok("gone");
    };
    match branches::of(db, &d.id).await? {
        Some(b) if b.protected == 0 => {}
        Some(_) => return Ok("kept: protected"),
        None => return Ok("kept: not a branch"),
    }
    let deleting = plateau_kernel::Status::Deleting.as_str();
    if !managed::request(tx, Table::Databases, &app.org_id, &d.id, deleting, now).await? {
        return Ok("gone");
    }
    let e = NewEvent::audited(
        &app.org_id,
        "database.deleted",
        "resources",
        "delete",
        actor,
    )
    .resource("database", &d.id)
    .data(json!({ "name": d.name, "previewOf": app.id }));
    events::record(tx, &e, now).await?;
    Ok("deleting")
}
