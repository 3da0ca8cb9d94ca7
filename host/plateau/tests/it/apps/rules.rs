//! Edge rules (issue 30): redirects, rewrites and response headers that
//! the edge applies while the app's scale-out is on, switched without a
//! redeploy; invalid rules refused naming the field and the column.

use std::time::Duration;

use plateau_testkit::Backend;
use serde_json::{Value, json};

use super::{Apps, id, slug};

/// `GET path` at the app's name, redirects not followed: status,
/// `Location`, `X-Frame-Options`.
async fn fetch(env: &Apps, slug: &str, path: &str) -> (u16, Option<String>, Option<String>) {
    let r = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}{path}", env.server.edge_url))
        .header("host", format!("{slug}.apps.localhost"))
        .send()
        .await
        .unwrap();
    let header = |name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    (
        r.status().as_u16(),
        header("location"),
        header("x-frame-options"),
    )
}

/// Polls `path` until it answers `want` (rules reach the edge when the
/// agent follows the app).
async fn until(env: &Apps, slug: &str, path: &str, want: (u16, Option<&str>, Option<&str>)) {
    let mut last = (0, None, None);
    for _ in 0..200 {
        last = fetch(env, slug, path).await;
        if (last.0, last.1.as_deref(), last.2.as_deref()) == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path}: wanted {want:?}, last {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_apply_at_the_edge_while_scale_out_is_on() {
    let env = Apps::start(Backend::Sqlite).await;
    let c = env.client();
    let app = env.deployed("Ruled", &env.v1).await;
    let (app_id, slug) = (id(&app), slug(&app));
    let rules = format!("/apps/{app_id}/rules");

    // Invalid rules name the field and where in it the problem is.
    for (rule, field, at) in [
        (
            json!({ "type": "redirect", "source": "/a/:b*/c", "destination": "/x" }),
            "source",
            "column 4",
        ),
        (
            json!({ "type": "rewrite", "source": "/p/:id", "destination": "/q/:idx" }),
            "destination",
            "column 4",
        ),
        (
            json!({ "type": "teleport", "source": "/" }),
            "type",
            "redirect, rewrite or header",
        ),
        (
            json!({ "type": "header", "source": "/", "headerName": "Content-Length", "headerValue": "1" }),
            "headerName",
            "column 1",
        ),
        (
            json!({ "type": "redirect", "source": "/", "destination": "/x", "status": 200 }),
            "status",
            "308",
        ),
    ] {
        let r = c.post(&rules, rule.clone()).await;
        assert_eq!(r.status, 400, "{rule}: {}", r.text());
        let error = &r.json()["errors"][0];
        assert_eq!(error["field"], field, "{rule}: {}", r.text());
        assert!(
            error["message"].as_str().unwrap().contains(at),
            "{rule}: {}",
            r.text()
        );
    }

    let mut made: Vec<Value> = Vec::new();
    for rule in [
        json!({ "type": "redirect", "source": "/old/:slug", "destination": "/new/:slug", "status": 301 }),
        json!({ "type": "rewrite", "source": "/app/:rest*", "destination": "/index.html" }),
        json!({ "type": "header", "source": "/:any*", "headerName": "X-Frame-Options", "headerValue": "DENY" }),
    ] {
        let r = c.post(&rules, rule).await;
        assert_eq!(r.status, 201, "{}", r.text());
        made.push(r.json());
    }
    let listed = c.get(&rules).await.json();
    let kinds: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["redirect", "rewrite", "header"]);
    assert_eq!(made[0]["status"], 301);

    // Off until scale-out is on.
    assert_eq!(
        c.get(&format!("/apps/{app_id}/scale-out")).await.json(),
        json!({ "enabled": false })
    );
    assert_eq!(fetch(&env, &slug, "/old/post").await, (200, None, None));
    let r = c
        .put(
            &format!("/apps/{app_id}/scale-out"),
            json!({ "enabled": true }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    until(
        &env,
        &slug,
        "/old/post?ref=mail",
        (301, Some("/new/post?ref=mail"), Some("DENY")),
    )
    .await;
    assert_eq!(
        fetch(&env, &slug, "/app/settings/profile").await,
        (200, None, Some("DENY".to_owned()))
    );
    // The app saw the rewritten path.
    crate::until(
        &c,
        &format!("/apps/{app_id}/logs"),
        "the rewritten path",
        |l| {
            l["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["line"] == "v1 served /index.html")
        },
    )
    .await;

    // Disabled, then deleted, without a redeploy.
    let redirect = id(&made[0]);
    let r = c
        .patch(&format!("{rules}/{redirect}"), json!({ "enabled": false }))
        .await;
    assert_eq!(
        (r.status, r.json()["enabled"].as_bool()),
        (200, Some(false)),
        "{}",
        r.text()
    );
    until(&env, &slug, "/old/post", (200, None, Some("DENY"))).await;
    let r = c.delete(&format!("{rules}/{}", id(&made[2]))).await;
    assert_eq!(r.status, 200, "{}", r.text());
    until(&env, &slug, "/old/post", (200, None, None)).await;
    let r = c.delete(&format!("{rules}/{}", id(&made[2]))).await;
    assert_eq!(r.status, 404, "{}", r.text());

    let events = c.get("/events?type=app.rule.*&limit=50").await.json();
    let types = crate::event_types(&events);
    for kind in ["app.rule.created", "app.rule.updated", "app.rule.deleted"] {
        assert!(types.contains(&kind), "{kind} missing from {types:?}");
    }
}
