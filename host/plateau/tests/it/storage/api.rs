//! `/api/v1/storage`: buckets, keys, presigned URLs, usage and events.

use plateau_testkit::Backend;
use serde_json::json;

use super::{S3, create_key};

crate::on_both_backends!(buckets_keys_usage_and_events);

async fn buckets_keys_usage_and_events(backend: Backend) {
    let s3 = S3::start(backend).await;
    let c = s3.server.client();
    let bucket = &s3.bucket;
    let id = bucket["id"].as_str().unwrap();
    let name = s3.bucket_name();
    // <prefix>-<org>-<name>-<suffix>, a valid S3 name.
    assert!(
        name.starts_with("plt-") && name.contains("-data-"),
        "{name}"
    );
    assert!(name.len() <= 63);
    assert!(
        s3.endpoint.starts_with("http://s3.localhost:"),
        "{}",
        s3.endpoint
    );

    for bad in ["", "UPPER", "a_b", "-x", &"x".repeat(31)] {
        let r = c.post("/storage/buckets", json!({ "name": bad })).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
    }
    let r = c.post("/storage/buckets", json!({ "name": "data" })).await;
    assert_eq!(r.status, 409, "{}", r.text());

    let list = c.get("/storage/buckets").await.json();
    assert_eq!(list["total"], 1);
    assert_eq!(list["items"][0]["bucket"], name);

    // The secret is shown once: lists mask it.
    let keys = c.get("/storage/keys").await.json();
    assert_eq!(
        keys["items"][0]["accessKeyId"],
        s3.key.access_key_id.as_str()
    );
    assert!(!keys.to_string().contains(&s3.key.secret));
    assert_eq!(
        keys["items"][0]["maskedSecret"],
        format!("…{}", &s3.key.secret[36..])
    );

    // A presigned PUT, then GET, with curl; usage follows.
    let presign = |method: &str, key: &str| json!({ "key": key, "method": method, "expiresInSeconds": 300, "accessKeyId": s3.key.access_key_id });
    let r = c
        .post(
            &format!("/storage/buckets/{id}/presign"),
            presign("PUT", "dir/hello world.txt"),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let put_url = r.json()["url"].as_str().unwrap().to_owned();
    let body = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(body.path(), b"hello, storage").unwrap();
    let out = std::process::Command::new("curl")
        .args(["-sS", "-f", "-X", "PUT", "--upload-file"])
        .arg(body.path())
        .arg(&put_url)
        .output()
        .unwrap();
    super::ok(&out);
    let r = c
        .post(
            &format!("/storage/buckets/{id}/presign"),
            presign("GET", "dir/hello world.txt"),
        )
        .await;
    let get_url = r.json()["url"].as_str().unwrap().to_owned();
    let out = std::process::Command::new("curl")
        .args(["-sS", "-f", &get_url])
        .output()
        .unwrap();
    assert_eq!(super::ok(&out), "hello, storage");

    let detail = c.get(&format!("/storage/buckets/{id}")).await.json();
    assert_eq!(detail["usage"], json!({ "bytes": 14, "objects": 1 }));
    let usage = c.get("/usage").await.json();
    assert_eq!(usage["storage"]["bytes"], 14);
    assert_eq!(usage["storage"]["objects"], 1);
    assert_eq!(usage["storage"]["limitBytes"], 1_000_000_000i64);

    // Presigning: at most 7 days, with a key of this organisation.
    let mut long = presign("GET", "x");
    long["expiresInSeconds"] = json!(604_801);
    assert_eq!(
        c.post(&format!("/storage/buckets/{id}/presign"), long)
            .await
            .status,
        400
    );
    let mut foreign = presign("GET", "x");
    foreign["accessKeyId"] = json!("PLTKNOTAKEYOFOURS000");
    assert_eq!(
        c.post(&format!("/storage/buckets/{id}/presign"), foreign)
            .await
            .status,
        400
    );

    // A non-empty bucket is not deleted.
    let r = c.delete(&format!("/storage/buckets/{id}")).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.code(), "bucket_not_empty");

    // Scopes: storage:read lists, does not create.
    let reader = crate::mint(&s3.server, json!({ "scopes": ["storage:read"] })).await;
    let rc = s3.server.anonymous().with_token(&reader);
    assert_eq!(rc.get("/storage/buckets").await.status, 200);
    assert_eq!(
        rc.post("/storage/buckets", json!({ "name": "nope" }))
            .await
            .status,
        403
    );
    assert_eq!(
        rc.post("/storage/keys", json!({ "name": "nope" }))
            .await
            .status,
        403
    );

    // Deleting a key; an empty bucket goes.
    let spare = create_key(
        &s3.server,
        &s3.server.token,
        json!({ "name": "spare", "readOnly": true }),
    )
    .await;
    assert_eq!(
        c.delete(&format!("/storage/keys/{}", spare.id))
            .await
            .status,
        200
    );
    assert_eq!(
        c.delete(&format!("/storage/keys/{}", spare.id))
            .await
            .status,
        404
    );
    let empty = super::create_bucket(&s3.server, &s3.server.token, "empty").await;
    let r = c
        .delete(&format!(
            "/storage/buckets/{}",
            empty["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());

    // The audit log has the buckets and keys; the timeline the objects.
    let audit = c.get("/audit").await.json();
    let kinds = crate::event_types(&audit);
    for kind in [
        "storage.bucket.created",
        "storage.bucket.deleted",
        "storage.key.created",
        "storage.key.deleted",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    assert!(!audit.to_string().contains(&s3.key.secret));
    let events = c.get("/events").await.json();
    assert!(crate::event_types(&events).contains(&"storage.object.written"));
}
