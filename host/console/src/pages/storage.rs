//! Object storage: buckets, access keys (the secret shown once), and a
//! bucket's page, where a file is uploaded and an object downloaded
//! through presigned URLs signed with one of the organisation's keys.
//! An upload goes browser → console → presigned PUT (the S3 endpoint is
//! another origin, and speaks no CORS); a download is a link to the
//! presigned GET, which the browser follows itself.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use maud::{Markup, html};
use serde_json::{Value, json};
use std::collections::HashMap;

use super::{Fields, after, field, refused, section, seg};
use crate::html::{self, col};
use crate::{Console, Ctx};

pub fn routes() -> Router<Console> {
    Router::new()
        .route("/console/storage", get(overview))
        .route("/console/storage/buckets", post(create_bucket))
        .route("/console/storage/buckets/{id}", get(bucket))
        .route("/console/storage/buckets/{id}/delete", post(delete_bucket))
        .route("/console/storage/buckets/{id}/objects", put(upload))
        .route("/console/storage/buckets/{id}/download", post(download))
        .route("/console/storage/keys", post(create_key))
        .route("/console/storage/keys/{id}/delete", post(delete_key))
}

async fn overview(ctx: Ctx) -> Response {
    let buckets = ctx.get("/storage/buckets").await;
    let keys = ctx.get("/storage/keys").await;
    let s = &ctx.session;
    let content = html! {
        h2 { "Buckets" }
        (section(&buckets, |b| html::table("Buckets", &html::items(b),
            &[col("Name", "name"), col("S3 bucket", "bucket"), col("Objects", "usage.objects"), col("Bytes", "usage.bytes"), col("Endpoint", "endpoint")],
            Some(&|b: &Value| format!("/console/storage/buckets/{}", html::text(&b["id"]))))))
        (html::form(s, "/console/storage/buckets", html::input("Bucket name", "name", "text", true, Some("1 to 30 lowercase letters, digits and single hyphens")), "Create bucket"))
        h2 { "Access keys" }
        (section(&keys, |k| {
            let items = html::items(k);
            html! {
                (html::table("Access keys", &items, &[col("Name", "name"), col("Access key id", "accessKeyId"), col("Read only", "readOnly"), col("Created", "createdAt")], None))
                @for key in &items {
                    @let name = html::text(&key["name"]);
                    (html::button(s, &format!("/console/storage/keys/{}/delete", html::text(&key["id"])), &format!("Delete {name}"), "(access key)"))
                }
            }
        }))
        (html::form(s, "/console/storage/keys", html::input("Key name", "keyName", "text", true, None), "Create access key"))
    };
    html::page(s, "/console/storage", "Storage", content).into_response()
}

async fn create_bucket(ctx: Ctx, fields: Fields) -> Response {
    let result = ctx
        .post(
            "/storage/buckets",
            json!({ "name": field(&fields, "name") }),
        )
        .await;
    after(&ctx, result, "/console/storage")
}

async fn delete_bucket(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = ctx
        .call(
            Method::DELETE,
            &format!("/storage/buckets/{}", seg(&id)),
            None,
        )
        .await;
    after(&ctx, result, "/console/storage")
}

async fn create_key(ctx: Ctx, fields: Fields) -> Response {
    match ctx
        .post(
            "/storage/keys",
            json!({ "name": field(&fields, "keyName") }),
        )
        .await
    {
        Ok(created) => {
            let content = html! {
                p class="notice" role="status" { "Copy the secret now: it is never shown again." }
                (html::copyable("Access key id", "key-id", &html::text(&created["accessKeyId"])))
                (html::copyable("Secret access key", "secret", &html::text(&created["secretAccessKey"])))
                p { a href="/console/storage" { "Back to storage" } }
            };
            html::page(
                &ctx.session,
                "/console/storage",
                "Access key created",
                content,
            )
            .into_response()
        }
        Err(p) => refused(&ctx, &p, "/console/storage"),
    }
}

async fn delete_key(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = ctx
        .call(Method::DELETE, &format!("/storage/keys/{}", seg(&id)), None)
        .await;
    after(&ctx, result, "/console/storage")
}

/// The access-key picker presigned URLs are signed with.
fn key_select(keys: &[Value], id: &str) -> Markup {
    html! {
        div class="field" {
            label for=(id) { "Sign with access key" }
            select id=(id) name="accessKeyId" required {
                @for k in keys {
                    option value=(html::text(&k["accessKeyId"])) { (html::text(&k["name"])) " (" (html::text(&k["accessKeyId"])) ")" }
                }
            }
        }
    }
}

async fn bucket(
    ctx: Ctx,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let prefix = query.get("prefix").map(String::as_str).unwrap_or("");
    let cursor = field(&query, "cursor");
    bucket_page(&ctx, &id, html! {}, prefix, cursor).await
}

async fn bucket_page(ctx: &Ctx, id: &str, extra: Markup, prefix: &str, cursor: &str) -> Response {
    let b = ctx.get(&format!("/storage/buckets/{}", seg(id))).await;
    let keys = ctx
        .get("/storage/keys")
        .await
        .map(|k| html::items(&k))
        .unwrap_or_default();
    let objects = match &b {
        Ok(_) => super::objects::listing(ctx, id, &keys, prefix, cursor).await,
        Err(_) => html! {},
    };
    let s = &ctx.session;
    let here = format!("/console/storage/buckets/{}", seg(id));
    let title = b
        .as_ref()
        .map(|b| html::text(&b["name"]))
        .unwrap_or_else(|_| "Bucket".to_owned());
    let content = html! {
        (section(&b, |b| html! {
            dl {
                dt { "S3 bucket" } dd { (html::text(&b["bucket"])) }
                dt { "Endpoint" } dd { (html::text(&b["endpoint"])) }
                dt { "Objects" } dd { (html::text(&b["usage"]["objects"])) }
                dt { "Bytes" } dd { (html::text(&b["usage"]["bytes"])) }
            }
        }))
        (extra)
        (objects)
        @if keys.is_empty() {
            p { "Uploads and downloads are signed with an access key: " a href="/console/storage" { "create one" } " first." }
        } @else {
            h2 { "Upload a file" }
            form method="post" action=(format!("{here}/objects")) data-upload class="stack" {
                (html::csrf(s))
                div class="field" {
                    label for="f-file" { "File" }
                    input id="f-file" type="file" name="file" required;
                }
                (html::input("Object key", "key", "text", false, Some("the file's name when empty; a/b.txt puts it in folder a")))
                (key_select(&keys, "f-upload-key"))
                button type="submit" { "Upload" }
                p role="status" aria-live="polite" {}
            }
            h2 { "Download an object" }
            form method="post" action=(format!("{here}/download")) class="stack" {
                (html::csrf(s))
                (html::input("Object key", "downloadKey", "text", true, None))
                (key_select(&keys, "f-download-key"))
                button type="submit" { "Get a download link" }
            }
        }
        h2 { "Delete the bucket" }
        (html::button(s, &format!("{here}/delete"), "Delete bucket", "(it must be empty)"))
    };
    html::page(s, "/console/storage", &title, content).into_response()
}

/// A presigned URL for `key` of bucket `id`.
async fn presign(
    ctx: &Ctx,
    id: &str,
    key: &str,
    access_key: &str,
    method: &str,
) -> Result<String, crate::api::Problem> {
    let body =
        json!({ "key": key, "method": method, "accessKeyId": access_key, "expiresInSeconds": 900 });
    let presigned = ctx
        .post(&format!("/storage/buckets/{}/presign", seg(id)), body)
        .await?;
    Ok(html::text(&presigned["url"]))
}

async fn download(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let key = field(&fields, "downloadKey").to_owned();
    match presign(&ctx, &id, &key, field(&fields, "accessKeyId"), "GET").await {
        Ok(url) => {
            let extra = html! {
                p class="notice" role="status" { "Download link for " (key) ", valid 15 minutes: " a href=(url) download { "download " (key) } }
            };
            bucket_page(&ctx, &id, extra, "", "").await
        }
        Err(p) => refused(&ctx, &p, &format!("/console/storage/buckets/{}", seg(&id))),
    }
}

/// A client for `url` that resolves `localhost` names to loopback, as RFC
/// 6761 has every resolver do (the S3 endpoint's default is
/// `s3.localhost`, which the system resolver may not know).
fn client_for(url: &str) -> reqwest::Client {
    let mut builder = reqwest::Client::builder();
    if let Ok(parsed) = reqwest::Url::parse(url)
        && let Some(host) = parsed.host_str()
        && (host == "localhost" || host.ends_with(".localhost"))
    {
        let port = parsed.port_or_known_default().unwrap_or(80);
        builder = builder.resolve(host, std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    builder.build().unwrap_or_default()
}

/// The script's upload: the request body goes, streamed, to a presigned PUT.
async fn upload(
    ctx: Ctx,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let key = field(&query, "key");
    let url = match presign(&ctx, &id, key, field(&query, "accessKeyId"), "PUT").await {
        Ok(url) => url,
        Err(p) => return (p.status, p.message()).into_response(),
    };
    let mut request = client_for(&url)
        .put(&url)
        .body(reqwest::Body::wrap_stream(body.into_data_stream()));
    if let Some(length) = headers.get(header::CONTENT_LENGTH) {
        request = request.header(header::CONTENT_LENGTH, length);
    }
    if let Some(kind) = headers.get(header::CONTENT_TYPE) {
        request = request.header(header::CONTENT_TYPE, kind);
    }
    match request.send().await {
        Ok(r) if r.status().is_success() => {
            (StatusCode::OK, format!("uploaded {key}")).into_response()
        }
        Ok(r) => {
            let status = r.status().as_u16();
            let text = r.text().await.unwrap_or_default();
            (
                StatusCode::BAD_GATEWAY,
                format!("the object store answered {status}: {text}"),
            )
                .into_response()
        }
        Err(e) => (
            StatusCode::BAD_GATEWAY,
            format!("the object store could not be reached: {e}"),
        )
            .into_response(),
    }
}
