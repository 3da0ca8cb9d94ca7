//! Web analytics (issue 35), on one server on SQLite with a manual plugin
//! clock: page views of a real app through the edge (HTML GETs only, bots
//! left out) once `PUT /apps/{id}/analytics` is on, and through the public
//! ingest route the served script posts to; visitors counted afresh after
//! the daily salt rotates, with the old salt gone; no client address in
//! any stored row (the plugin's storage and its jobs); another
//! organisation's site invisible; bad input refused naming the field;
//! speed insights from the web-vitals script's ingest route.
//! Prints how long an edge page view took to show in the stats.

use std::time::Instant;

use plateau_testkit::{Backend, Client, Server, ServerOptions};
use serde_json::{Value, json};

use crate::apps::{Apps, id, slug};
use crate::plugins::admin;
use crate::{advance, create_org};

const FIREFOX: &str =
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 \
     (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const DAY_MS: u64 = 86_400_000;

/// `GET path` at the app's name through the edge, as `ua`.
async fn visit(env: &Apps, slug: &str, path: &str, ua: &str, referrer: Option<&str>) -> u16 {
    let mut req = reqwest::Client::new()
        .get(format!("{}{path}", env.server.edge_url))
        .header("host", format!("{slug}.apps.localhost"))
        .header("user-agent", ua);
    if let Some(r) = referrer {
        req = req.header("referer", r);
    }
    req.send().await.unwrap().status().as_u16()
}

/// A page view through the public ingest route, as the script sends it.
async fn event(s: &Server, ua: &str, body: &Value) -> (u16, String) {
    let r = s
        .anonymous()
        .request(reqwest::Method::POST, "/analytics/api/event")
        .header("user-agent", ua)
        .body("text/plain", body.to_string())
        .send()
        .await;
    (r.status, r.text())
}

async fn get(c: &Client, path: &str) -> Value {
    let r = c.get(path).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

/// `(value, pageviews)` of each row of a breakdown.
fn rows(breakdown: &Value) -> Vec<(String, i64)> {
    breakdown["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["value"].as_str().unwrap().to_owned(),
                r["pageviews"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Every stored row of the analytics plugin (its storage and its jobs),
/// as text.
async fn stored_rows(s: &Server) -> Vec<String> {
    sqlx::any::install_default_drivers();
    let url = format!(
        "sqlite://{}",
        s.data_dir.path().join("plateau.db").display()
    );
    let pool = sqlx::AnyPool::connect(&url).await.unwrap();
    let kv: Vec<(String, String, Vec<u8>)> =
        sqlx::query_as("SELECT namespace, key, value FROM plugin_kv WHERE plugin = 'analytics'")
            .fetch_all(&pool)
            .await
            .unwrap();
    let jobs: Vec<(String, String)> =
        sqlx::query_as("SELECT key, payload FROM plugin_jobs WHERE plugin = 'analytics'")
            .fetch_all(&pool)
            .await
            .unwrap();
    kv.into_iter()
        .map(|(ns, k, v)| format!("{ns} {k} {}", String::from_utf8_lossy(&v)))
        .chain(jobs.into_iter().map(|(k, p)| format!("job {k} {p}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_views_from_the_edge_and_the_script_become_cookieless_stats() {
    let env =
        Apps::start_with(ServerOptions::new(Backend::Sqlite).env("PLATEAU_CLOCK", "manual")).await;
    let s = &env.server;
    let c = env.client();
    let app = env.deployed("shop", &env.v1).await;
    let (app_id, slug) = (id(&app), slug(&app));

    // A site for the app's name, tied to the app; the edge reports its
    // page views once the switch is on.
    let host = format!("{slug}.apps.localhost");
    let r = c
        .post(
            "/analytics/sites",
            json!({ "domain": host, "appId": app_id }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let site = r.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(
        get(&c, &format!("/apps/{app_id}/analytics")).await["enabled"],
        false
    );
    let r = c
        .put(
            &format!("/apps/{app_id}/analytics"),
            json!({ "enabled": true }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());

    let started = Instant::now();
    assert_eq!(
        visit(
            &env,
            &slug,
            "/html/home",
            FIREFOX,
            Some("https://www.google.com/")
        )
        .await,
        200
    );
    assert_eq!(
        visit(&env, &slug, "/html/pricing?utm_source=news", FIREFOX, None).await,
        200
    );
    assert_eq!(
        visit(&env, &slug, "/plain", FIREFOX, None).await,
        200,
        "text/plain: no page view"
    );
    assert_eq!(
        visit(&env, &slug, "/html/bot", GOOGLEBOT, None).await,
        200,
        "a bot: none"
    );
    let post = reqwest::Client::new()
        .post(format!("{}/html/form", s.edge_url))
        .header("host", &host)
        .header("user-agent", CHROME)
        .send()
        .await
        .unwrap();
    assert_eq!(post.status().as_u16(), 200, "a POST: none");
    assert_eq!(visit(&env, &slug, "/html/home", CHROME, None).await, 200);
    let pages_path = format!("/analytics/sites/{site}/breakdown?property=page");
    let pages = crate::until(&c, &pages_path, "the edge's page views", |b| {
        rows(b).iter().map(|(_, n)| n).sum::<i64>() >= 3
    })
    .await;
    eprintln!(
        "analytics: 3 edge page views in the stats after {} ms",
        started.elapsed().as_millis()
    );
    assert_eq!(
        rows(&pages),
        [
            ("/html/home".to_owned(), 2),
            ("/html/pricing".to_owned(), 1)
        ]
    );
    let stats = get(&c, &format!("/analytics/sites/{site}/stats")).await;
    assert_eq!(
        (&stats["visitors"], &stats["pageviews"], &stats["visits"]),
        (&json!(2), &json!(3), &json!(2))
    );
    assert_eq!(stats["bounceRate"], 50.0);
    let sources = get(
        &c,
        &format!("/analytics/sites/{site}/breakdown?property=source"),
    )
    .await;
    let mut got = rows(&sources);
    got.sort();
    assert_eq!(
        got,
        [
            ("Direct / None".to_owned(), 1),
            ("google.com".to_owned(), 2)
        ]
    );
    let browsers = get(
        &c,
        &format!("/analytics/sites/{site}/breakdown?property=browser"),
    )
    .await;
    assert_eq!(browsers["rows"].as_array().unwrap().len(), 2, "{browsers}");
    let filtered = get(
        &c,
        &format!("/analytics/sites/{site}/stats?filter.browser=Firefox&filter.page=/html/pricing"),
    )
    .await;
    assert_eq!(
        (&filtered["visitors"], &filtered["pageviews"]),
        (&json!(1), &json!(1))
    );

    // The script and its public ingest route, for a site anywhere.
    let script = s.anonymous().get("/analytics/script.js").await;
    assert_eq!(script.status, 200);
    assert!(
        script
            .header("content-type")
            .unwrap()
            .starts_with("application/javascript")
    );
    assert!(script.text().contains("api/event"));
    let r = c
        .post("/analytics/sites", json!({ "domain": "example.com" }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let blog = r.json()["id"].as_str().unwrap().to_owned();
    let page = |path: &str| json!({ "n": "pageview", "u": format!("https://example.com{path}"), "d": "example.com", "r": null });
    assert_eq!(event(s, FIREFOX, &page("/")).await, (202, "ok".to_owned()));
    assert_eq!(
        event(s, FIREFOX, &page("/about")).await,
        (202, "ok".to_owned())
    );
    assert_eq!(
        event(s, GOOGLEBOT, &page("/")).await,
        (202, "ignored".to_owned())
    );
    let today = get(&c, &format!("/analytics/sites/{blog}/stats")).await;
    assert_eq!(
        (&today["visitors"], &today["pageviews"]),
        (&json!(1), &json!(2))
    );
    let day1 = today["to"].as_str().unwrap().to_owned();

    // Speed insights: the web-vitals script, its ingest route, the p75.
    let vitals = s.anonymous().get("/speed-insights/script.js").await;
    assert_eq!(vitals.status, 200);
    assert!(vitals.text().contains("webVitals") && vitals.text().contains("api/vitals"));
    for (path, lcp) in [("/orders/1", 800.0), ("/orders/2", 3900.0), ("/", 500.0)] {
        let body = json!({ "d": "example.com", "u": format!("https://example.com{path}"),
                           "m": [{ "n": "LCP", "v": lcp }, { "n": "INP", "v": 120 }] });
        let r = s
            .anonymous()
            .request(reqwest::Method::POST, "/speed-insights/api/vitals")
            .header("user-agent", FIREFOX)
            .body("text/plain", body.to_string())
            .send()
            .await;
        assert_eq!(r.status, 202, "{}", r.text());
    }
    let speed = get(&c, &format!("/speed-insights/sites/{blog}?metric=LCP")).await;
    assert_eq!(speed["routes"][0]["route"], "/orders/[id]", "{speed}");
    assert_eq!(speed["routes"][0]["samples"], 2);
    assert_eq!(speed["routes"][1]["route"], "/");

    // The next day: the same browser is a new visitor, and only the new
    // day's salt is kept.
    let operator = admin(s).await;
    advance(&operator, DAY_MS).await;
    assert_eq!(event(s, FIREFOX, &page("/")).await, (202, "ok".to_owned()));
    let both = get(&c, &format!("/analytics/sites/{blog}/stats?from={day1}")).await;
    assert_eq!(
        (&both["visitors"], &both["pageviews"]),
        (&json!(2), &json!(3))
    );
    let series: Vec<i64> = both["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["visitors"].as_i64().unwrap())
        .collect();
    assert_eq!(series, [1, 1]);
    // The attack: a client naming another address in the header the host
    // sets for plugins. The host drops it, so it is still today's visitor.
    let forged = s
        .anonymous()
        .request(reqwest::Method::POST, "/analytics/api/event")
        .header("user-agent", FIREFOX)
        .header("plateau-client-ip", "203.0.113.7")
        .body("text/plain", page("/pricing").to_string())
        .send()
        .await;
    assert_eq!(forged.status, 202, "{}", forged.text());
    let after = get(&c, &format!("/analytics/sites/{blog}/stats?from={day1}")).await;
    assert_eq!(
        (&after["visitors"], &after["pageviews"]),
        (&json!(2), &json!(4)),
        "a forged plateau-client-ip made a new visitor"
    );
    let stored = stored_rows(s).await;
    let salts: Vec<&String> = stored.iter().filter(|r| r.starts_with(" salt/")).collect();
    assert_eq!(salts.len(), 1, "{salts:?}");
    assert!(
        !salts[0].contains(&day1.replace('-', "")),
        "the old salt is gone"
    );
    // The clients all came from 127.0.0.1: no stored row names it.
    assert!(stored.len() > 20, "{} rows", stored.len());
    let leaks: Vec<&String> = stored.iter().filter(|r| r.contains("127.0.0.1")).collect();
    assert!(leaks.is_empty(), "{leaks:?}");
    eprintln!(
        "analytics: {} stored rows, none with the client's address",
        stored.len()
    );

    // Another organisation sees none of it and cannot take the domain.
    let other = Client::new(&s.url).with_token(&create_org(s, "rival", "free").await);
    assert_eq!(
        other
            .get(&format!("/analytics/sites/{blog}/stats"))
            .await
            .status,
        404
    );
    assert_eq!(get(&other, "/analytics/sites").await["items"], json!([]));
    let taken = other
        .post("/analytics/sites", json!({ "domain": "example.com" }))
        .await;
    assert_eq!(taken.status, 409, "{}", taken.text());

    // Bad input: 4xx naming the field.
    let bad = c
        .post("/analytics/sites", json!({ "domain": "not a domain" }))
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert_eq!(bad.json()["errors"][0]["field"], "domain");
    let (status, body) = event(s, FIREFOX, &json!({ "n": "pageview", "d": "example.com" })).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("url"), "{body}");
    let (status, body) = event(
        s,
        FIREFOX,
        &json!({ "n": "pageview", "u": "https://nowhere.test/", "d": "nowhere.test" }),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("domain"), "{body}");
    let r = c
        .get(&format!("/analytics/sites/{blog}/stats?from=2026-13-01"))
        .await;
    assert_eq!(r.status, 400);
    assert!(r.text().contains("from"), "{}", r.text());
    let r = c
        .get(&format!("/analytics/sites/{blog}/breakdown?property=city"))
        .await;
    assert_eq!(r.status, 400);
    assert!(r.text().contains("property"), "{}", r.text());
    let r = c
        .put(
            &format!("/apps/{app_id}/analytics"),
            json!({ "enabled": "yes" }),
        )
        .await;
    assert!(r.status == 400 || r.status == 422, "{}", r.text());
    assert!(r.text().contains("enabled"), "{}", r.text());
}
