//! Edge plugins (issue 35) through the edge: an organisation uploads an
//! edge filter and enables it on an app (blocked and passed requests, a
//! swap under load with no failed request), an operator's filter that
//! traps or spins fails open or closed, and firewall rules: a syntax
//! error answers 400 at a line and column, block, log and challenge rules
//! act at the edge and leave events.

use std::time::Duration;

use plateau_plugin_artifacts::examples::HELLO_EDGE_FILTER;
use plateau_plugin_artifacts::fixtures::EDGE_MISBEHAVE;
use plateau_testkit::Backend;
use serde_json::{Value, json};

use super::{Apps, Edge, Load, failures, id, slug};

/// `GET path` at the app's name with `headers`: status, body, and the
/// response's `content-type`.
async fn fetch(
    env: &Apps,
    slug: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let mut req = reqwest::Client::new()
        .get(format!("{}{path}", env.server.edge_url))
        .header("host", format!("{slug}.apps.localhost"));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let content_type = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, r.text().await.unwrap(), content_type)
}

/// Polls until `GET path` answers `status`.
async fn until_status(env: &Apps, slug: &str, path: &str, status: u16) -> (u16, String, String) {
    let mut last = (0, String::new(), String::new());
    for _ in 0..200 {
        last = fetch(env, slug, path, &[]).await;
        if last.0 == status {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path}: wanted {status}, last {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_filters_and_firewall_rules_act_at_the_edge() {
    let env = Apps::start(Backend::Sqlite).await;
    let c = env.client();
    let app = env.deployed("Filtered", &env.v1).await;
    let (app_id, slug) = (id(&app), slug(&app));
    let edge = Edge::new(&env.server, &slug);
    assert_eq!(edge.get("/admin/x").await.unwrap().0, 200);

    // The organisation's own filter: checked at upload, listed as its own.
    let r = c
        .request(reqwest::Method::POST, "/edge-filters")
        .body("application/wasm", b"not a component".to_vec())
        .send()
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let r = c
        .request(reqwest::Method::POST, "/edge-filters")
        .body("application/wasm", HELLO_EDGE_FILTER.to_vec())
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let filter = r.json();
    assert_eq!(filter["name"], "hello-edge-filter");
    assert_eq!(filter["owner"], "organization");
    let listed = c.get("/edge-filters").await.json();
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["id"] == filter["id"])
    );

    let filters = format!("/apps/{app_id}/filters");
    for (body, field) in [
        (
            json!({ "filters": [{ "filterId": "efl_nope" }] }),
            "filters[0].filterId",
        ),
        (
            json!({ "filters": [{ "filterId": filter["id"], "failMode": "sideways" }] }),
            "filters[0].failMode",
        ),
    ] {
        let r = c.put(&filters, body).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(r.json()["errors"][0]["field"], field, "{}", r.text());
    }

    // Enabled under load: every request answers 200 from the app, before
    // and after the swap.
    let load = Load::start(&env.server, &slug, 4);
    let r = c
        .put(
            &filters,
            json!({ "filters": [{ "filterId": filter["id"], "failMode": "closed" }] }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["filters"][0]["failMode"], "closed");
    let (status, body, _) = until_status(&env, &slug, "/admin/x", 403).await;
    assert_eq!(
        (status, body.as_str()),
        (403, "the admin pages are not served here\n")
    );
    assert_eq!(
        c.get(&filters).await.json()["filters"][0]["name"],
        "hello-edge-filter"
    );
    // And off again, still under load.
    let r = c.put(&filters, json!({ "filters": [] })).await;
    assert_eq!(r.status, 200, "{}", r.text());
    until_status(&env, &slug, "/admin/x", 200).await;
    let answers = load.finish().await;
    let failed = failures(&answers, &["hello from v1"]);
    eprintln!(
        "edge filter swapped on and off under load: {} requests, {} failed",
        answers.len(),
        failed.len()
    );
    assert!(
        answers.len() > 20,
        "the load sent {} requests",
        answers.len()
    );
    assert!(failed.is_empty(), "{:?}", &failed[..failed.len().min(5)]);

    // The operator's filter, which every organisation may enable: one that
    // traps or spins fails open or closed as the app says, and the filters
    // after it still run.
    let admin = crate::plugins::admin(&env.server).await;
    let r = admin
        .request(reqwest::Method::POST, "/admin/edge-filters")
        .body("application/wasm", EDGE_MISBEHAVE.to_vec())
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let misbehave = r.json();
    assert_eq!(misbehave["owner"], "operator");
    let both = |mode: &str| {
        json!({ "filters": [
            { "filterId": misbehave["id"], "failMode": mode },
            { "filterId": filter["id"] },
        ] })
    };
    let r = c.put(&filters, both("closed")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, body, _) = until_status(&env, &slug, "/trap", 503).await;
    assert!(body.contains("filter_failed"), "{body}");
    assert_eq!(fetch(&env, &slug, "/bad-status", &[]).await.0, 503);
    assert_eq!(fetch(&env, &slug, "/", &[]).await.0, 200);
    let r = c.put(&filters, both("open")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    until_status(&env, &slug, "/trap", 200).await;
    assert_eq!(fetch(&env, &slug, "/spin", &[]).await.0, 200);
    // Past the failing filter, the next one still blocks.
    assert_eq!(fetch(&env, &slug, "/admin/x", &[]).await.0, 403);
    let r = c.put(&filters, json!({ "filters": [] })).await;
    assert_eq!(r.status, 200, "{}", r.text());

    // Firewall rules: a syntax error points at its line and column.
    let r = c
        .post(
            "/waf/rules",
            json!({ "expression": "http.request.uri.path eq \"/a\"\n  and ip.src in {10.0.0.0/33}", "action": "block" }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let error = &r.json()["errors"][0];
    assert_eq!(error["field"], "expression");
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("line 2, column 18:"), "{message}");
    let r = c
        .post(
            "/waf/rules",
            json!({ "expression": "http.host eq \"a\"", "action": "explode" }),
        )
        .await;
    assert_eq!(r.json()["errors"][0]["field"], "action", "{}", r.text());

    let rule = |expression: &str, action: &str, priority: i64| json!({ "expression": expression, "action": action, "priority": priority, "appId": app_id });
    let mut ids = Vec::new();
    for body in [
        rule(r#"lower(http.request.uri.path) eq "/blocked""#, "block", 10),
        rule(r#"http.user_agent contains "scanner-test""#, "log", 5),
        rule(r#"http.request.uri.path eq "/challenged""#, "challenge", 20),
    ] {
        let r = c.post("/waf/rules", body).await;
        assert_eq!(r.status, 201, "{}", r.text());
        ids.push(id(&r.json()));
    }
    let (block, log, challenge) = (&ids[0], &ids[1], &ids[2]);
    let listed = c.get(&format!("/waf/rules?appId={app_id}")).await.json();
    let order: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["log", "block", "challenge"]);

    let (_, body, content_type) = until_status(&env, &slug, "/BLOCKED?secret=1", 403).await;
    assert_eq!(content_type, "application/problem+json", "{body}");
    assert!(body.contains(block.as_str()), "{body}");
    let seen = fetch(
        &env,
        &slug,
        "/anything",
        &[("user-agent", "scanner-test/1.0")],
    )
    .await;
    assert_eq!((seen.0, seen.1.as_str()), (200, "hello from v1"));

    // The challenge: an interstitial whose script stores a signed cookie;
    // with that cookie the request passes, with a forged one it does not.
    let (status, page, content_type) = fetch(&env, &slug, "/challenged", &[]).await;
    assert_eq!(status, 403);
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let token = page
        .split("plateau_waf=")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let cookie = format!("plateau_waf={token}");
    let passed = fetch(&env, &slug, "/challenged", &[("cookie", &cookie)]).await;
    assert_eq!((passed.0, passed.1.as_str()), (200, "hello from v1"));
    let flipped = if token.ends_with('0') { '1' } else { '0' };
    let forged = format!("plateau_waf={}{flipped}", &token[..token.len() - 1]);
    assert_eq!(
        fetch(&env, &slug, "/challenged", &[("cookie", &forged)])
            .await
            .0,
        403
    );

    // The events: one per match, with the request's facts and no query
    // string or whole address; paginated.
    let events = crate::until(&c, "/waf/events", "the firewall's events", |page| {
        page["items"].as_array().unwrap().len() >= 4
    })
    .await;
    let items = events["items"].as_array().unwrap();
    let of = |rule: &str| -> Vec<&Value> { items.iter().filter(|e| e["ruleId"] == rule).collect() };
    let blocked = of(block);
    assert_eq!(blocked[0]["action"], "block");
    assert_eq!(blocked[0]["path"], "/BLOCKED");
    assert_eq!(blocked[0]["clientNetwork"], "127.0.0.0/24");
    assert_eq!(blocked[0]["appId"], app_id.as_str());
    assert_eq!(of(log)[0]["userAgent"], "scanner-test/1.0");
    assert_eq!(of(log)[0]["action"], "log");
    assert_eq!(of(challenge).len(), 2, "{events}");
    let page = c
        .get(&format!("/waf/events?limit=1&ruleId={block}"))
        .await
        .json();
    assert_eq!(page["items"].as_array().unwrap().len(), 1, "{page}");

    // Disabled, a rule stops acting.
    let r = c
        .patch(&format!("/waf/rules/{block}"), json!({ "enabled": false }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    until_status(&env, &slug, "/blocked", 200).await;
    let r = c.delete(&format!("/waf/rules/{challenge}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    until_status(&env, &slug, "/challenged", 200).await;

    // The managed rule set, switched on for the organisation, blocking.
    let r = c
        .put(
            "/waf/managed",
            json!({ "enabled": true, "action": "block" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.json()["rules"].as_array().unwrap().len() >= 5,
        "{}",
        r.text()
    );
    let attack = "/search?q=%3Cscript%3Ealert(1)%3C/script%3E";
    let (_, body, _) = until_status(&env, &slug, attack, 403).await;
    assert!(body.contains("plateau-managed-xss-1"), "{body}");
    let ordinary = fetch(
        &env,
        &slug,
        "/search?q=ordinary+words",
        &[("user-agent", "Mozilla/5.0")],
    )
    .await;
    assert_eq!(ordinary.0, 200, "{ordinary:?}");
    let r = c
        .put(
            "/waf/managed",
            json!({ "enabled": true, "action": "explode" }),
        )
        .await;
    assert_eq!(r.json()["errors"][0]["field"], "action", "{}", r.text());
}
