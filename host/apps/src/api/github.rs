//! `/apps/{id}/github`: link the app to a git repository and branch, and
//! the push webhook that deploys it. The webhook speaks GitHub's format:
//! a `push` event signed with `X-Hub-Signature-256` (HMAC-SHA256 of the
//! body under the link's secret), named by `X-GitHub-Delivery`.

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use hmac::{Hmac, Mac};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_core::time;
use plateau_store::apps::git_links::{self, GitLink};
use plateau_store::apps::previews::{self, Preview};
use plateau_store::apps::{self as db};
use plateau_store::events::{self, Actor};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::Sha256;
use utoipa::ToSchema;

use super::deploy::check_git;
use super::{load, load_live_in};
use crate::Apps;
use crate::image::PullAs;
use crate::pipeline::{self, event};

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LinkRepo {
    /// A git URL among those the operator allows (`PLATEAU_APPS_GIT_ALLOW`).
    #[schema(min_length = 1)]
    pub repo: String,
    /// Pushes to this branch deploy the app; default `main`.
    #[schema(min_length = 1, max_length = 255)]
    pub branch: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitLinkView {
    pub linked: bool,
    pub repo: Option<String>,
    pub branch: Option<String>,
    /// Where the repository's host sends push events (content type JSON).
    pub webhook_url: Option<String>,
    /// The webhook secret: returned once, when the link is made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub linked_at: Option<String>,
}

/// Whether the app is linked, to which repository and branch.
#[utoipa::path(get, path = "/apps/{id}/github", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "the link", body = GitLinkView)))]
pub async fn get(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<GitLinkView>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let link = git_links::get(apps.db(), &app.id).await?;
    Ok(Json(view(&apps, &app, link.as_ref(), None)))
}

/// Link the app to `repo` and `branch`: a push to the branch deploys it.
/// Linking again makes a new secret (the old one stops working) and acts
/// with the rights of the new caller's token.
#[utoipa::path(put, path = "/apps/{id}/github", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = LinkRepo,
    responses((status = 200, description = "the link, with its secret shown once", body = GitLinkView),
              (status = 422, description = "a git URL the operator does not allow", body = plateau_api::error::Problem)))]
pub async fn put(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<LinkRepo>,
) -> Result<Json<GitLinkView>, ApiError> {
    load(apps.db(), &caller, &id).await?;
    let repo = input.repo.trim().to_owned();
    let branch = input.branch.unwrap_or_else(|| "main".to_owned());
    check_git(&apps, &repo, &branch)?;
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let mut app = load_live_in(&mut tx, &caller, &id).await?;
    db::set_git(&mut tx, &app.id, &repo, &branch, now).await?;
    let secret = plateau_core::secret::generate("");
    let sealed = apps
        .inner
        .sealer
        .seal(&context(&app.id), secret.as_bytes())
        .map_err(|e| ApiError::Internal(format!("sealing the webhook secret: {e}")))?;
    let existing = git_links::get(apps.db(), &app.id).await?;
    let link = GitLink {
        app_id: app.id.clone(),
        org_id: app.org_id.clone(),
        secret: sealed,
        token_id: caller.token_id.clone(),
        user_id: Some(caller.user_id.clone()),
        created_at: existing.map_or(now, |l| l.created_at),
        updated_at: now,
    };
    git_links::upsert(&mut tx, &link).await?;
    let e = event(&app, "app.git.linked", "update", &caller.actor())
        .data(json!({ "repo": repo, "branch": branch }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    app.repo = Some(repo);
    app.branch = Some(branch);
    app.source_type = "git".to_owned();
    Ok(Json(view(&apps, &app, Some(&link), Some(secret))))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushOutcome {
    /// `deploying`, `closed` (the push deleted the branch of an open
    /// preview, which is deleted), `ignored`, `duplicate` or `pong`.
    pub status: String,
    /// The app deploying: the linked app, or a preview's app.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_id: Option<String>,
    /// Why an event was ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
}

/// GitHub's push webhook for a linked app. The signature is the
/// credential (no token): a push to the linked branch deploys it, a push
/// to a branch with an open preview deploys the preview, and one that
/// deletes that branch deletes the preview (as `DELETE
/// .../previews/{previewId}` does); a delivery seen before, another branch
/// or another event is acknowledged and ignored.
#[utoipa::path(post, path = "/apps/{id}/github/push", tag = "apps",
    security(()),
    params(("id" = String, Path, description = "app id"),
           ("X-Hub-Signature-256" = String, Header, description = "sha256=<hex HMAC-SHA256 of the body>"),
           ("X-GitHub-Delivery" = String, Header, description = "the delivery's id"),
           ("X-GitHub-Event" = String, Header, description = "push or ping")),
    request_body(content = Vec<u8>, content_type = "application/json", description = "GitHub's push payload"),
    responses((status = 200, description = "acknowledged without a deployment", body = PushOutcome),
              (status = 202, description = "a deployment of the pushed branch started, or the preview of a deleted branch is being deleted", body = PushOutcome),
              (status = 400, description = "a payload that is not a push event's JSON", body = plateau_api::error::Problem),
              (status = 401, description = "no signature, or a wrong one", body = plateau_api::error::Problem),
              (status = 404, description = "no linked app", body = plateau_api::error::Problem)))]
pub async fn push(
    Extension(apps): Extension<Apps>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<PushOutcome>), ApiError> {
    let unlinked = || ApiError::not_found(format!("app {id} is not linked to a repository"));
    let app = db::get_any(apps.db(), &id).await?.ok_or_else(unlinked)?;
    let link = git_links::get(apps.db(), &app.id)
        .await?
        .ok_or_else(unlinked)?;
    let secret = apps
        .inner
        .sealer
        .open(&context(&app.id), &link.secret)
        .map_err(|e| ApiError::Internal(format!("opening the webhook secret: {e}")))?;
    verify(&headers, &secret, &body)?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let outcome = |status: &str, reason: Option<String>| PushOutcome {
        status: status.to_owned(),
        app_id: None,
        reason,
        deployment_id: None,
    };
    match header("x-github-event") {
        Some("ping") => return Ok((StatusCode::OK, Json(outcome("pong", None)))),
        Some("push") => {}
        other => {
            let why = format!("{} events do not deploy", other.unwrap_or("unnamed"));
            return Ok((StatusCode::OK, Json(outcome("ignored", Some(why)))));
        }
    }
    let delivery = header("x-github-delivery")
        .filter(|d| !d.is_empty() && d.len() <= 200)
        .ok_or_else(|| ApiError::invalid("X-GitHub-Delivery", "must name the delivery"))?
        .to_owned();
    let payload: PushPayload = serde_json::from_slice(&body)
        .map_err(|e| ApiError::invalid("body", format!("not a push event: {e}")))?;
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    if !git_links::first_delivery(&mut tx, &app.id, &delivery, now).await? {
        return Ok((StatusCode::OK, Json(outcome("duplicate", None))));
    }
    let branch = app.branch.clone().unwrap_or_else(|| "main".to_owned());
    let pushed = payload
        .r#ref
        .strip_prefix("refs/heads/")
        .unwrap_or(&payload.r#ref);
    // Another branch deploys its open preview, if it has one.
    let preview = if pushed != branch && app.deleted_at.is_none() {
        super::previews::open_for_push(&mut tx, &app, pushed).await?
    } else {
        None
    };
    let target = preview.as_ref().unwrap_or(&app);
    let actor = Actor {
        kind: "github".to_owned(),
        id: Some(delivery),
        user_id: link.user_id.clone(),
        ip: None,
    };
    if payload.deletes_branch() && preview.is_some() {
        // The branch of an open preview is gone: the preview goes with it.
        let closed = close_for_deleted_branch(&apps, &mut tx, &app, pushed, &actor, now).await?;
        tx.commit_last().await?;
        if let Some(p) = closed {
            let preview_app = p.app_id.clone();
            super::previews::finish_close(&apps, p).await?;
            tracing::info!(app = %app.id, preview = %preview_app, branch = pushed, "apps: a deleted branch closed its preview");
            return Ok((
                StatusCode::ACCEPTED,
                Json(PushOutcome {
                    status: "closed".to_owned(),
                    app_id: Some(preview_app),
                    reason: Some(format!("branch {pushed} was deleted")),
                    deployment_id: None,
                }),
            ));
        }
        return Ok((StatusCode::OK, Json(outcome("ignored", None))));
    }
    let ignored = if app.deleted_at.is_some() {
        Some("the app is in the trash".to_owned())
    } else if payload.deletes_branch() {
        Some(format!("branch {pushed} was deleted"))
    } else if pushed != branch && preview.is_none() {
        Some(format!(
            "{pushed} is not the linked branch {branch} and has no open preview"
        ))
    } else if crate::AppStatus::Paused.is(&target.status) {
        Some(format!("app {} is paused", target.id))
    } else {
        None
    };
    if let Some(reason) = ignored {
        tx.commit_last().await?;
        return Ok((StatusCode::OK, Json(outcome("ignored", Some(reason)))));
    }
    let repo = app.repo.clone().unwrap_or_default();
    let d = pipeline::pending_git(target, &repo, pushed);
    pipeline::create(&mut tx, target, &d, &actor).await?;
    tx.commit_last().await?;
    let who = PullAs {
        org_id: app.org_id.clone(),
        token_id: link.token_id.clone(),
        user_id: link.user_id.clone(),
    };
    apps.spawn_pipeline(target.id.clone(), d.id.clone(), Some(who));
    tracing::info!(app = %target.id, commit = %payload.after, "apps: a push deploys");
    Ok((
        StatusCode::ACCEPTED,
        Json(PushOutcome {
            status: "deploying".to_owned(),
            app_id: Some(target.id.clone()),
            reason: None,
            deployment_id: Some(d.id),
        }),
    ))
}

/// A push deleted `branch` of `app`'s repository: its open preview, if
/// any, is closed in `tx` as `DELETE .../previews/{id}` closes it; the
/// caller commits, then finishes the close.
async fn close_for_deleted_branch(
    apps: &Apps,
    tx: &mut plateau_store::Tx,
    app: &db::App,
    branch: &str,
    actor: &Actor,
    now: i64,
) -> Result<Option<Preview>, ApiError> {
    let Some(p) = previews::for_branch(tx, &app.id, branch).await? else {
        return Ok(None);
    };
    if p.status != "open" {
        return Ok(None);
    }
    super::previews::close(apps.db(), tx, app, &p, actor, now).await?;
    Ok(Some(p))
}

/// The fields of GitHub's push payload this reads.
#[derive(Deserialize)]
struct PushPayload {
    r#ref: String,
    #[serde(default)]
    after: String,
    #[serde(default)]
    deleted: bool,
}

impl PushPayload {
    /// Whether the push deleted its branch: `deleted`, or GitHub's `after`
    /// of all zeros.
    fn deletes_branch(&self) -> bool {
        self.deleted || (!self.after.is_empty() && self.after.bytes().all(|b| b == b'0'))
    }
}

/// Checks `X-Hub-Signature-256` against the body, in constant time.
fn verify(headers: &HeaderMap, secret: &[u8], body: &[u8]) -> Result<(), ApiError> {
    let refused = |detail: &str| ApiError::Unauthenticated {
        code: "bad_signature",
        detail: detail.to_owned(),
    };
    let signature = headers
        .get("x-hub-signature-256")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("sha256="))
        .ok_or_else(|| refused("X-Hub-Signature-256 is missing"))?;
    let signature =
        hex::decode(signature).map_err(|_| refused("X-Hub-Signature-256 is not hex"))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("any key length");
    mac.update(body);
    mac.verify_slice(&signature)
        .map_err(|_| refused("X-Hub-Signature-256 does not match the link's secret"))
}

fn context(app_id: &str) -> String {
    format!("app-git-link:{app_id}")
}

fn view(apps: &Apps, app: &db::App, link: Option<&GitLink>, secret: Option<String>) -> GitLinkView {
    GitLinkView {
        linked: link.is_some(),
        repo: link.and(app.repo.clone()),
        branch: link.and(app.branch.clone()),
        webhook_url: link.map(|_| {
            format!(
                "{}{}/apps/{}/github/push",
                apps.config().public_url.trim_end_matches('/'),
                plateau_api::API_PREFIX,
                app.id
            )
        }),
        secret,
        linked_at: link.map(|l| time::to_rfc3339(l.updated_at)),
    }
}
