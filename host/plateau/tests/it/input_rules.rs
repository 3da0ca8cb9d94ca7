//! Values that used to be taken and fixed up silently, or accepted and
//! failed later: an app's memory or CPU below the least it runs with, and
//! control characters (NUL) in an image reference or a cron job's name,
//! are refused at once with a 400 naming the field.

use plateau_testkit::Backend;
use serde_json::{Value, json};

use crate::start;

crate::on_both_backends!(out_of_range_and_control_characters_are_refused);

/// The fields a 400 `validation_failed` names.
fn fields(r: &plateau_testkit::Response) -> Vec<String> {
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "validation_failed"),
        "{}",
        r.text()
    );
    r.json()["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap().to_owned())
        .collect()
}

async fn out_of_range_and_control_characters_are_refused(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let registry = s.url.trim_start_matches("http://").to_owned();

    // An image reference with a NUL, on create and on deploy.
    let r = c
        .post(
            "/apps",
            json!({ "name": "nul", "image": format!("{registry}/org/app:v1\u{0}x") }),
        )
        .await;
    assert_eq!(fields(&r), ["image"]);
    let r = c.post("/apps", json!({ "name": "web" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let r = c
        .post(
            &format!("/apps/{id}/deployments"),
            json!({ "image": format!("{registry}/org/app\u{0}:v1") }),
        )
        .await;
    assert_eq!(fields(&r), ["image"]);
    assert_eq!(
        c.get(&format!("/apps/{id}")).await.json()["image"],
        Value::Null
    );

    // Memory and CPU below the least an app runs with are refused, not
    // raised; above the plan's maxima (free: 256 MB, 250) they are lowered.
    let resources = format!("/apps/{id}/resources");
    for (body, field) in [
        (json!({ "memoryMb": 0 }), "memoryMb"),
        (json!({ "memoryMb": -1 }), "memoryMb"),
        (json!({ "milliCpu": 0 }), "milliCpu"),
    ] {
        let r = c.put(&resources, body.clone()).await;
        assert_eq!(fields(&r), [field], "{body}");
    }
    let before = c.get(&resources).await.json();
    assert_eq!(
        (&before["memoryMb"], &before["milliCpu"]),
        (&json!(128), &json!(250))
    );
    let r = c
        .put(&resources, json!({ "memoryMb": 100000, "milliCpu": 16 }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        (&r.json()["memoryMb"], &r.json()["milliCpu"]),
        (&json!(256), &json!(16))
    );

    // A cron job's name or image with a NUL.
    let r = c
        .post(
            "/cron-jobs",
            json!({ "name": "nightly\u{0}", "schedule": "0 3 * * *", "type": "http",
                    "url": "https://example.com/hook" }),
        )
        .await;
    assert_eq!(fields(&r), ["name"]);
    let org = c.get("/me").await.json()["organization"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = c
        .post(
            "/cron-jobs",
            json!({ "name": "task", "schedule": "0 3 * * *", "type": "container",
                    "image": format!("{registry}/{org}/task:v1\u{0}") }),
        )
        .await;
    assert_eq!(fields(&r), ["image"]);
}
