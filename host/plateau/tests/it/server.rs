//! The server itself: request ids, restarts, graceful shutdown, OpenAPI.

use std::time::Duration;

use plateau_testkit::Backend;
use serde_json::json;

use crate::start;

crate::on_both_backends!(
    request_ids_everywhere,
    restart_keeps_everything,
    graceful_shutdown_finishes_requests,
    openapi_documents_every_operation
);

async fn request_ids_everywhere(backend: Backend) {
    let s = start(backend).await;
    for r in [
        s.anonymous().get("/health").await,
        s.anonymous().get("/me").await,
        s.client().get("/nope").await,
    ] {
        let id = r
            .header("x-request-id")
            .expect("every response has a request id");
        assert_eq!(id.len(), 36);
    }
    let r = s
        .anonymous()
        .request(reqwest::Method::GET, "/health")
        .header("x-request-id", "trace-me-42")
        .send()
        .await;
    assert_eq!(r.header("x-request-id"), Some("trace-me-42"));
}

async fn restart_keeps_everything(backend: Backend) {
    let mut s = start(backend).await;
    let p = s
        .client()
        .post("/projects", json!({ "name": "persisted" }))
        .await
        .json();
    let page = s.client().get("/projects?limit=1").await.json();
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    let minted = crate::mint(&s, json!({ "scopes": ["projects:read"] })).await;
    s.restart().await;
    let list = s.client().get("/projects").await.json();
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["id"] == p["id"])
    );
    assert_eq!(
        s.anonymous()
            .with_token(&minted)
            .get("/projects")
            .await
            .status,
        200
    );
    let next = s
        .client()
        .get(&format!("/projects?limit=1&cursor={cursor}"))
        .await;
    assert_eq!(next.status, 200, "cursors outlive the process");
    assert_eq!(next.json()["items"][0]["id"], p["id"]);
    assert_eq!(
        s.client().get("/events?type=project.created").await.json()["total"],
        1
    );
}

async fn graceful_shutdown_finishes_requests(backend: Backend) {
    let mut s = start(backend).await;
    let url = format!("{}/api/v1/projects", s.url);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(2);
    let body = reqwest::Body::wrap_stream(tokio_stream(rx));
    let token = s.token.clone();
    let request = tokio::spawn(async move {
        reqwest::Client::new()
            .post(url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    tx.send(Ok(br#"{"name": "#.to_vec())).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = s.pid().unwrap();
    let _ = tokio::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    tx.send(Ok(br#""in-flight"}"#.to_vec())).await.unwrap();
    drop(tx);
    let status = request
        .await
        .unwrap()
        .expect("the request in flight completes");
    assert_eq!(status, 201);
    assert_eq!(s.stop().await, Some(0), "a clean exit after SIGTERM");
}

fn tokio_stream(
    mut rx: tokio::sync::mpsc::Receiver<Result<Vec<u8>, std::io::Error>>,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

async fn openapi_documents_every_operation(backend: Backend) {
    let s = start(backend).await;
    let doc = s.anonymous().get("/openapi.json").await.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths = doc["paths"].as_object().unwrap();
    let mut operations = 0;
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            operations += 1;
            assert!(
                op["security"].is_array(),
                "{method} {path} declares who may call it"
            );
            assert!(
                op["responses"]["400"].is_object(),
                "{method} {path} documents its errors"
            );
        }
    }
    assert!(operations >= 24, "{operations}");
    assert_eq!(
        paths["/projects"]["post"]["security"][0]["bearer"],
        json!(["projects:write"])
    );
    assert_eq!(
        paths["/audit"]["get"]["security"][0]["bearer"],
        json!(["audit:read"])
    );
    assert_eq!(paths["/changelog"]["get"]["security"][0], json!({}));
    assert_eq!(
        paths["/connect/token"]["post"]["security"][0]["connectGrant"],
        json!([])
    );
    assert!(paths["/projects"]["post"]["responses"]["403"].is_object());
    assert!(doc["components"]["schemas"]["Problem"].is_object());
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
}
