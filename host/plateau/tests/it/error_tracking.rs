//! The built-in error tracking plugin (`/errors`) with the official Sentry
//! SDKs, unchanged and pointed at a project's DSN: `sentry-sdk` (PyPI,
//! which gzips its envelopes) and `@sentry/node` (npm, under
//! `target/npm-clients`). Grouping (in-app frames, a custom fingerprint, a
//! message), counts and affected users, the latest event's stack trace and
//! breadcrumbs, resolve then a regression with its timeline event, the
//! envelope's other items acknowledged and dropped, the DSN key checked,
//! and another organisation seeing nothing. One server on SQLite.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client, ServerOptions};
use reqwest::Method;
use serde_json::{Value, json};

use crate::{create_org, eventually, mint, start_with};

/// Sends what the test asks with the Python SDK: `errors` (three
/// ZeroDivisionErrors of two users with breadcrumbs, a message, two
/// ValueErrors under one fingerprint) or `again` (one ZeroDivisionError).
const PYTHON: &str = r#"
import sys
import sentry_sdk

def checkout(cart):
    return cart["total"] / cart["items"]

sentry_sdk.init(dsn=sys.argv[1], release="shop@1.0", environment="test")
users = ["u1", "u2", "u1"] if sys.argv[2] == "errors" else ["u3"]
for i, user in enumerate(users):
    sentry_sdk.set_user({"id": user})
    sentry_sdk.add_breadcrumb(category="cart", message="opened cart %d" % i)
    try:
        checkout({"total": 10, "items": 0})
    except ZeroDivisionError as e:
        sentry_sdk.capture_exception(e)
if sys.argv[2] == "errors":
    sentry_sdk.set_user(None)
    sentry_sdk.capture_message("disk almost full")
    for card in ["4242", "5555"]:
        try:
            raise ValueError("card %s declined" % card)
        except ValueError as e:
            sentry_sdk.capture_exception(e, fingerprint=["payments"])
sentry_sdk.flush(timeout=20)
"#;

/// Two TypeErrors of two users with the Node.js SDK, one stack trace
/// (their messages differ: the SDK drops an event equal to the one before).
const NODE: &str = r#"
const Sentry = require("@sentry/node");
Sentry.init({ dsn: process.argv[2], release: "shop@2.0" });
function checkout(cart) {
  if (!cart.items) throw new TypeError("cart of " + cart.user + " is empty");
}
(async () => {
  for (const user of ["n1", "n2"]) {
    Sentry.setUser({ id: user });
    Sentry.addBreadcrumb({ category: "cart", message: "opened by " + user });
    try { checkout({ user }); } catch (e) { Sentry.captureException(e); }
  }
  if (!(await Sentry.flush(20000))) { console.error("flush timed out"); process.exit(1); }
})();
"#;

fn node_modules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/npm-clients/node_modules")
}

/// Runs `program` on `script` in `dir` (the SDKs mark frames under the
/// working directory as in-app).
fn run(program: &str, dir: &Path, script: &str, args: &[&str]) {
    let file = dir.join(if program == "node" {
        "app.js"
    } else {
        "app.py"
    });
    std::fs::write(&file, script).unwrap();
    let out = Command::new(program)
        .arg(&file)
        .args(args)
        .current_dir(dir)
        .env("NODE_PATH", node_modules())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named") && !stderr.contains("Cannot find module"),
        "sentry-sdk and @sentry/node are required: cargo xtask test installs them ({stderr})"
    );
    assert!(out.status.success(), "{program} failed: {stderr}");
}

async fn issues(c: &Client, project: &str) -> Vec<Value> {
    let r = c.get(&format!("/errors/projects/{project}/issues")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["items"].as_array().unwrap().clone()
}

/// Waits until the issue titled `title` has `count` events; answers it.
async fn issue_with(c: &Client, project: &str, title: &str, count: u64) -> Value {
    issue_where(c, project, title, |i| {
        i["title"] == title && i["count"] == count
    })
    .await
}

/// Waits until an issue `matches`; answers it.
async fn issue_where(
    c: &Client,
    project: &str,
    what: &str,
    matches: impl Fn(&Value) -> bool,
) -> Value {
    eventually(what, Duration::from_secs(30), || async {
        issues(c, project).await.into_iter().find(&matches)
    })
    .await
}

fn frames(event: &Value) -> Vec<Value> {
    event["exceptions"][0]["frames"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentry_sdks_report_into_grouped_issues() {
    let s = start_with(ServerOptions::new(Backend::Sqlite)).await;
    let c = s.client().with_token(&create_org(&s, "errs", "pro").await);
    let work = tempfile::tempdir().unwrap();

    let r = c
        .post(
            "/errors/projects",
            json!({ "name": "", "alertEmails": ["no"] }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let fields: Vec<String> = r.json()["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(fields, ["name", "alertEmails[0]"]);
    let r = c.post("/errors/projects", json!({ "name": "shop" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let project = r.json();
    let id = project["id"].as_str().unwrap().to_owned();
    let dsn = project["dsn"].as_str().unwrap().to_owned();
    assert!(id.bytes().all(|b| b.is_ascii_digit()), "{id}");
    assert!(
        dsn.ends_with(&format!("/api/v1/errors/ingest/{id}")),
        "{dsn}"
    );

    // Python: 3 + 1 + 2 events into three issues.
    let started = Instant::now();
    run("python3", work.path(), PYTHON, &[&dsn, "errors"]);
    let zero = issue_with(&c, &id, "ZeroDivisionError: division by zero", 3).await;
    eprintln!(
        "sentry-sdk: 6 events sent and grouped in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(zero["userCount"], 2);
    assert_eq!(zero["grouping"], "in-app frames");
    assert_eq!(zero["status"], "unresolved");
    assert_eq!(zero["culprit"], "__main__ in checkout");
    let payments = issue_with(&c, &id, "ValueError: card 5555 declined", 2).await;
    assert_eq!(payments["grouping"], "fingerprint");
    let message = issue_with(&c, &id, "disk almost full", 1).await;
    assert_eq!(message["grouping"], "message");
    assert_eq!(issues(&c, &id).await.len(), 3);

    let zero_id = zero["id"].as_str().unwrap().to_owned();
    let path = format!("/errors/projects/{id}/issues/{zero_id}");
    let issue = c.get(&path).await.json();
    let latest = &issue["latestEvent"];
    assert_eq!(latest["user"]["id"], "u1");
    assert_eq!(latest["release"], "shop@1.0");
    assert_eq!(latest["platform"], "python");
    let checkout = frames(latest)
        .into_iter()
        .find(|f| f["function"] == "checkout")
        .expect("the checkout frame");
    assert_eq!(checkout["inApp"], true);
    assert!(
        checkout["contextLine"]
            .as_str()
            .unwrap()
            .contains("cart[\"total\"] / cart[\"items\"]"),
        "{checkout}"
    );
    let crumbs: Vec<&str> = latest["breadcrumbs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["message"].as_str())
        .collect();
    assert!(crumbs.contains(&"opened cart 2"), "{crumbs:?}");
    let events = c.get(&format!("{path}/events")).await.json();
    assert_eq!(events["total"], 3);
    assert_eq!(events["items"][0]["eventId"], latest["eventId"]);
    let created = c.get("/events?type=errors.issue.created").await.json();
    assert_eq!(created["items"].as_array().unwrap().len(), 3, "{created}");

    // Resolve, then the error comes back: a regression.
    let r = c.patch(&path, json!({ "status": "resolved" })).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "resolved");
    let r = c.patch(&path, json!({ "status": "fixed" })).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["errors"][0]["field"], "status");
    run("python3", work.path(), PYTHON, &[&dsn, "again"]);
    let reopened = issue_with(&c, &id, "ZeroDivisionError: division by zero", 4).await;
    assert_eq!(reopened["status"], "unresolved");
    assert_eq!(reopened["timesRegressed"], 1);
    assert_eq!(reopened["userCount"], 3);
    let regressed = c.get("/events?type=errors.issue.regressed").await.json();
    assert_eq!(
        regressed["items"][0]["resourceId"],
        zero_id.as_str(),
        "{regressed}"
    );
    let r = c
        .patch(
            &format!(
                "/errors/projects/{id}/issues/{}",
                message["id"].as_str().unwrap()
            ),
            json!({ "status": "ignored" }),
        )
        .await;
    assert_eq!(r.json()["status"], "ignored");

    // Node.js: 2 events of two users.
    let started = Instant::now();
    run("node", work.path(), NODE, &[&dsn]);
    // The SDK sends the two at once: the issue's title is the last one's.
    let node = issue_where(&c, &id, "2 node events", |i| {
        i["platform"] == "node" && i["count"] == 2
    })
    .await;
    assert!(
        node["title"]
            .as_str()
            .unwrap()
            .starts_with("TypeError: cart of n"),
        "{node}"
    );
    eprintln!(
        "@sentry/node: 2 events sent and grouped in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(node["userCount"], 2);
    assert_eq!(node["platform"], "node");
    let node = c
        .get(&format!(
            "/errors/projects/{id}/issues/{}",
            node["id"].as_str().unwrap()
        ))
        .await
        .json();
    let checkout = frames(&node["latestEvent"])
        .into_iter()
        .find(|f| f["function"] == "checkout")
        .expect("the checkout frame");
    assert_eq!(checkout["inApp"], true);
    let user = &node["latestEvent"]["user"]["id"];
    assert!(*user == "n1" || *user == "n2", "{user}");

    raw_envelopes(&s, &c, &id, &project).await;

    // Another organisation sees nothing; a read token cannot resolve.
    let other = s
        .client()
        .with_token(&create_org(&s, "other", "free").await);
    assert_eq!(other.get("/errors/projects").await.json()["total"], 0);
    assert_eq!(
        other.get(&format!("/errors/projects/{id}")).await.status,
        404
    );
    assert_eq!(
        other
            .get(&format!("/errors/projects/{id}/issues"))
            .await
            .status,
        404
    );
    assert_eq!(other.get(&path).await.status, 404);
    let reader = s
        .client()
        .with_token(&mint(&s, json!({ "scopes": ["errors:read"] })).await);
    assert_eq!(
        reader
            .patch(&path, json!({ "status": "resolved" }))
            .await
            .status,
        403
    );
}

/// The ingest endpoint without an SDK: the key in the query, an envelope
/// with a transaction and an attachment, a wrong key, an unknown project,
/// an unsupported encoding, the store endpoint.
async fn raw_envelopes(s: &plateau_testkit::Server, c: &Client, id: &str, project: &Value) {
    let key = project["publicKey"].as_str().unwrap();
    let anonymous = s.anonymous();
    let ingest = format!("/errors/ingest/api/{id}");
    let envelope = concat!(
        "{\"event_id\":\"9ec79c33ec9942ab8353589fcb2e04dc\"}\n",
        "{\"type\":\"transaction\"}\n{\"spans\":[]}\n",
        "{\"type\":\"attachment\",\"length\":5}\nhello\n",
        "{\"type\":\"event\"}\n{\"message\":\"raw envelope\",\"level\":\"info\"}\n",
    );
    let send = |path: String, body: &'static str, encoding: Option<&'static str>| {
        let mut r = anonymous
            .request(Method::POST, &path)
            .body("application/x-sentry-envelope", body);
        if let Some(e) = encoding {
            r = r.header("content-encoding", e);
        }
        r.send()
    };
    let r = send(
        format!("{ingest}/envelope/?sentry_key={key}"),
        envelope,
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["id"], "9ec79c33ec9942ab8353589fcb2e04dc");
    assert_eq!(r.json()["ignored"], json!(["transaction", "attachment"]));
    issue_with(c, id, "raw envelope", 1).await;

    let r = send(
        format!("{ingest}/envelope/?sentry_key=nope"),
        envelope,
        None,
    )
    .await;
    assert_eq!(r.status, 401, "{}", r.text());
    let r = send(format!("{ingest}/envelope/"), envelope, None).await;
    assert_eq!(r.status, 401, "{}", r.text());
    let r = send(
        format!("/errors/ingest/api/1/envelope/?sentry_key={key}"),
        envelope,
        None,
    )
    .await;
    assert_eq!(r.status, 404, "{}", r.text());
    let r = send(
        format!("{ingest}/envelope/?sentry_key={key}"),
        envelope,
        Some("br"),
    )
    .await;
    assert_eq!(r.status, 415, "{}", r.text());
    let r = send(
        format!("{ingest}/envelope/?sentry_key={key}"),
        "{}\n[]\n",
        None,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["errors"][0]["field"], "items[0].header");
    let r = send(
        format!("{ingest}/store/?sentry_key={key}"),
        "{\"message\":\"stored\"}",
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    issue_with(c, id, "stored", 1).await;
}
