//! `GET` and `DELETE /storage/buckets/{id}/objects`: objects and folders
//! in key order under a prefix, rolled up at a delimiter, paginated with
//! the API's cursors (bound to the listing), one object deleted; scopes,
//! tenants and bad input. Objects go in through presigned PUTs (curl).
//! One server, on SQLite.

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};

use crate::storage::{create_bucket, create_key, ok};
use crate::{create_org, mint, start};

fn keys_of(page: &Value) -> Vec<(String, String)> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap().to_owned(),
                i["key"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

async fn list(c: &Client, id: &str, query: &str) -> Value {
    let r = c
        .get(&format!("/storage/buckets/{id}/objects{query}"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_list_with_folders_pages_and_deletes() {
    let s = start(Backend::Sqlite).await;
    let c = s.client();
    let bucket = create_bucket(&s, &s.token, "files").await;
    let id = bucket["id"].as_str().unwrap().to_owned();
    let key = create_key(&s, &s.token, json!({ "name": "browser" })).await;
    let names = [
        "a.txt",
        "docs/1.txt",
        "docs/2.txt",
        "docs/sub/3.txt",
        "z.txt",
    ];
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), b"twelve bytes").unwrap();
    for name in names {
        let r = c
            .post(
                &format!("/storage/buckets/{id}/presign"),
                json!({ "key": name, "method": "PUT", "accessKeyId": key.access_key_id }),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        let url = r.json()["url"].as_str().unwrap().to_owned();
        ok(&std::process::Command::new("curl")
            .args(["-sS", "-f", "-X", "PUT", "--upload-file"])
            .arg(file.path())
            .arg(&url)
            .output()
            .unwrap());
    }

    // The top level: objects and folders in key order.
    let top = list(&c, &id, "?delimiter=/").await;
    assert_eq!(
        keys_of(&top),
        pairs(&[
            ("object", "a.txt"),
            ("folder", "docs/"),
            ("object", "z.txt")
        ])
    );
    assert_eq!(top["total"], 3);
    assert_eq!(top["items"][0]["size"], 12);
    assert!(top["items"][0]["lastModified"].is_string());
    let docs = list(&c, &id, "?delimiter=/&prefix=docs/").await;
    assert_eq!(
        keys_of(&docs),
        pairs(&[
            ("object", "docs/1.txt"),
            ("object", "docs/2.txt"),
            ("folder", "docs/sub/")
        ])
    );

    // Pages of two over every key, then over the folders' level.
    let mut seen = Vec::new();
    let mut query = "?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let page = list(&c, &id, &query).await;
        assert_eq!(page["total"], 5, "{page}");
        seen.extend(keys_of(&page).into_iter().map(|(_, k)| k));
        pages += 1;
        match page["nextCursor"].as_str() {
            Some(next) => query = format!("?limit=2&cursor={next}"),
            None => break,
        }
    }
    assert_eq!(seen, names);
    assert_eq!(pages, 3);
    let first = list(&c, &id, "?delimiter=/&limit=2").await;
    let next = first["nextCursor"].as_str().unwrap();
    let second = list(&c, &id, &format!("?delimiter=/&limit=2&cursor={next}")).await;
    assert_eq!(keys_of(&second), pairs(&[("object", "z.txt")]));
    // A cursor continues only its own listing.
    let r = c
        .get(&format!(
            "/storage/buckets/{id}/objects?prefix=docs/&limit=2&cursor={next}"
        ))
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_cursor"));

    // Delete one object.
    let r = c
        .delete(&format!("/storage/buckets/{id}/objects?key=docs/1.txt"))
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let docs = list(&c, &id, "?delimiter=/&prefix=docs/").await;
    assert_eq!(docs["total"], 2);
    assert_eq!(
        c.get(&format!("/storage/buckets/{id}")).await.json()["usage"]["objects"],
        4
    );

    // Bad input names its field.
    let long = "p".repeat(1025);
    let r = c
        .get(&format!("/storage/buckets/{id}/objects?prefix={long}"))
        .await;
    assert_eq!(
        (r.status, r.json()["errors"][0]["field"].as_str()),
        (400, Some("prefix"))
    );
    let r = c.delete(&format!("/storage/buckets/{id}/objects")).await;
    assert_eq!(
        (r.status, r.json()["errors"][0]["field"].as_str()),
        (400, Some("key"))
    );

    // Scopes, and another organisation's bucket is not found.
    let reader = c.with_token(&mint(&s, json!({ "scopes": ["storage:read"] })).await);
    assert_eq!(list(&reader, &id, "").await["total"], 4);
    let r = reader
        .delete(&format!("/storage/buckets/{id}/objects?key=a.txt"))
        .await;
    assert_eq!(r.status, 403, "{}", r.text());
    let other = s
        .anonymous()
        .with_token(&create_org(&s, "Other", "free").await);
    let r = other.get(&format!("/storage/buckets/{id}/objects")).await;
    assert_eq!(r.status, 404, "{}", r.text());
    let r = other
        .delete(&format!("/storage/buckets/{id}/objects?key=a.txt"))
        .await;
    assert_eq!(r.status, 404, "{}", r.text());
}
