//! HTTP details that users' libraries rely on: a 401 names its scheme
//! (RFC 6750), a plugin's `Location` works when followed, and the log a
//! process writes to a file holds no terminal colour codes. One server,
//! on SQLite: none of it depends on the platform database.

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::json;

use super::start_with;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_clients_read_from_the_answers() {
    // At `info`, the agent has something to say (at the suite's `warn`,
    // its log stays empty).
    let server = start_with(ServerOptions::new(Backend::Sqlite).env("PLATEAU_LOG", "info")).await;

    // RFC 6750 section 3: a 401 carries `WWW-Authenticate: Bearer`, and
    // says `invalid_token` when a token was sent and refused.
    let r = server.anonymous().get("/projects").await;
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(
        r.header("www-authenticate"),
        Some(r#"Bearer realm="plateau""#)
    );
    let wrong = Client::new(&server.url).with_token("plt_0000000000000000000000000000000000000000");
    let r = wrong.get("/me").await;
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(
        r.header("www-authenticate"),
        Some(r#"Bearer realm="plateau", error="invalid_token""#)
    );
    // A plugin's route answers the same way: the host checks the token.
    let r = server.anonymous().get("/queues").await;
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(
        r.header("www-authenticate")
            .is_some_and(|v| v.starts_with("Bearer")),
        "{:?}",
        r.header("www-authenticate")
    );

    // A plugin's `Location` is a path under the API base: following it
    // reaches what was created.
    let c = server.client();
    let r = c.post("/queues", json!({ "name": "locq" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let location = r.header("location").expect("a Location").to_owned();
    assert_eq!(location, "/api/v1/queues/locq");
    let followed = reqwest::Client::new()
        .get(format!("{}{location}", server.url))
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(followed.status(), 200);
    let body: serde_json::Value = followed.json().await.unwrap();
    assert_eq!(body["name"], "locq");

    // The guides are served, as Markdown.
    let r = reqwest::get(format!("{}/docs/caches", server.url))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("caCertificate"));

    // The agent logs to a file: plain text, no escape sequences.
    let log = std::fs::read_to_string(server.data_dir.path().join("agent/agent.log"))
        .expect("the agent's log");
    assert!(!log.trim().is_empty(), "the agent logged nothing");
    assert!(
        !log.contains('\u{1b}'),
        "the agent's log has terminal escape codes: {}",
        log.lines().next().unwrap_or_default()
    );
}
