//! The container registry's repositories and tags as JSON, for people and
//! the console: what `/v2/_catalog` and `tags/list` give OCI clients, with
//! the sizes and times those formats leave out. Pushing and pulling stay
//! the OCI Distribution API's (spec 4.8).

use axum::Json;
use axum::extract::{Path, State};
use plateau_core::time;
use plateau_store::registry::repositories::{self, Summary, Tag};
use serde::Serialize;
use utoipa::ToSchema;

use super::{Pairs, page_and_filters};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::pagination::{Page, Pager};
use crate::state::AppState;

/// A repository of the organisation's registry namespace.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryView {
    /// The repository's path inside the organisation's namespace: what
    /// follows `<registry host>/<organization id>/` in an image reference.
    pub path: String,
    /// The full OCI repository name, `<organization id>/<path>`.
    pub name: String,
    pub tag_count: i64,
    /// Bytes of the layers and configs the repository may serve (a blob
    /// shared by two repositories counts in both).
    pub size_bytes: i64,
    /// RFC 3339: when a tag last moved; none without tags.
    pub pushed_at: Option<String>,
    pub created_at: String,
}

impl RepositoryView {
    fn new(org_id: &str, s: Summary) -> RepositoryView {
        let prefix = format!("{org_id}/");
        RepositoryView {
            path: s.name.strip_prefix(&prefix).unwrap_or(&s.name).to_owned(),
            name: s.name,
            tag_count: s.tag_count,
            size_bytes: s.size_bytes,
            pushed_at: s.pushed_at.map(time::to_rfc3339),
            created_at: time::to_rfc3339(s.created_at),
        }
    }
}

/// A tag and the manifest digest it names.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TagView {
    pub tag: String,
    /// `sha256:...`: pull `<name>@<digest>` to pin it.
    pub digest: String,
    /// RFC 3339: when the tag was last pushed.
    pub updated_at: String,
}

impl From<Tag> for TagView {
    fn from(t: Tag) -> TagView {
        TagView {
            tag: t.tag,
            digest: t.digest,
            updated_at: time::to_rfc3339(t.updated_at),
        }
    }
}

/// List the organisation's registry repositories, by path.
#[utoipa::path(get, path = "/registry/repositories", tag = "registry",
    security(("bearer" = ["registry:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "repositories", body = Page<RepositoryView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<RepositoryView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(
        app.cursors(),
        &page,
        "registry-repositories",
        &caller.org_id,
        filters,
    )?;
    let listed = repositories::summaries(app.db(), &caller.org_id, pager.keyset()).await?;
    let org = caller.org_id.clone();
    Ok(Json(pager.finish(
        listed,
        |s| s.name.clone(),
        |s| RepositoryView::new(&org, s),
    )))
}

/// The organisation's repository `path` (a path with `/` is sent encoded
/// as `%2F`), or 404.
async fn find(app: &AppState, caller: &Caller, path: &str) -> Result<Summary, ApiError> {
    let name = format!("{}/{path}", caller.org_id);
    repositories::summary(app.db(), &caller.org_id, &name)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "repository {path} does not exist: list them with GET /registry/repositories"
            ))
        })
}

/// One repository.
#[utoipa::path(get, path = "/registry/repositories/{path}", tag = "registry",
    security(("bearer" = ["registry:read"])),
    params(("path" = String, Path, description = "the repository's path in the organisation's namespace, `/` encoded as `%2F`")),
    responses((status = 200, description = "the repository", body = RepositoryView)))]
pub async fn get(
    State(app): State<AppState>,
    caller: Caller,
    Path(path): Path<String>,
) -> Result<Json<RepositoryView>, ApiError> {
    let summary = find(&app, &caller, &path).await?;
    Ok(Json(RepositoryView::new(&caller.org_id, summary)))
}

/// List a repository's tags, by name.
#[utoipa::path(get, path = "/registry/repositories/{path}/tags", tag = "registry",
    security(("bearer" = ["registry:read"])),
    params(("path" = String, Path, description = "the repository's path, `/` encoded as `%2F`"),
           ("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "tags", body = Page<TagView>)))]
pub async fn tags(
    State(app): State<AppState>,
    caller: Caller,
    Path(path): Path<String>,
    pairs: Pairs,
) -> Result<Json<Page<TagView>>, ApiError> {
    let repository = find(&app, &caller, &path).await?;
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(
        app.cursors(),
        &page,
        "registry-tags",
        &repository.name,
        filters,
    )?;
    let listed = repositories::tags(app.db(), &repository.name, pager.keyset()).await?;
    Ok(Json(pager.finish(listed, |t| t.tag.clone(), TagView::from)))
}
