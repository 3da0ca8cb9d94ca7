//! `/members/invites` and `/members/accept`: invitations to join an
//! organisation (see [`crate::routes::members`] for the rules).
//!
//! The link is `<origin>/console/invite/<secret>`, the origin being the
//! one the inviter's request came to (`Host`, and `X-Forwarded-Proto` from
//! a TLS proxy). When the organisation's email relay plugin is loaded, the
//! link is also mailed: the invitation schedules the relay a job
//! (`invite:<id>`, in the same transaction), which the relay queues from
//! its alert sender; the secret never enters the event timeline, which
//! webhooks and every `observability:read` token see.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use plateau_core::id::new_id;
use plateau_core::secret::{self, INVITE_PREFIX};
use plateau_core::{Role, time};
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::jobs::{self, JobKey};
use plateau_store::members::{self, Invite};
use plateau_store::{orgs, provision};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::admin::CreatedMember;
use super::members::{owners_only, parse_role};
use super::{Pairs, page_and_filters};
use crate::auth::{Caller, client_ip};
use crate::error::{ApiError, Problem};
use crate::json::{Body, Validator};
use crate::pagination::{Page, Pager};
use crate::state::AppState;

/// How long an invitation stays valid by default: 7 days.
pub const DEFAULT_INVITE_TTL_SECS: i64 = 7 * 24 * 3600;
/// The longest an invitation may stay valid: 30 days.
pub const MAX_INVITE_TTL_SECS: i64 = 30 * 24 * 3600;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InviteView {
    pub id: String,
    pub email: String,
    /// The role the invitee gets.
    pub role: String,
    /// pending, accepted, revoked or expired.
    pub status: String,
    /// The user id of who invited.
    pub invited_by: Option<String>,
    /// The user id the invitation made, once accepted.
    pub accepted_user_id: Option<String>,
    pub created_at: String,
    pub expires_at: String,
}

impl InviteView {
    fn from_row(i: Invite, now: i64) -> Self {
        let status = if i.accepted_at.is_some() {
            "accepted"
        } else if i.revoked_at.is_some() {
            "revoked"
        } else if i.expires_at <= now {
            "expired"
        } else {
            "pending"
        };
        InviteView {
            id: i.id,
            email: i.email,
            role: i.role,
            status: status.to_owned(),
            invited_by: i.invited_by,
            accepted_user_id: i.accepted_user,
            created_at: time::to_rfc3339(i.created_at),
            expires_at: time::to_rfc3339(i.expires_at),
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateInvite {
    pub email: String,
    /// owner, admin, member, billing or viewer; only owners invite owners.
    pub role: String,
    /// 1 to 2592000 (30 days); default 604800 (7 days).
    pub expires_in_seconds: Option<i64>,
}

/// An invitation just made: the only time its link is shown.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedInvite {
    pub invite: InviteView,
    /// The secret the invitee accepts with (`POST /members/accept`).
    pub secret: String,
    /// The console page that accepts it.
    pub link: String,
    /// Whether the link was also handed to the email relay (loaded); the
    /// relay sends it when the organisation configured it (`/email/config`).
    pub emailed: bool,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptInvite {
    /// The invitation's secret (`plti_...`, the last part of its link).
    pub secret: String,
    /// The new member's name.
    pub name: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceptedInvite {
    pub organization_id: String,
    pub organization_name: String,
    pub member: CreatedMember,
}

/// The origin the request came to.
fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let scheme = match headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
    {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}

/// The organisation's invitations, oldest first.
#[utoipa::path(get, path = "/members/invites", tag = "members",
    security(("bearer" = ["members:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "invitations", body = Page<InviteView>)))]
pub async fn list_invites(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<InviteView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(app.cursors(), &page, "invites", &caller.org_id, filters)?;
    let listed = members::list_invites(app.db(), &caller.org_id, pager.keyset()).await?;
    let now = time::now_ms();
    Ok(Json(pager.finish(
        listed,
        |i| i.id.clone(),
        |i| InviteView::from_row(i, now),
    )))
}

/// Invite someone by email. The answer holds the link once; the relay
/// mails it when configured.
#[utoipa::path(post, path = "/members/invites", tag = "members",
    security(("bearer" = ["members:write"])),
    request_body = CreateInvite,
    responses((status = 201, description = "the invitation and its link", body = CreatedInvite),
        (status = 403, description = "owners only (owner_required), or not an owner or admin (role_required)", body = Problem,
            content_type = "application/problem+json")))]
pub async fn invite(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Body(input): Body<CreateInvite>,
) -> Result<(StatusCode, Json<CreatedInvite>), ApiError> {
    caller.require_manager("inviting members")?;
    let email = input.email.trim().to_owned();
    let ttl = input.expires_in_seconds.unwrap_or(DEFAULT_INVITE_TTL_SECS);
    Validator::new()
        .check(
            valid_email(&email),
            "email",
            "email must be an address like ann@example.com",
        )
        .check(
            (1..=MAX_INVITE_TTL_SECS).contains(&ttl),
            "expiresInSeconds",
            "expiresInSeconds must be between 1 and 2592000 (30 days)",
        )
        .finish()?;
    let role = parse_role("role", &input.role)?;
    owners_only(&caller, role == Role::Owner)?;
    let now = time::now_ms();
    let secret = secret::generate(INVITE_PREFIX);
    let invite = Invite {
        id: new_id("inv"),
        org_id: caller.org_id.clone(),
        email: email.clone(),
        role: role.as_str().to_owned(),
        invited_by: Some(caller.user_id.clone()),
        created_at: now,
        expires_at: now + ttl * 1000,
        accepted_at: None,
        accepted_user: None,
        revoked_at: None,
    };
    let link = format!("{}/console/invite/{secret}", origin(&headers));
    let mut tx = app.db().begin().await?;
    members::insert_invite(&mut tx, &invite, &secret::hash(&secret)).await?;
    // The relay is loaded when its scopes are known.
    let emailed = app.is_known_scope("email:send");
    if emailed {
        let mail = json!({
            "to": [email],
            "subject": format!("You are invited to {} on Plateau", caller.org_name),
            "text": format!(
                "{} invited you to join the organisation {} as {role}.\n\n\
                 Accept before {}: {link}\n\nIf you did not expect this, ignore this email.",
                caller.user_name, caller.org_name, time::to_rfc3339(invite.expires_at)
            ),
        });
        let job = JobKey {
            plugin: EMAIL_PLUGIN.to_owned(),
            namespace: caller.org_id.clone(),
            kind: "job".to_owned(),
            key: format!("invite:{}", invite.id),
        };
        jobs::schedule(&mut tx, &job, now, None, &mail.to_string()).await?;
    }
    let event = NewEvent::audited(
        &caller.org_id,
        "member.invited",
        "members",
        "create",
        &caller.actor(),
    )
    .resource("invite", &invite.id)
    .data(json!({ "email": email, "role": role, "expiresAt": time::to_rfc3339(invite.expires_at), "emailed": emailed }));
    events::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedInvite {
            invite: InviteView::from_row(invite, now),
            secret,
            link,
            emailed,
        }),
    ))
}

/// The email relay plugin's name.
const EMAIL_PLUGIN: &str = "email";

fn valid_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && email.len() <= 254
        && !email
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '<' || c == '>' || c == ',')
}

/// Revoke a pending invitation.
#[utoipa::path(delete, path = "/members/invites/{id}", tag = "members",
    security(("bearer" = ["members:write"])),
    params(("id" = String, Path, description = "invitation id")),
    responses((status = 200, description = "the revoked invitation", body = InviteView),
        (status = 409, description = "it was already accepted or revoked (invite_closed)", body = Problem,
            content_type = "application/problem+json")))]
pub async fn revoke_invite(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<InviteView>, ApiError> {
    caller.require_manager("revoking invitations")?;
    let not_found = || ApiError::not_found(format!("invitation {id} does not exist"));
    let mut tx = app.db().begin().await?;
    let invite = members::get_invite(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(not_found)?;
    owners_only(&caller, invite.role == Role::Owner.as_str())?;
    let now = time::now_ms();
    if !members::revoke_invite(&mut tx, &caller.org_id, &id, now).await? {
        return Err(ApiError::conflict(
            "invite_closed",
            "the invitation was already accepted or revoked",
        ));
    }
    let event = NewEvent::audited(
        &caller.org_id,
        "member.invite_revoked",
        "members",
        "revoke",
        &caller.actor(),
    )
    .resource("invite", &id)
    .data(json!({ "email": invite.email, "role": invite.role }));
    events::record(&mut tx, &event, now).await?;
    let invite = members::get_invite(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(not_found)?;
    tx.commit().await?;
    Ok(Json(InviteView::from_row(invite, now)))
}

/// Accept an invitation: no token needed, the secret is the credential.
/// Adds the member with the invited role and returns their first token
/// once.
#[utoipa::path(post, path = "/members/accept", tag = "members",
    security(()),
    request_body = AcceptInvite,
    responses((status = 201, description = "the new member and their token", body = AcceptedInvite),
        (status = 404, description = "no invitation has this secret", body = Problem,
            content_type = "application/problem+json"),
        (status = 409, description = "the invitation expired, was revoked or was accepted (invite_closed)", body = Problem,
            content_type = "application/problem+json")))]
pub async fn accept(
    State(app): State<AppState>,
    request: axum::extract::Request,
) -> Result<(StatusCode, Json<AcceptedInvite>), ApiError> {
    let ip = client_ip(&request);
    let Body(input) =
        <Body<AcceptInvite> as axum::extract::FromRequest<AppState>>::from_request(request, &app)
            .await?;
    Validator::new().name("name", &input.name).finish()?;
    if !secret::is_well_formed(&input.secret, INVITE_PREFIX) {
        return Err(ApiError::invalid(
            "secret",
            "secret must be the invitation's plti_ secret, the last part of its link",
        ));
    }
    let mut tx = app.db().begin().await?;
    let invite = members::invite_by_secret(&mut tx, &secret::hash(&input.secret))
        .await?
        .ok_or_else(|| ApiError::not_found("no invitation has this secret"))?;
    let role = parse_role("role", &invite.role)?;
    let actor = Actor {
        kind: "invite".to_owned(),
        id: Some(invite.id.clone()),
        user_id: None,
        ip,
    };
    let member = provision::add_member_in(
        &mut tx,
        &invite.org_id,
        input.name.trim(),
        Some(invite.email.clone()),
        role,
        None,
        &actor,
    )
    .await?;
    let now = time::now_ms();
    if !members::mark_accepted(&mut tx, &invite.id, &member.user.id, now).await? {
        return Err(ApiError::conflict(
            "invite_closed",
            "the invitation expired, was revoked or was already accepted: ask for a new one",
        ));
    }
    let event = NewEvent::audited(
        &invite.org_id,
        "member.invite_accepted",
        "members",
        "update",
        &actor,
    )
    .resource("invite", &invite.id)
    .data(json!({ "userId": member.user.id, "email": invite.email, "role": role }));
    events::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    let org = orgs::get(app.db(), &invite.org_id)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("organization {} vanished", invite.org_id)))?;
    Ok((
        StatusCode::CREATED,
        Json(AcceptedInvite {
            organization_id: org.id,
            organization_name: org.name,
            member: member.into(),
        }),
    ))
}
