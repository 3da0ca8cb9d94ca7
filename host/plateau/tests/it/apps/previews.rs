//! Previews: an app linked to a git repository (served from a local
//! directory) previews another branch under `<slug>-<branch>`, built with
//! buildah and fetched through the edge; a push webhook for that branch
//! redeploys the preview; variables of target `production` reach only the
//! app and those of target `preview` only previews; a delete takes the
//! host name (404 at the edge), the rows and the builds' registry
//! repository away, and so does a push deleting a previewed branch.
//! Needs root, buildah, git and runc.

use std::path::Path;

use plateau_testkit::{Backend, ServerOptions};
use serde_json::{Value, json};

use super::builds::{BUSYBOX, finished, git, push_hook, push_hook_body};
use super::{Apps, Edge, id, slug};

/// A Dockerfile serving `page` at `/` and, at `/env.txt`, the variables
/// `GREETING/PROD_ONLY/PREV_ONLY/OWN` the replica was started with.
fn dockerfile(page: &str) -> String {
    format!(
        "FROM scratch\n\
         COPY busybox /bin/busybox\n\
         RUN [\"/bin/busybox\", \"sh\", \"-c\", \"/bin/busybox ln -s busybox /bin/sh && mkdir -p /www && echo {page} > /www/index.html\"]\n\
         CMD [\"/bin/sh\", \"-c\", \"mkdir -p /tmp/www && cp /www/index.html /tmp/www/ && echo $GREETING/$PROD_ONLY/$PREV_ONLY/$OWN > /tmp/www/env.txt && exec httpd -f -v -p $PORT -h /tmp/www\"]\n"
    )
}

/// Commits a Dockerfile serving `page` on the branch checked out.
fn commit(dir: &Path, page: &str) {
    if !dir.join(".git").exists() {
        git(dir, &["init", "--quiet", "--initial-branch=main"]);
        std::fs::copy(BUSYBOX, dir.join("busybox"))
            .unwrap_or_else(|e| panic!("{BUSYBOX}: {e}; install the busybox-static package"));
    }
    std::fs::write(dir.join("Dockerfile"), dockerfile(page)).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "--quiet", "-m", page]);
}

/// The newest deployment of `app`, once live.
async fn newest_live(env: &Apps, app: &str) -> Value {
    let r = env.client().get(&format!("/apps/{app}/deployments")).await;
    let d = finished(env, app, &id(&r.json()["items"][0])).await;
    assert_eq!(d["status"], "live", "{d}");
    d
}

/// The first field a 400 names.
fn field(r: &plateau_testkit::Response) -> String {
    assert_eq!(r.status, 400, "{}", r.text());
    r.json()["errors"][0]["field"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_deploys_a_branch_under_its_own_name() {
    let repos = tempfile::tempdir().unwrap();
    let repo = repos.path().join("site");
    std::fs::create_dir_all(&repo).unwrap();
    commit(&repo, "production");
    let allow = format!("file://{}/", repos.path().display());
    let options = ServerOptions::new(Backend::Sqlite).env("PLATEAU_APPS_GIT_ALLOW", &allow);
    let env = Apps::start_with(options).await;
    let c = env.client();
    let url = format!("file://{}", repo.display());

    // The app, with variables of each target.
    let r = c
        .post(
            "/apps",
            json!({ "name": "Shop", "sourceType": "git", "repo": url }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let app = r.json();
    let app_id = id(&app);
    newest_live(&env, &app_id).await;
    for (key, value, target) in [
        ("GREETING", "hello", "all"),
        ("PROD_ONLY", "p", "production"),
        ("PREV_ONLY", "v", "preview"),
    ] {
        let r = c
            .post(
                &format!("/apps/{app_id}/env"),
                json!({ "key": key, "value": value, "target": target }),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let r = c
        .post(
            &format!("/apps/{app_id}/env"),
            json!({ "key": "X", "value": "1", "target": "staging" }),
        )
        .await;
    assert_eq!(field(&r), "target");
    let production = Edge::new(&env.server, &slug(&app));
    production.until_body("production\n").await;
    newest_live(&env, &app_id).await;
    assert_eq!(
        production.get("/env.txt").await,
        Ok((200, "hello/p//\n".to_owned()))
    );

    // Not linked yet: no previews.
    let ask = json!({ "branch": "feature/Login", "env": { "OWN": "mine" } });
    let r = c
        .post(&format!("/apps/{app_id}/previews"), ask.clone())
        .await;
    assert_eq!(
        (r.status, r.json()["code"].as_str()),
        (409, Some("app_not_linked")),
        "{}",
        r.text()
    );
    let r = c
        .put(
            &format!("/apps/{app_id}/github"),
            json!({ "repo": url, "branch": "main" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let secret = r.json()["secret"].as_str().unwrap().to_owned();
    let hook = r.json()["webhookUrl"].as_str().unwrap().to_owned();

    // Bad input names its field, before anything is made.
    let previews = format!("/apps/{app_id}/previews");
    for (body, named) in [
        (json!({ "branch": "main" }), "branch"),
        (json!({ "branch": "--upload-pack=x" }), "branch"),
        (json!({ "branch": "b", "env": { "1BAD": "x" } }), "env"),
        (
            json!({ "branch": "b", "dbBranchId": "dbs_nope" }),
            "dbEnvKey",
        ),
        (
            json!({ "branch": "b", "dbEnvKey": "DATABASE_URL" }),
            "dbBranchId",
        ),
        (
            json!({ "branch": "b", "dbBranchId": "dbs_nope", "dbEnvKey": "DATABASE_URL" }),
            "dbBranchId",
        ),
    ] {
        let r = c.post(&previews, body.clone()).await;
        assert_eq!(field(&r), named, "{body}");
    }

    // A preview of another branch, under <slug>-<branch>.
    git(&repo, &["checkout", "--quiet", "-b", "feature/Login"]);
    commit(&repo, "preview-one");
    let r = c.post(&previews, ask.clone()).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let preview = r.json();
    let preview_id = id(&preview);
    let preview_app = preview["appId"].as_str().unwrap().to_owned();
    let preview_slug = preview["slug"].as_str().unwrap().to_owned();
    assert_eq!(preview_slug, format!("{}-feature-login", slug(&app)));
    assert_eq!(preview["status"], "deploying", "{preview}");
    let r = c.post(&previews, ask.clone()).await;
    assert_eq!(
        (r.status, r.json()["code"].as_str()),
        (409, Some("preview_exists"))
    );
    newest_live(&env, &preview_app).await;
    let edge = Edge::new(&env.server, &preview_slug);
    edge.until_body("preview-one\n").await;
    // The app's variables but production's, then its own.
    assert_eq!(
        edge.get("/env.txt").await,
        Ok((200, "hello//v/mine\n".to_owned()))
    );
    assert_eq!(
        production.get("/").await,
        Ok((200, "production\n".to_owned()))
    );

    // Listed under its app, not among the apps; changed only through them.
    let listed = c.get(&previews).await.json();
    assert_eq!(
        listed["items"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    assert_eq!(listed["items"][0]["status"], "running", "{listed}");
    let all = c.get("/apps").await.json();
    let ids: Vec<String> = all["items"].as_array().unwrap().iter().map(id).collect();
    assert_eq!(ids, [app_id.as_str()]);
    let r = c
        .patch(&format!("/apps/{preview_app}"), json!({ "name": "mine" }))
        .await;
    assert_eq!(
        (r.status, r.json()["code"].as_str()),
        (409, Some("preview_app"))
    );

    // A push to the branch redeploys the preview, not the app.
    commit(&repo, "preview-two");
    let (status, started) = push_hook(&hook, &secret, "p-1", "push", "feature/Login").await;
    assert_eq!(
        (status, started["appId"].as_str()),
        (202, Some(preview_app.as_str())),
        "{started}"
    );
    let pushed = finished(
        &env,
        &preview_app,
        started["deploymentId"].as_str().unwrap(),
    )
    .await;
    assert_eq!(pushed["status"], "live", "{pushed}");
    edge.until_body("preview-two\n").await;
    assert_eq!(
        production.get("/").await,
        Ok((200, "production\n".to_owned()))
    );
    let (status, other) = push_hook(&hook, &secret, "p-2", "push", "unpreviewed").await;
    assert_eq!(
        (status, other["status"].as_str()),
        (200, Some("ignored")),
        "{other}"
    );

    // Its builds are in the registry under the preview's name.
    let tags = |name: String| {
        let token = env.token.clone();
        let base = env.server.url.clone();
        async move {
            reqwest::Client::new()
                .get(format!("{base}/v2/{name}/tags/list"))
                .basic_auth("plateau", Some(token))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let repository = format!("{}/{preview_slug}", env.org);
    assert_eq!(tags(repository.clone()).await, 200);

    // A delete: the name answers 404 at once, then everything goes.
    let r = c.delete(&format!("{previews}/{preview_id}")).await;
    assert_eq!(
        (r.status, r.json()["status"].as_str()),
        (202, Some("deleting")),
        "{}",
        r.text()
    );
    let (status, _) = edge.get("/").await.unwrap();
    assert_eq!(status, 404);
    crate::until(&c, &previews, "the preview removed", |v| {
        v["items"] == json!([])
    })
    .await;
    assert_eq!(c.get(&format!("{previews}/{preview_id}")).await.status, 404);
    assert_eq!(c.get(&format!("/apps/{preview_app}")).await.status, 404);
    assert_eq!(tags(repository).await, 404);
    assert_eq!(
        production.get("/").await,
        Ok((200, "production\n".to_owned()))
    );
    let events = c.get("/events?type=app.preview.*").await.json();
    let types = crate::event_types(&events);
    assert!(
        types.contains(&"app.preview.created") && types.contains(&"app.preview.deleted"),
        "{types:?}"
    );
    eprintln!("previews: created, pushed and deleted preview {preview_id} ({preview_slug})");

    // A push deleting a previewed branch (GitHub's `deleted`, `after` all
    // zeros) deletes its preview as DELETE does.
    git(&repo, &["checkout", "--quiet", "-b", "gone"]);
    let r = c.post(&previews, json!({ "branch": "gone" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let gone = r.json();
    let gone_app = gone["appId"].as_str().unwrap().to_owned();
    let gone_slug = gone["slug"].as_str().unwrap().to_owned();
    newest_live(&env, &gone_app).await;
    let gone_edge = Edge::new(&env.server, &gone_slug);
    gone_edge.until_body("preview-two\n").await;
    git(&repo, &["checkout", "--quiet", "main"]);
    git(&repo, &["branch", "--quiet", "-D", "gone"]);
    let deleted = json!({
        "ref": "refs/heads/gone",
        "before": "1111111111111111111111111111111111111111",
        "after": "0000000000000000000000000000000000000000",
        "deleted": true,
    });
    let (status, closed) = push_hook_body(&hook, &secret, "p-3", "push", &deleted).await;
    assert_eq!(
        (status, closed["status"].as_str(), closed["appId"].as_str()),
        (202, Some("closed"), Some(gone_app.as_str())),
        "{closed}"
    );
    let (status, _) = gone_edge.get("/").await.unwrap();
    assert_eq!(status, 404, "the name is gone once the push is answered");
    crate::until(&c, &previews, "the deleted branch's preview removed", |v| {
        v["items"] == json!([])
    })
    .await;
    assert_eq!(c.get(&format!("/apps/{gone_app}")).await.status, 404);
    assert_eq!(tags(format!("{}/{gone_slug}", env.org)).await, 404);
    let events = c
        .get("/events?type=app.preview.deleted&limit=1")
        .await
        .json();
    assert_eq!(events["items"][0]["data"]["branch"], "gone", "{events}");
    let (status, again) = push_hook_body(&hook, &secret, "p-4", "push", &deleted).await;
    assert_eq!(
        (status, again["status"].as_str()),
        (200, Some("ignored")),
        "{again}"
    );
    assert_eq!(
        production.get("/").await,
        Ok((200, "production\n".to_owned()))
    );
    eprintln!("previews: a push deleting branch gone deleted its preview ({gone_slug})");
}
