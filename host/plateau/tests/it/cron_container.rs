//! Cron jobs of type `container`: a `wasi:cli` command pushed to the
//! organisation's registry runs to completion, on a trigger and on its
//! schedule (manual clock), and each run records its exit code and its
//! captured stdout and stderr. Another organisation's image is refused at
//! create (400 on `image`); an image that is not a command, or that is
//! missing, makes a failed run saying why.

use plateau_plugin_artifacts::apps::{ECHO_COMMAND, HELLO_APP};
use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};

use crate::apps::push;
use crate::cron::move_to;
use crate::plugins::admin;
use crate::{create_org, start_with, until};

crate::on_both_backends!(container_jobs_run_commands_and_record_their_exit);

/// A container job running `image` with `command` every minute; its id.
async fn create(c: &Client, name: &str, image: &str, command: &[&str]) -> String {
    let r = c
        .post(
            "/cron-jobs",
            json!({ "name": name, "schedule": "* * * * *", "type": "container",
                    "image": image, "command": command }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        (r.json()["image"].as_str(), r.json()["url"].clone()),
        (Some(image), Value::Null)
    );
    r.json()["id"].as_str().unwrap().to_owned()
}

/// Triggers job `id`; the run.
async fn trigger(c: &Client, id: &str) -> Value {
    let r = c.post(&format!("/cron-jobs/{id}/trigger"), json!({})).await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

async fn container_jobs_run_commands_and_record_their_exit(backend: Backend) {
    let s = start_with(ServerOptions::new(backend).env("PLATEAU_CLOCK", "manual")).await;
    let admin = admin(&s).await;
    let token = create_org(&s, "cron-pro", "pro").await;
    let c = s.anonymous().with_token(&token);
    let org = c.get("/me").await.json()["organization"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let host = s.url.trim_start_matches("http://").to_owned();
    let echo = format!("{host}/{org}/echo:v1");
    let app = format!("{host}/{org}/hello:v1");
    push(&token, ECHO_COMMAND, &echo).await;
    push(&token, HELLO_APP, &app).await;

    // A manual run: exit code 0, the arguments and environment on stdout.
    let id = create(&c, "echo", &echo, &["hello", "world"]).await;
    let run = trigger(&c, &id).await;
    let stdout = run["stdout"].as_str().unwrap_or_default();
    assert_eq!(
        (
            run["status"].as_str(),
            run["exitCode"].as_u64(),
            run["stderr"].as_str()
        ),
        (Some("succeeded"), Some(0), Some("to stderr\n")),
        "{run}"
    );
    assert!(stdout.starts_with("args: hello world\n"), "{run}");
    assert!(
        stdout.contains(&format!("env: PLATEAU_CRON_JOB_ID={id}\n")),
        "{run}"
    );

    // On its schedule: the clock reaches nextRunAt and the run is recorded.
    let job = c.get(&format!("/cron-jobs/{id}")).await.json();
    let due = job["nextRunAt"].as_str().unwrap().to_owned();
    move_to(&admin, &due).await;
    let runs = until(
        &c,
        &format!("/cron-jobs/{id}/runs"),
        "the scheduled run",
        |p| p["total"] == 2,
    )
    .await;
    let run = &runs["items"][0];
    assert_eq!(
        (
            run["trigger"].as_str(),
            run["scheduledAt"].as_str(),
            run["exitCode"].as_u64()
        ),
        (Some("schedule"), Some(due.as_str()), Some(0)),
        "{run}"
    );
    assert!(
        run["stdout"]
            .as_str()
            .unwrap()
            .contains(&format!("env: PLATEAU_CRON_SCHEDULED_AT={due}\n")),
        "{run}"
    );
    // Pause it, so the clock moves on without it.
    let r = c
        .patch(&format!("/cron-jobs/{id}"), json!({ "paused": true }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());

    // A non-zero exit: a failed run with its code.
    let failing = create(&c, "fails", &echo, &["--exit", "3"]).await;
    let run = trigger(&c, &failing).await;
    assert_eq!(
        (
            run["status"].as_str(),
            run["exitCode"].as_u64(),
            run["error"].as_str()
        ),
        (
            Some("failed"),
            Some(3),
            Some("the command exited with code 3")
        ),
        "{run}"
    );

    // A wasi:http component is not a command; a missing image is missing.
    let not_command = create(&c, "not-a-command", &app, &[]).await;
    let run = trigger(&c, &not_command).await;
    assert_eq!(
        (run["status"].as_str(), run["exitCode"].clone()),
        (Some("failed"), Value::Null),
        "{run}"
    );
    assert!(
        run["error"]
            .as_str()
            .unwrap()
            .starts_with("not a wasi:cli command:"),
        "{run}"
    );
    let missing = create(&c, "missing", &format!("{host}/{org}/missing:v1"), &[]).await;
    let run = trigger(&c, &missing).await;
    assert!(
        run["error"]
            .as_str()
            .unwrap()
            .starts_with("image not found:"),
        "{run}"
    );

    // Another organisation may not name this one's image.
    let other = s
        .anonymous()
        .with_token(&create_org(&s, "cron-other", "pro").await);
    let r = other
        .post(
            "/cron-jobs",
            json!({ "name": "steal", "schedule": "* * * * *", "type": "container", "image": echo }),
        )
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "validation_failed"),
        "{}",
        r.text()
    );
    assert_eq!(r.json()["errors"][0]["field"], "image", "{}", r.text());
}
