//! Manifests: `PUT` by tag or digest (with `?tag=`), `GET`/`HEAD` with
//! content negotiation, `DELETE` by digest or tag. A push checks that
//! every blob and child manifest is there, records what the manifest
//! references (GC keeps those), its subject (the referrers API), and an
//! event in the organisation's timeline.

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use plateau_core::time;
use plateau_store::events::{self, NewEvent};
use plateau_store::registry::{blobs, manifests, repositories};
use serde_json::json;

use super::{Ctx, query};
use crate::error::{Error, Result};
use crate::manifest::{self, MAX_MANIFEST_BYTES};
use crate::quota::Allowance;
use crate::reference::{Algorithm, Reference, is_valid_tag};

pub async fn get(ctx: &Ctx, reference: &str, req: &Parts) -> Result<Response> {
    let reference = Reference::parse(reference)?;
    let digest = match &reference {
        Reference::Digest(d) => d.to_string(),
        Reference::Tag(t) => manifests::resolve_tag(ctx.reg.db(), &ctx.name, t)
            .await?
            .ok_or_else(|| unknown(&ctx.name, &reference))?,
    };
    let m = manifests::get(ctx.reg.db(), &ctx.name, &digest)
        .await?
        .ok_or_else(|| unknown(&ctx.name, &reference))?;
    let accept: Vec<String> = req
        .headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    if matches!(reference, Reference::Tag(_)) && !manifest::accepts(&accept, &m.media_type) {
        return Err(Error::ManifestUnknown(format!(
            "{}:{reference} is a {}, which the Accept header does not admit",
            ctx.name, m.media_type
        )));
    }
    let body = if req.method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(m.content)
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, &m.media_type)
        .header(header::CONTENT_LENGTH, m.size)
        .header("docker-content-digest", &m.digest)
        .header(header::ETAG, format!("\"{}\"", m.digest))
        .body(body)
        .map_err(|e| Error::Internal(e.to_string()))
}

fn unknown(name: &str, reference: &Reference) -> Error {
    Error::ManifestUnknown(format!("manifest {reference} is not in {name}"))
}

/// Reads a manifest: one declared longer than the limit is refused before
/// any of it is read, one that grows past it is cut there (413, and the
/// connection closes).
async fn read_body(body: Body) -> Result<Vec<u8>> {
    let too_large = || {
        Error::TooLarge(format!(
            "manifests are limited to {MAX_MANIFEST_BYTES} bytes"
        ))
    };
    if axum::body::HttpBody::size_hint(&body).lower() > MAX_MANIFEST_BYTES as u64 {
        return Err(too_large());
    }
    let mut body = body.into_data_stream();
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk =
            chunk.map_err(|e| Error::ManifestInvalid(format!("reading the manifest: {e}")))?;
        if out.len() + chunk.len() > MAX_MANIFEST_BYTES {
            return Err(too_large());
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

pub async fn put(ctx: &Ctx, reference: &str, req: &Parts, body: Body) -> Result<Response> {
    let reference = Reference::parse(reference)?;
    let mut tags: Vec<String> = query(req)
        .into_iter()
        .filter(|(k, _)| k == "tag")
        .map(|(_, v)| v)
        .collect();
    if let Some(bad) = tags.iter().find(|t| !is_valid_tag(t)) {
        return Err(Error::ManifestInvalid(format!(
            "{bad:?} is not a valid tag"
        )));
    }
    let content_type = req
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = read_body(body).await?;
    let parsed = manifest::parse(content_type.as_deref(), &body)?;
    let digest = match &reference {
        Reference::Digest(d) => {
            let actual = d.algorithm.digest_of(&body);
            if actual != *d {
                return Err(Error::DigestInvalid(format!(
                    "the manifest has digest {actual}, not {d}"
                )));
            }
            actual
        }
        Reference::Tag(t) => {
            tags.insert(0, t.clone());
            Algorithm::Sha256.digest_of(&body)
        }
    };
    let digest_s = digest.to_string();
    let org = ctx.access.org_id.clone();
    let existing = manifests::get(ctx.reg.db(), &ctx.name, &digest_s).await?;
    if existing.is_none() {
        Allowance::of(&ctx.reg, &org)
            .await?
            .check(body.len() as u64)?;
    }
    let now = time::now_ms();
    let mut tx = ctx.reg.db().begin().await?;
    let mut references = Vec::new();
    for blob in &parsed.blobs {
        let d = blob.digest.to_string();
        let size = blobs::touch(&mut tx, &org, &d, now).await?.ok_or_else(|| {
            Error::ManifestBlobUnknown(format!("blob {d} is not in the registry: push it first"))
        })?;
        if size != blob.size {
            return Err(Error::SizeInvalid(format!(
                "the descriptor of {d} says {} bytes, the blob has {size}",
                blob.size
            )));
        }
        blobs::link(&mut tx, &org, &ctx.name, &d, now).await?;
        references.push(d);
    }
    for child in &parsed.manifests {
        let d = child.digest.to_string();
        manifests::describe(&mut tx, &ctx.name, &d)
            .await?
            .ok_or_else(|| {
                Error::ManifestBlobUnknown(format!(
                    "manifest {d} is not in {}: push the index's manifests first",
                    ctx.name
                ))
            })?;
        references.push(d);
    }
    repositories::ensure(&mut tx, &org, &ctx.name, now).await?;
    let subject = parsed.subject.as_ref().map(|s| s.digest.to_string());
    manifests::put(
        &mut tx,
        &manifests::NewManifest {
            org_id: &org,
            repository: &ctx.name,
            digest: &digest_s,
            media_type: &parsed.media_type,
            artifact_type: parsed.artifact_type.as_deref(),
            subject: subject.as_deref(),
            annotations: parsed
                .annotations
                .as_ref()
                .map(|a| serde_json::Value::Object(a.clone()).to_string()),
            content: &body,
            references,
        },
        now,
    )
    .await?;
    for tag in &tags {
        manifests::set_tag(&mut tx, &org, &ctx.name, tag, &digest_s, now).await?;
    }
    let event = NewEvent::audited(
        &org,
        "registry.manifest.pushed",
        "registry",
        "create",
        &ctx.access.actor(),
    )
    .resource("registry_manifest", &format!("{}@{digest_s}", ctx.name))
    .data(json!({
        "repository": ctx.name,
        "digest": digest_s,
        "mediaType": parsed.media_type,
        "artifactType": parsed.artifact_type,
        "subject": subject,
        "tags": tags,
        "size": body.len(),
    }));
    events::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    let mut response = (
        StatusCode::CREATED,
        [
            (
                header::LOCATION,
                format!("/v2/{}/manifests/{digest_s}", ctx.name),
            ),
            (
                header::HeaderName::from_static("docker-content-digest"),
                digest_s.clone(),
            ),
            (header::CONTENT_LENGTH, "0".to_owned()),
        ],
    )
        .into_response();
    let headers = response.headers_mut();
    if let Some(subject) = subject.and_then(|s| HeaderValue::from_str(&s).ok()) {
        headers.insert("oci-subject", subject);
    }
    if matches!(reference, Reference::Digest(_))
        && !tags.is_empty()
        && let Ok(v) = HeaderValue::from_str(&tags.join(", "))
    {
        headers.insert("oci-tag", v);
    }
    Ok(response)
}

pub async fn delete(ctx: &Ctx, reference: &str) -> Result<Response> {
    let reference = Reference::parse(reference)?;
    let org = ctx.access.org_id.clone();
    let now = time::now_ms();
    let mut tx = ctx.reg.db().begin().await?;
    let event = match &reference {
        Reference::Digest(d) => {
            let digest = d.to_string();
            let tags = manifests::delete(&mut tx, &ctx.name, &digest)
                .await?
                .ok_or_else(|| unknown(&ctx.name, &reference))?;
            NewEvent::audited(
                &org,
                "registry.manifest.deleted",
                "registry",
                "delete",
                &ctx.access.actor(),
            )
            .resource("registry_manifest", &format!("{}@{digest}", ctx.name))
            .data(json!({ "repository": ctx.name, "digest": digest, "tags": tags }))
        }
        Reference::Tag(tag) => {
            let digest = manifests::delete_tag(&mut tx, &ctx.name, tag)
                .await?
                .ok_or_else(|| unknown(&ctx.name, &reference))?;
            NewEvent::audited(
                &org,
                "registry.tag.deleted",
                "registry",
                "delete",
                &ctx.access.actor(),
            )
            .resource("registry_tag", &format!("{}:{tag}", ctx.name))
            .data(json!({ "repository": ctx.name, "tag": tag, "digest": digest }))
        }
    };
    events::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    Ok(StatusCode::ACCEPTED.into_response())
}
