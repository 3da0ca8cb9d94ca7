//! `/members` (spec section 1, "members"): who belongs to the organisation
//! and with which role, invitations by email, role changes and removal.
//!
//! A role is a set of scopes (`plateau_core::role`): each call's token acts
//! with the scopes it carries that its user's role allows, so a role change
//! holds on the member's next call. Only owners make or unmake owners, and
//! the last owner can be neither demoted nor removed (409 `last_owner`).
//! Every change is an audited event in the `members` category.
//!
//! An invitation is a link whose last part is a random secret (`plti_`,
//! kept as its SHA-256 only), valid once and for `expiresInSeconds`
//! (default 7 days). `POST /members/accept` with the secret and a name
//! adds the member with the invited role and returns their first token
//! once. The link is shown to the inviter once; when the organisation's
//! email relay is configured it is also mailed to the invitee (see
//! [`crate::routes::invites`]).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_core::{Role, time};
use plateau_store::events::{self, NewEvent};
use plateau_store::members;
use plateau_store::orgs::Member;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{Pairs, page_and_filters};
use crate::auth::Caller;
use crate::error::{ApiError, Problem};
use crate::json::Body;
use crate::pagination::{Page, Pager};
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub user_id: String,
    pub name: String,
    pub email: Option<String>,
    /// owner, admin, member, billing or viewer.
    pub role: String,
    pub joined_at: String,
}

impl From<Member> for MemberView {
    fn from(m: Member) -> Self {
        MemberView {
            user_id: m.user_id,
            name: m.name,
            email: m.email,
            role: m.role,
            joined_at: time::to_rfc3339(m.created_at),
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeRole {
    /// owner, admin, member, billing or viewer.
    pub role: String,
}

/// Parses a role field.
pub fn parse_role(field: &str, value: &str) -> Result<Role, ApiError> {
    value
        .parse::<Role>()
        .map_err(|e| ApiError::invalid(field, e.to_string()))
}

/// Refuses a change that makes or unmakes an owner unless the caller is one.
pub fn owners_only(caller: &Caller, touches_owner: bool) -> Result<(), ApiError> {
    if touches_owner && caller.role != Role::Owner {
        return Err(ApiError::forbidden(
            "owner_required",
            "only an owner may make, change or remove an owner",
        ));
    }
    Ok(())
}

fn last_owner(what: &str) -> ApiError {
    ApiError::conflict(
        "last_owner",
        format!("the organisation's last owner cannot be {what}: make another member owner first"),
    )
}

/// The organisation's members, in user id order.
#[utoipa::path(get, path = "/members", tag = "members",
    security(("bearer" = ["members:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "members", body = Page<MemberView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<MemberView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(app.cursors(), &page, "members", &caller.org_id, filters)?;
    let listed = members::list(app.db(), &caller.org_id, pager.keyset()).await?;
    Ok(Json(pager.finish(
        listed,
        |m| m.user_id.clone(),
        MemberView::from,
    )))
}

/// Change a member's role. Only owners make or unmake owners; the last
/// owner keeps the role.
#[utoipa::path(patch, path = "/members/{userId}", tag = "members",
    security(("bearer" = ["members:write"])),
    params(("userId" = String, Path, description = "the member's user id")),
    request_body = ChangeRole,
    responses((status = 200, description = "the member with the new role", body = MemberView),
        (status = 403, description = "owners only (owner_required), or not an owner or admin (role_required)", body = Problem,
            content_type = "application/problem+json"),
        (status = 409, description = "the last owner (last_owner)", body = Problem,
            content_type = "application/problem+json")))]
pub async fn update(
    State(app): State<AppState>,
    caller: Caller,
    Path(user_id): Path<String>,
    Body(input): Body<ChangeRole>,
) -> Result<Json<MemberView>, ApiError> {
    caller.require_manager("changing roles")?;
    let role = parse_role("role", &input.role)?;
    let not_found = || ApiError::not_found(format!("member {user_id} does not exist"));
    let mut tx = app.db().begin().await?;
    let owners = members::owners_for_update(&mut tx, &caller.org_id).await?;
    let member = members::get(&mut tx, &caller.org_id, &user_id)
        .await?
        .ok_or_else(not_found)?;
    let was_owner = member.role == Role::Owner.as_str();
    owners_only(&caller, was_owner || role == Role::Owner)?;
    if was_owner && role != Role::Owner && owners <= 1 {
        return Err(last_owner("demoted"));
    }
    let now = time::now_ms();
    if member.role != role.as_str() {
        members::set_role(&mut tx, &caller.org_id, &user_id, role).await?;
        let event = NewEvent::audited(
            &caller.org_id,
            "member.role_changed",
            "members",
            "update",
            &caller.actor(),
        )
        .resource("user", &user_id)
        .data(json!({ "name": member.name, "from": member.role, "to": role }));
        events::record(&mut tx, &event, now).await?;
    }
    let member = members::get(&mut tx, &caller.org_id, &user_id)
        .await?
        .ok_or_else(not_found)?;
    tx.commit().await?;
    app.token_cache().evict_user(&caller.org_id, &user_id);
    Ok(Json(member.into()))
}

/// Remove a member: their membership ends and their tokens here are
/// revoked. Only owners remove owners; the last owner stays.
#[utoipa::path(delete, path = "/members/{userId}", tag = "members",
    security(("bearer" = ["members:write"])),
    params(("userId" = String, Path, description = "the member's user id")),
    responses((status = 204, description = "removed"),
        (status = 403, description = "owners only (owner_required), or not an owner or admin (role_required)", body = Problem,
            content_type = "application/problem+json"),
        (status = 409, description = "the last owner (last_owner)", body = Problem,
            content_type = "application/problem+json")))]
pub async fn remove(
    State(app): State<AppState>,
    caller: Caller,
    Path(user_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.require_manager("removing members")?;
    let mut tx = app.db().begin().await?;
    let owners = members::owners_for_update(&mut tx, &caller.org_id).await?;
    let member = members::get(&mut tx, &caller.org_id, &user_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("member {user_id} does not exist")))?;
    let was_owner = member.role == Role::Owner.as_str();
    owners_only(&caller, was_owner)?;
    if was_owner && owners <= 1 {
        return Err(last_owner("removed"));
    }
    let now = time::now_ms();
    members::remove(&mut tx, &caller.org_id, &user_id, now).await?;
    let event = NewEvent::audited(
        &caller.org_id,
        "member.removed",
        "members",
        "delete",
        &caller.actor(),
    )
    .resource("user", &user_id)
    .data(json!({ "name": member.name, "role": member.role }));
    events::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    app.token_cache().evict_user(&caller.org_id, &user_id);
    Ok(StatusCode::NO_CONTENT)
}
