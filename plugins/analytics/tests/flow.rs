//! The plugin over the SDK's in-memory host: page views through the ingest
//! route, visits and bounces, the rollups against the filtered scan, and a
//! site of another organisation.

use plateau_plugin_analytics::AnalyticsPlugin;
use plateau_sdk::{Caller, Method, Request, Response, testing};
use serde_json::{Value, json};

const ORG: &str = "org_1";
const FIREFOX: &str =
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
const CHROME_ANDROID: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 \
     (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36";
/// 2026-11-27T10:00:00Z.
const T0: u64 = 1_795_773_600_000;
const MIN: u64 = 60_000;

fn send_as(org: &str, method: Method, target: &str, body: Option<&Value>) -> Response {
    let caller = Caller::new(org, &["analytics:read", "analytics:write"]);
    let mut req = Request::new(method, target).with_caller(caller);
    if let Some(body) = body {
        req = req.with_json(body);
    }
    testing::handle::<AnalyticsPlugin>(&req)
}

fn get(target: &str) -> Value {
    let res = send_as(ORG, Method::Get, target, None);
    assert_eq!(
        res.status,
        200,
        "{target}: {}",
        String::from_utf8_lossy(&res.body)
    );
    testing::json_body(&res)
}

fn view(at: u64, ip: &str, ua: &str, url: &str, referrer: Option<&str>) -> Response {
    testing::set_now(at);
    let body = json!({"n": "pageview", "u": url, "d": "example.com", "r": referrer});
    let req = Request::new(Method::Post, "/analytics/api/event")
        .with_caller(Caller::anonymous())
        .with_header("content-type", "text/plain")
        .with_header("user-agent", ua)
        .with_header("plateau-client-ip", ip)
        .with_body(serde_json::to_vec(&body).unwrap());
    testing::handle::<AnalyticsPlugin>(&req)
}

fn site() -> String {
    testing::reset();
    testing::set_now(T0 - MIN);
    let res = send_as(
        ORG,
        Method::Post,
        "/analytics/sites",
        Some(&json!({"domain": "example.com"})),
    );
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    testing::json_body(&res)["id"].as_str().unwrap().to_owned()
}

/// Two visitors: a Firefox visit of three pages from Google, a bounced
/// Chrome visit from a newsletter, and the Firefox visitor back after an
/// hour (a second visit, bounced).
fn traffic() {
    let home = "https://example.com/";
    let google = Some("https://www.google.com/");
    for (at, ip, ua, url, referrer) in [
        (T0, "203.0.113.1", FIREFOX, home, google),
        (
            T0 + MIN,
            "203.0.113.1",
            FIREFOX,
            "https://example.com/pricing",
            Some(home),
        ),
        (
            T0 + 3 * MIN,
            "203.0.113.1",
            FIREFOX,
            "https://example.com/docs",
            Some(home),
        ),
        (
            T0 + 5 * MIN,
            "198.51.100.2",
            CHROME_ANDROID,
            "https://example.com/pricing?utm_source=news&utm_campaign=nov",
            None,
        ),
        (T0 + 70 * MIN, "203.0.113.1", FIREFOX, home, None),
        (
            T0 + 71 * MIN,
            "192.0.2.9",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            home,
            None,
        ),
    ] {
        let res = view(at, ip, ua, url, referrer);
        assert_eq!(res.status, 202, "{}", String::from_utf8_lossy(&res.body));
    }
}

#[test]
fn page_views_become_visits_and_stats() {
    let id = site();
    traffic();
    let day = get(&format!(
        "/analytics/sites/{id}/stats?from=2026-11-27&to=2026-11-27"
    ));
    assert_eq!(day["interval"], "hour");
    assert_eq!(
        (
            &day["visitors"],
            &day["pageviews"],
            &day["visits"],
            &day["bounceRate"]
        ),
        (&json!(2), &json!(5), &json!(3), &json!(66.7))
    );
    // (180 s + 0 + 0) / 3 visits.
    assert_eq!(day["visitDuration"], 60);
    let ten = &day["timeseries"][10];
    assert_eq!(
        (&ten["time"], &ten["pageviews"], &ten["visits"]),
        (&json!("2026-11-27T10:00:00Z"), &json!(4), &json!(2))
    );
    assert_eq!(day["timeseries"][11]["pageviews"], 1);

    let sources = get(&format!(
        "/analytics/sites/{id}/breakdown?property=source&from=2026-11-27&to=2026-11-27"
    ));
    let rows: Vec<(String, i64, i64)> = sources["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["value"].as_str().unwrap().to_owned(),
                r["visitors"].as_i64().unwrap(),
                r["visits"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("google.com".into(), 1, 1),
            ("Direct / None".into(), 1, 1),
            ("news".into(), 1, 1)
        ]
    );
    let pages = get(&format!(
        "/analytics/sites/{id}/breakdown?property=page&from=2026-11-27&to=2026-11-27"
    ));
    assert_eq!(pages["rows"][0]["value"], "/pricing");
    assert_eq!(pages["rows"][0]["visitors"], 2);
    let exits = get(&format!(
        "/analytics/sites/{id}/breakdown?property=exit&from=2026-11-27&to=2026-11-27"
    ));
    let exit_rows: Vec<(&str, i64)> = exits["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["value"].as_str().unwrap(), r["visits"].as_i64().unwrap()))
        .collect();
    assert_eq!(exit_rows, [("/", 1), ("/docs", 1), ("/pricing", 1)]);
    let devices = get(&format!(
        "/analytics/sites/{id}/breakdown?property=device&from=2026-11-27&to=2026-11-27"
    ));
    assert_eq!(devices["rows"][0]["value"], "desktop");
    assert_eq!(devices["rows"][1]["value"], "mobile");
}

#[test]
fn filters_combine_and_agree_with_the_rollups() {
    let id = site();
    traffic();
    let period = "from=2026-11-27&to=2026-11-27";
    // One filter per visit dimension that matches everything of Firefox
    // equals the rollup's row for Firefox.
    let rollup = get(&format!(
        "/analytics/sites/{id}/breakdown?property=browser&{period}"
    ));
    let firefox = rollup["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["value"] == "Firefox")
        .unwrap()
        .clone();
    let filtered = get(&format!(
        "/analytics/sites/{id}/stats?{period}&filter.browser=Firefox"
    ));
    for metric in [
        "visitors",
        "pageviews",
        "visits",
        "bounceRate",
        "visitDuration",
    ] {
        assert_eq!(filtered[metric], firefox[metric], "{metric}");
    }
    let both = get(&format!(
        "/analytics/sites/{id}/stats?{period}&filter.browser=Firefox&filter.page=/pricing"
    ));
    assert_eq!(
        (&both["visitors"], &both["pageviews"], &both["visits"]),
        (&json!(1), &json!(1), &json!(1))
    );
    let none = get(&format!(
        "/analytics/sites/{id}/stats?{period}&filter.browser=Firefox&filter.source=news"
    ));
    assert_eq!(
        (&none["visitors"], &none["pageviews"]),
        (&json!(0), &json!(0))
    );
    let unfiltered_pages = get(&format!(
        "/analytics/sites/{id}/breakdown?property=page&{period}"
    ));
    let scanned_pages = get(&format!(
        "/analytics/sites/{id}/breakdown?property=page&{period}&filter.device=desktop&filter.device=desktop"
    ));
    assert_eq!(scanned_pages["rows"][0]["value"], "/");
    assert_eq!(unfiltered_pages["rows"].as_array().unwrap().len(), 3);
}

#[test]
fn bad_queries_and_other_organisations_sites() {
    let id = site();
    for (query, name) in [
        ("from=2026-13-01", "from"),
        ("to=soon", "to"),
        ("filter.city=Paris", "filter.city"),
    ] {
        let res = send_as(
            ORG,
            Method::Get,
            &format!("/analytics/sites/{id}/stats?{query}"),
            None,
        );
        assert_eq!(res.status, 400);
        assert!(String::from_utf8_lossy(&res.body).contains(name), "{query}");
    }
    let res = send_as(
        ORG,
        Method::Get,
        &format!("/analytics/sites/{id}/breakdown?property=city"),
        None,
    );
    assert_eq!(res.status, 400);
    assert_eq!(
        send_as(
            "org_2",
            Method::Get,
            &format!("/analytics/sites/{id}/stats"),
            None
        )
        .status,
        404
    );
    let taken = send_as(
        "org_2",
        Method::Post,
        "/analytics/sites",
        Some(&json!({"domain": "example.com"})),
    );
    assert_eq!(taken.status, 409);
    let bad = send_as(
        ORG,
        Method::Post,
        "/analytics/sites",
        Some(&json!({"domain": "not a domain"})),
    );
    assert_eq!(bad.status, 400);
    assert_eq!(testing::json_body(&bad)["errors"][0]["field"], "domain");
    let unknown = Request::new(Method::Post, "/analytics/api/event")
        .with_caller(Caller::anonymous())
        .with_header("user-agent", FIREFOX)
        .with_body(r#"{"n":"pageview","u":"https://other.org/","d":"other.org"}"#);
    let res = testing::handle::<AnalyticsPlugin>(&unknown);
    assert_eq!(res.status, 400);
    assert_eq!(testing::json_body(&res)["errors"][0]["field"], "domain");
    let bad = Request::new(Method::Post, "/analytics/api/event")
        .with_caller(Caller::anonymous())
        .with_body(r#"{"n":"pageview","d":"example.com"}"#);
    let res = testing::handle::<AnalyticsPlugin>(&bad);
    assert_eq!(res.status, 400);
    assert!(String::from_utf8_lossy(&res.body).contains("url"));
}

#[test]
fn the_edges_page_views_count_for_the_site_of_their_host_or_app() {
    testing::reset();
    testing::set_now(T0 - MIN);
    let body = json!({"domain": "example.com", "appId": "app_1"});
    let res = send_as(ORG, Method::Post, "/analytics/sites", Some(&body));
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    let id = testing::json_body(&res)["id"].as_str().unwrap().to_owned();
    let twice = send_as(
        ORG,
        Method::Post,
        "/analytics/sites",
        Some(&json!({"domain": "b.example", "appId": "app_1"})),
    );
    assert_eq!(twice.status, 409);
    let view = |host: &str, path: &str, ua: &str, status: u16, at: u64| {
        json!({"app": "app_1", "host": host, "path": path, "query": "utm_source=ad", "referrer": "",
               "ua": ua, "client": "c1", "status": status, "at": at})
    };
    let views = json!({"views": [
        view("example.com", "/", FIREFOX, 200, T0),
        view("app-1.apps.test", "/about", FIREFOX, 200, T0 + MIN),
        view("example.com", "/missing", FIREFOX, 404, T0 + 2 * MIN),
        view("example.com", "/", "curl/8.5.0", 200, T0 + 3 * MIN),
    ]});
    let job = |org: &str| plateau_sdk::jobs::Job {
        key: "edge:pvb_1".into(),
        organization_id: Some(org.into()),
        payload: views.to_string(),
        due: 0,
        attempt: 1,
    };
    testing::set_now(T0 + 5 * MIN);
    assert_eq!(testing::run_job::<AnalyticsPlugin>(&job(ORG)), Ok(()));
    assert_eq!(testing::run_job::<AnalyticsPlugin>(&job("org_2")), Ok(()));
    let day = get(&format!(
        "/analytics/sites/{id}/stats?from=2026-11-27&to=2026-11-27"
    ));
    assert_eq!(
        (
            &day["visitors"],
            &day["pageviews"],
            &day["visits"],
            &day["visitDuration"]
        ),
        (&json!(1), &json!(2), &json!(1), &json!(60))
    );
    let sources = get(&format!(
        "/analytics/sites/{id}/breakdown?property=utm_source&from=2026-11-27&to=2026-11-27"
    ));
    assert_eq!(sources["rows"][0]["value"], "ad");
}

#[test]
fn speed_insights_give_the_p75_per_route_and_device_worst_first() {
    site();
    testing::set_now(T0);
    let post = |ua: &str, body: Value| {
        let req = Request::new(Method::Post, "/speed-insights/api/vitals")
            .with_caller(Caller::anonymous())
            .with_header("user-agent", ua)
            .with_body(serde_json::to_vec(&body).unwrap());
        testing::handle::<AnalyticsPlugin>(&req)
    };
    for (ua, path, lcp) in [
        (FIREFOX, "/orders/1", 900.0),
        (FIREFOX, "/orders/2", 1100.0),
        (FIREFOX, "/orders/3", 4000.0),
        (FIREFOX, "/", 300.0),
        (CHROME_ANDROID, "/", 2600.0),
    ] {
        let body = json!({"d": "example.com", "u": format!("https://example.com{path}"), "m": [{"n": "LCP", "v": lcp}, {"n": "CLS", "v": 0.05}]});
        let res = post(ua, body);
        assert_eq!(res.status, 202, "{}", String::from_utf8_lossy(&res.body));
    }
    let bad = post(
        FIREFOX,
        json!({"d": "example.com", "u": "https://example.com/", "m": [{"n": "FID", "v": 1}]}),
    );
    assert_eq!(bad.status, 400);
    assert_eq!(
        testing::json_body(&bad)["errors"][0]["field"],
        "metrics[0].name"
    );
    let id = get("/analytics/sites").get("items").unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let report = get(&format!(
        "/speed-insights/sites/{id}?from=2026-11-27&to=2026-11-27"
    ));
    let routes: Vec<(&str, &str, i64)> = report["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["route"].as_str().unwrap(),
                r["device"].as_str().unwrap(),
                r["samples"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        routes,
        [
            ("/orders/[id]", "desktop", 3),
            ("/", "mobile", 1),
            ("/", "desktop", 1)
        ]
    );
    let worst = report["routes"][0]["p75"].as_f64().unwrap();
    assert!((4000.0..=4400.0).contains(&worst), "{worst}");
    assert_eq!(report["timeseries"][0]["samples"], 5);
    let mobile = get(&format!(
        "/speed-insights/sites/{id}?from=2026-11-27&to=2026-11-27&device=mobile&metric=CLS"
    ));
    let cls = mobile["routes"][0]["p75"].as_f64().unwrap();
    assert!((0.05..=0.055).contains(&cls), "{cls}");
}
