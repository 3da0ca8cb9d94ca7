//! Built apps: a `Dockerfile` (Debian's busybox-static copied into an
//! empty image, a RUN step writing the page) in a git repository served
//! from a local directory, built with buildah, pushed to the server's
//! registry, deployed and fetched through the edge; a failing RUN step
//! fails its deployment with the build log while the live one keeps
//! serving; a git URL the operator does not allow is refused. Needs root,
//! buildah, git and runc.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use plateau_testkit::{Backend, ServerOptions};
use serde_json::{Value, json};

use super::{Apps, Edge, id, slug};
use crate::on_both_backends;

on_both_backends!(git_dockerfile_builds);

pub(super) const BUSYBOX: &str = "/bin/busybox";

/// A Dockerfile serving `page` with busybox httpd; `run` is the shell
/// line of its RUN step.
pub(super) fn dockerfile(run: &str) -> String {
    format!(
        "FROM scratch\n\
         COPY busybox /bin/busybox\n\
         RUN [\"/bin/busybox\", \"sh\", \"-c\", \"/bin/busybox ln -s busybox /bin/sh && {run}\"]\n\
         CMD [\"/bin/sh\", \"-c\", \"exec httpd -f -v -p $PORT -h /www\"]\n"
    )
}

pub(super) fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs (install the git package)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Commits `run`'s Dockerfile (and busybox) on branch `main` of the
/// repository in `dir`.
fn commit(dir: &Path, run: &str, message: &str) {
    if !dir.join(".git").exists() {
        git(dir, &["init", "--quiet", "--initial-branch=main"]);
        std::fs::copy(BUSYBOX, dir.join("busybox"))
            .unwrap_or_else(|e| panic!("{BUSYBOX}: {e}; install the busybox-static package"));
    }
    std::fs::write(dir.join("Dockerfile"), dockerfile(run)).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "--quiet", "-m", message]);
}

/// Waits (builds take seconds to minutes) until deployment `dpl` of `app`
/// is live or failed; returns it.
pub(super) async fn finished(env: &Apps, app: &str, dpl: &str) -> Value {
    let c = env.client();
    let mut last = Value::Null;
    for _ in 0..1500 {
        let r = c.get(&format!("/apps/{app}/deployments")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        if let Some(d) = r.json()["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["id"] == dpl)
        {
            last = d.clone();
            if d["status"] == "live" || d["status"] == "failed" {
                return last;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("deployment {dpl} did not finish; last {last}");
}

/// The newest deployment of `app`.
async fn newest(env: &Apps, app: &str) -> String {
    let r = env.client().get(&format!("/apps/{app}/deployments")).await;
    id(&r.json()["items"][0])
}

async fn git_dockerfile_builds(backend: Backend) {
    let repos = tempfile::tempdir().unwrap();
    let repo = repos.path().join("site");
    std::fs::create_dir_all(&repo).unwrap();
    commit(
        &repo,
        "mkdir -p /www && echo built from git > /www/index.html",
        "first",
    );
    let allow = format!("file://{}/", repos.path().display());
    let env =
        Apps::start_with(ServerOptions::new(backend).env("PLATEAU_APPS_GIT_ALLOW", &allow)).await;
    let c = env.client();
    let url = format!("file://{}", repo.display());

    // A git app deploys at once: built, pushed, pulled, served.
    let r = c
        .post(
            "/apps",
            json!({ "name": "Built", "sourceType": "git", "repo": url, "branch": "main" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let app = r.json();
    assert_eq!(app["status"], "deploying", "{app}");
    let app_id = id(&app);
    let first = newest(&env, &app_id).await;
    let first = finished(&env, &app_id, &first).await;
    assert_eq!(first["status"], "live", "{first}");
    assert_eq!(first["sourceType"], "git");
    assert_eq!(first["repo"], url.as_str());
    assert_eq!(first["branch"], "main");
    let image = first["image"].as_str().unwrap();
    assert!(
        image.contains(&format!("/{}/", env.org)) && image.contains("@sha256:"),
        "the build is pushed to the organisation's repository, by digest: {image}"
    );
    assert!(
        first["buildLog"].as_str().unwrap().contains("STEP"),
        "{first}"
    );
    let edge = Edge::new(&env.server, &slug(&app));
    edge.until_body("built from git\n").await;

    // The build ran through the deployment's steps, one event each.
    let events = c.get("/events?type=app.deployment.*&limit=200").await;
    assert_eq!(events.status, 200, "{}", events.text());
    let types = crate::event_types(&events.json())
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    for step in [
        "app.deployment.building",
        "app.deployment.built",
        "app.deployment.pulled",
        "app.deployment.live",
    ] {
        assert!(types.iter().any(|t| t == step), "{step} in {types:?}");
    }

    // A RUN step that fails: the deployment fails with the build's
    // output, the live deployment keeps serving.
    commit(&repo, "echo the step breaks here && exit 3", "broken");
    let r = c
        .post(&format!("/apps/{app_id}/deployments"), json!({}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let broken = finished(&env, &app_id, &id(&r.json())).await;
    assert_eq!(broken["status"], "failed", "{broken}");
    assert!(
        broken["reason"]
            .as_str()
            .unwrap()
            .starts_with("build_failed"),
        "{broken}"
    );
    assert!(
        broken["buildLog"]
            .as_str()
            .unwrap()
            .contains("the step breaks here"),
        "{broken}"
    );
    assert_eq!(
        edge.get("/").await,
        Ok((200, "built from git\n".to_owned()))
    );
    let detail = c.get(&format!("/apps/{app_id}")).await.json();
    assert_eq!(detail["status"], "running", "{detail}");

    // A fixed commit on another branch deploys again.
    git(&repo, &["checkout", "--quiet", "-b", "fixed"]);
    commit(
        &repo,
        "mkdir -p /www && echo fixed > /www/index.html",
        "fixed",
    );
    let r = c
        .post(
            &format!("/apps/{app_id}/deployments"),
            json!({ "branch": "fixed" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let fixed = finished(&env, &app_id, &id(&r.json())).await;
    assert_eq!(fixed["status"], "live", "{fixed}");
    edge.until_body("fixed\n").await;
    push_deploys(&env, &app_id, &url, &repo, &edge).await;

    // Git URLs the operator does not allow are refused before anything
    // runs.
    for bad in [
        "https://example.com/acme/site.git".to_owned(),
        "file:///etc/".to_owned(),
        format!("{allow}../other"),
        "ext::sh -c touch% /tmp/pwned".to_owned(),
    ] {
        let r = c
            .post(
                "/apps",
                json!({ "name": "Refused", "sourceType": "git", "repo": bad }),
            )
            .await;
        assert_eq!(r.status, 422, "{bad}: {}", r.text());
        assert_eq!(r.json()["code"], "git_url_not_allowed", "{}", r.text());
        let r = c
            .post(
                &format!("/apps/{app_id}/deployments"),
                json!({ "repo": bad }),
            )
            .await;
        assert_eq!(r.status, 422, "{bad}: {}", r.text());
    }
    let r = c
        .post(
            &format!("/apps/{app_id}/deployments"),
            json!({ "branch": "--upload-pack=touch" }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());

    // The scratch checkouts are gone.
    let scratch = env.server.data_dir.path().join("apps/builds/scratch");
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// Sends a push webhook for `branch` as GitHub does, signed with `secret`.
pub(super) async fn push_hook(
    hook: &str,
    secret: &str,
    delivery: &str,
    event: &str,
    branch: &str,
) -> (u16, Value) {
    let body =
        json!({ "ref": format!("refs/heads/{branch}"), "after": "0123abc", "deleted": false });
    push_hook_body(hook, secret, delivery, event, &body).await
}

/// Sends `body` to the push webhook `hook`, signed with `secret`.
pub(super) async fn push_hook_body(
    hook: &str,
    secret: &str,
    delivery: &str,
    event: &str,
    body: &Value,
) -> (u16, Value) {
    use hmac::{Hmac, Mac};
    let body = body.to_string();
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    let r = reqwest::Client::new()
        .post(hook)
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", signature)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// A linked app deploys what is pushed to its branch, once per delivery;
/// unsigned or wrongly signed deliveries are refused.
async fn push_deploys(env: &Apps, app_id: &str, url: &str, repo: &Path, edge: &Edge) {
    let c = env.client();
    let r = c
        .put(
            &format!("/apps/{app_id}/github"),
            json!({ "repo": url, "branch": "fixed" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let link = r.json();
    let secret = link["secret"].as_str().unwrap().to_owned();
    let hook = link["webhookUrl"].as_str().unwrap().to_owned();
    assert!(
        hook.ends_with(&format!("/apps/{app_id}/github/push")),
        "{hook}"
    );
    let shown = c.get(&format!("/apps/{app_id}/github")).await.json();
    assert_eq!(
        (
            shown["linked"].as_bool(),
            shown["branch"].as_str(),
            shown.get("secret")
        ),
        (Some(true), Some("fixed"), None),
        "{shown}"
    );
    let deployments =
        || async { c.get(&format!("/apps/{app_id}/deployments")).await.json()["total"].clone() };
    let before = deployments().await;
    // Unsigned, or signed with another secret: refused, nothing deploys.
    let unsigned = reqwest::Client::new()
        .post(&hook)
        .header("x-github-event", "push")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 401);
    let (status, _) = push_hook(&hook, "whsec_wrong", "d-0", "push", "fixed").await;
    assert_eq!(status, 401);
    let (status, pong) = push_hook(&hook, &secret, "d-ping", "ping", "fixed").await;
    assert_eq!((status, pong["status"].as_str()), (200, Some("pong")));
    let (status, other) = push_hook(&hook, &secret, "d-1", "push", "main").await;
    assert_eq!(
        (status, other["status"].as_str()),
        (200, Some("ignored")),
        "{other}"
    );
    assert_eq!(deployments().await, before);
    // A push to the linked branch deploys it.
    commit(
        repo,
        "mkdir -p /www && echo pushed > /www/index.html",
        "pushed",
    );
    let (status, started) = push_hook(&hook, &secret, "d-2", "push", "fixed").await;
    assert_eq!(
        (status, started["status"].as_str()),
        (202, Some("deploying")),
        "{started}"
    );
    let pushed = finished(env, app_id, started["deploymentId"].as_str().unwrap()).await;
    assert_eq!(pushed["status"], "live", "{pushed}");
    edge.until_body("pushed\n").await;
    // The same delivery again is acknowledged and ignored.
    let (status, again) = push_hook(&hook, &secret, "d-2", "push", "fixed").await;
    assert_eq!((status, again["status"].as_str()), (200, Some("duplicate")));
    let events = c.get("/events?type=app.git.linked").await.json();
    assert_eq!(
        events["items"].as_array().map(Vec::len),
        Some(1),
        "{events}"
    );
}
