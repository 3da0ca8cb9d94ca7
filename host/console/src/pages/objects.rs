//! A bucket's object browser, on the bucket's page: the objects and
//! folders under a prefix (`GET /storage/buckets/{id}/objects` with
//! delimiter `/`, 50 a page), a breadcrumb of the folders above, a
//! download link per object (a presigned GET, signed with the first
//! access key that may read the bucket) and a delete button per object.

use axum::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::response::Response;
use axum::routing::post;
use maud::{Markup, html};
use serde_json::{Value, json};

use super::{Fields, after, section, seg};
use crate::html;
use crate::{Console, Ctx};

/// Items a page of the browser shows.
const PAGE: u32 = 50;

pub fn routes() -> Router<Console> {
    Router::new().route(
        "/console/storage/buckets/{id}/objects/delete",
        post(delete_object),
    )
}

/// One query-string value, percent-encoded.
pub fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The first access key that may read bucket `id`.
pub fn reader<'a>(keys: &'a [Value], id: &str) -> Option<&'a Value> {
    keys.iter().find(|k| match k["buckets"].as_array() {
        None => true,
        Some(ids) => ids.iter().any(|b| b == id),
    })
}

/// The folders above `prefix`, each linking to its listing.
fn breadcrumb(here: &str, prefix: &str) -> Markup {
    let mut at = 0;
    let parts: Vec<(String, &str)> = prefix
        .split_inclusive('/')
        .map(|part| {
            at += part.len();
            (prefix[..at].to_owned(), part)
        })
        .collect();
    html! {
        nav aria-label="Folders" class="breadcrumb" {
            ol {
                li { a href=(here) { "All objects" } }
                @for (path, part) in &parts {
                    li { a href=(format!("{here}?prefix={}", enc(path))) { (part) } }
                }
            }
        }
    }
}

/// The listing under `prefix` (after `cursor`), with its links and buttons.
pub async fn listing(ctx: &Ctx, id: &str, keys: &[Value], prefix: &str, cursor: &str) -> Markup {
    let here = format!("/console/storage/buckets/{}", seg(id));
    let mut path = format!(
        "/storage/buckets/{}/objects?delimiter=%2F&limit={PAGE}&prefix={}",
        seg(id),
        enc(prefix)
    );
    if !cursor.is_empty() {
        path.push_str(&format!("&cursor={}", enc(cursor)));
    }
    let list = ctx.get(&path).await;
    let signer = reader(keys, id).map(|k| html::text(&k["accessKeyId"]));
    let mut links = Vec::new();
    if let (Ok(l), Some(signer)) = (&list, &signer) {
        for item in html::items(l).iter().filter(|i| i["kind"] == "object") {
            let key = html::text(&item["key"]);
            let body = json!({ "key": key, "method": "GET", "accessKeyId": signer, "expiresInSeconds": 900 });
            let url = ctx
                .post(&format!("/storage/buckets/{}/presign", seg(id)), body)
                .await
                .map(|p| html::text(&p["url"]))
                .unwrap_or_default();
            links.push((key, url));
        }
    }
    let s = &ctx.session;
    html! {
        h2 { "Objects" }
        (breadcrumb(&here, prefix))
        (section(&list, |l| {
            let items = html::items(l);
            html! {
                p { (html::text(&l["total"])) " objects and folders here." }
                @if items.is_empty() {
                    p { "No objects here yet." }
                } @else {
                    div class="table-wrap" tabindex="0" role="region" aria-label="Objects" {
                        table {
                            caption { "Objects" @if !prefix.is_empty() { " in " (prefix) } }
                            thead { tr { th scope="col" { "Name" } th scope="col" { "Size (bytes)" } th scope="col" { "Modified" } th scope="col" { "Actions" } } }
                            tbody {
                                @for item in &items {
                                    @let key = html::text(&item["key"]);
                                    @let name = key.strip_prefix(prefix).unwrap_or(&key).to_owned();
                                    tr {
                                        @if item["kind"] == "folder" {
                                            th scope="row" { a href=(format!("{here}?prefix={}", enc(&key))) { (name) } }
                                            td { "folder" } td {} td {}
                                        } @else {
                                            th scope="row" { (name) }
                                            td { (html::text(&item["size"])) }
                                            td { (html::text(&item["lastModified"])) }
                                            td {
                                                @if let Some((_, url)) = links.iter().find(|(k, u)| *k == key && !u.is_empty()) {
                                                    a href=(url) download { "Download" span class="visually-hidden" { " " (name) } }
                                                    " "
                                                }
                                                form method="post" action=(format!("{here}/objects/delete")) class="inline" {
                                                    (html::csrf(s))
                                                    input type="hidden" name="objectKey" value=(key);
                                                    input type="hidden" name="prefix" value=(prefix);
                                                    button type="submit" { "Delete" span class="visually-hidden" { " " (name) } }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                @if let Some(next) = l["nextCursor"].as_str() {
                    p { a href=(format!("{here}?prefix={}&cursor={}", enc(prefix), enc(next))) { "Next page of objects" } }
                }
            }
        }))
        @if signer.is_none() {
            p { "Download links are signed with an access key that may read this bucket: " a href="/console/storage" { "create one" } "." }
        }
    }
}

async fn delete_object(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    // Not trimmed: a key may begin or end with spaces.
    let raw = |name: &str| fields.get(name).map(String::as_str).unwrap_or("");
    let (key, prefix) = (raw("objectKey"), raw("prefix"));
    let result = ctx
        .call(
            Method::DELETE,
            &format!("/storage/buckets/{}/objects?key={}", seg(&id), enc(key)),
            None,
        )
        .await;
    let back = format!(
        "/console/storage/buckets/{}?prefix={}",
        seg(&id),
        enc(prefix)
    );
    after(&ctx, result, &back)
}
