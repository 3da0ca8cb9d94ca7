//! Content discovery: tag lists and the catalog (both with `n` and
//! `last`, and a `Link` to the next page), and the referrers API with
//! `artifactType` filtering.

use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use plateau_store::registry::{manifests, repositories};
use serde_json::{Value, json};

use super::{Ctx, query, query_value};
use crate::Registry;
use crate::auth::Access;
use crate::error::{Error, Result};
use crate::manifest::OCI_INDEX;
use crate::reference::Digest;

/// Largest page, and the page size without `n`.
const MAX_PAGE: i64 = 1000;

/// `n` and `last` of a list request.
fn page(req: &Parts) -> Result<(i64, Option<String>)> {
    let q = query(req);
    let n = match query_value(&q, "n") {
        None => MAX_PAGE,
        Some(n) => n
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or_else(|| {
                Error::Unsupported(format!("n must be a non-negative integer, not {n:?}"))
            })?
            .min(MAX_PAGE),
    };
    Ok((n, query_value(&q, "last").map(str::to_owned)))
}

/// A JSON list response, with `Link: <...>; rel="next"` when more follow.
fn listed(body: Value, next: Option<String>) -> Response {
    let mut response = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Some(next) = next.and_then(|n| n.parse().ok()) {
        response.headers_mut().insert(header::LINK, next);
    }
    response
}

fn encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

pub async fn tags(ctx: &Ctx, req: &Parts) -> Result<Response> {
    if !repositories::exists(ctx.reg.db(), &ctx.access.org_id, &ctx.name).await? {
        return Err(Error::name_unknown(&ctx.name));
    }
    let (n, last) = page(req)?;
    if n == 0 {
        return Ok(listed(json!({ "name": ctx.name, "tags": [] }), None));
    }
    let mut tags = manifests::list_tags(ctx.reg.db(), &ctx.name, last.as_deref(), n + 1).await?;
    let more = tags.len() as i64 > n;
    tags.truncate(n as usize);
    let next = match (more, tags.last()) {
        (true, Some(last)) => Some(format!(
            "</v2/{}/tags/list?n={n}&last={}>; rel=\"next\"",
            ctx.name,
            encode(last)
        )),
        _ => None,
    };
    Ok(listed(json!({ "name": ctx.name, "tags": tags }), next))
}

/// `GET /v2/_catalog`: the caller's organisation's repositories.
pub async fn catalog(reg: &Registry, access: &Access, req: &Parts) -> Result<Response> {
    let (n, last) = page(req)?;
    if n == 0 {
        return Ok(listed(json!({ "repositories": [] }), None));
    }
    let mut repos = repositories::list(reg.db(), &access.org_id, last.as_deref(), n + 1).await?;
    let more = repos.len() as i64 > n;
    repos.truncate(n as usize);
    let next = match (more, repos.last()) {
        (true, Some(last)) => Some(format!(
            "</v2/_catalog?n={n}&last={}>; rel=\"next\"",
            encode(last)
        )),
        _ => None,
    };
    Ok(listed(json!({ "repositories": repos }), next))
}

pub async fn referrers(ctx: &Ctx, digest: &str, req: &Parts) -> Result<Response> {
    let digest = Digest::parse(digest)?;
    let q = query(req);
    let artifact_type = query_value(&q, "artifactType").filter(|t| !t.is_empty());
    let rows =
        manifests::referrers(ctx.reg.db(), &ctx.name, &digest.to_string(), artifact_type).await?;
    let descriptors: Vec<Value> = rows
        .into_iter()
        .map(|r| {
            let mut d = json!({ "mediaType": r.media_type, "digest": r.digest, "size": r.size });
            if let Some(t) = r.artifact_type {
                d["artifactType"] = Value::String(t);
            }
            if let Some(a) = r
                .annotations
                .and_then(|a| serde_json::from_str::<Value>(&a).ok())
            {
                d["annotations"] = a;
            }
            d
        })
        .collect();
    let body = json!({ "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": descriptors });
    let mut response = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, OCI_INDEX)],
        body.to_string(),
    )
        .into_response();
    if artifact_type.is_some() {
        response.headers_mut().insert(
            "oci-filters-applied",
            "artifactType".parse().expect("static"),
        );
    }
    Ok(response)
}
