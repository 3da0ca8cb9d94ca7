//! `GET /metrics` and `GET /usage` over the series store: a running cache
//! accrues compute hours and disk GB-hours, a bucket accrues GB-hours
//! after a PUT, each point carries its cost, `/usage` prices the period
//! against the plan; bad input names its field; scopes and tenants.

use std::process::Command;
use std::time::Duration;

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};

use crate::storage::{create_bucket, create_key, ok, require};
use crate::{create_org, eventually, mint, start_with};

/// The quantity of `metric` for `resource` today, when there is one.
async fn quantity(c: &Client, resource: &str, metric: &str) -> Option<f64> {
    let m = c
        .get(&format!("/metrics?resource={resource}&metric={metric}"))
        .await
        .json();
    let items = m["items"].as_array()?;
    let q = items
        .iter()
        .map(|p| p["quantity"].as_f64().unwrap())
        .sum::<f64>();
    (q > 0.0).then_some(q)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn series_fill_and_cost() {
    let s =
        start_with(ServerOptions::new(Backend::Sqlite).env("PLATEAU_USAGE_SAMPLE_MS", "300")).await;
    let c = s.client();
    let r = c
        .post("/caches", json!({ "name": "sessions", "memoryMb": 32 }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let cache = c
        .wait_running(&format!("/caches/{}", r.json()["id"].as_str().unwrap()))
        .await;
    let cache_id = cache["id"].as_str().unwrap().to_owned();
    let within = Duration::from_secs(30);
    let first = eventually("compute hours of the cache", within, || {
        quantity(&c, &cache_id, "compute_hours")
    })
    .await;
    let later = eventually("more compute hours", within, || async {
        quantity(&c, &cache_id, "compute_hours")
            .await
            .filter(|q| *q > first)
    })
    .await;
    let disk = eventually("disk GB-hours of the cache", within, || {
        quantity(&c, &cache_id, "disk_gb_hours")
    })
    .await;
    eprintln!("cache {cache_id}: {first:.8} then {later:.8} node-hours, {disk:.10} disk GB-hours");

    // A PUT: the bucket's stored bytes become GB-hours.
    let bucket = create_bucket(&s, &s.token, "data").await;
    let bucket_id = bucket["id"].as_str().unwrap().to_owned();
    let key = create_key(&s, &s.token, json!({ "name": "ci" })).await;
    let file = s.data_dir.path().join("upload.bin");
    std::fs::write(&file, vec![7u8; 2_000_000]).unwrap();
    require("aws", "apt-get install -y awscli");
    ok(&Command::new("aws")
        .args(["s3", "cp", file.to_str().unwrap()])
        .arg(format!(
            "s3://{}/big.bin",
            bucket["bucket"].as_str().unwrap()
        ))
        .env("AWS_ENDPOINT_URL_S3", &s.storage_url)
        .env("AWS_ACCESS_KEY_ID", &key.access_key_id)
        .env("AWS_SECRET_ACCESS_KEY", &key.secret)
        .env("AWS_DEFAULT_REGION", "eu-central-2")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .output()
        .expect("aws runs"));
    let stored = eventually("GB-hours of the bucket", within, || {
        quantity(&c, &bucket_id, "storage_gb_hours")
    })
    .await;
    eprintln!("bucket {bucket_id}: {stored:.10} GB-hours after a 2 MB PUT");

    // Every point has its cost at list price; the total adds them up.
    let m: Value = c.get("/metrics").await.json();
    let items = m["items"].as_array().unwrap();
    let compute = items
        .iter()
        .find(|p| p["resourceId"] == cache_id.as_str() && p["metric"] == "compute_hours")
        .unwrap();
    assert_eq!(compute["resourceType"], "cache");
    assert_eq!(compute["unit"], "node-hour");
    let cost = compute["costCents"].as_f64().unwrap();
    assert!(
        (cost - compute["quantity"].as_f64().unwrap()).abs() < 0.001,
        "1 cent a node-hour: {compute}"
    );
    let sum: f64 = items.iter().map(|p| p["costCents"].as_f64().unwrap()).sum();
    assert!(
        (sum - m["totalCostCents"].as_f64().unwrap()).abs() < 0.01,
        "{m}"
    );
    assert_eq!(m["total"].as_u64(), Some(items.len() as u64), "{m}");
    assert_eq!(m["nextCursor"], Value::Null);

    // Pages of two are the same points in the same order, with the
    // range's total and cost on each; a cursor continues only its query.
    let mut paged = Vec::new();
    let mut path = "/metrics?limit=2".to_owned();
    let mut pages = 0;
    let last_cursor = loop {
        let p = c.get(&path).await.json();
        pages += 1;
        assert_eq!(
            (&p["total"], &p["totalCostCents"]),
            (&m["total"], &m["totalCostCents"]),
            "page {pages}: {p}"
        );
        let page = p["items"].as_array().unwrap();
        assert!(page.len() <= 2, "{p}");
        paged.extend(page.iter().cloned());
        match p["nextCursor"].as_str() {
            Some(next) => path = format!("/metrics?limit=2&cursor={next}"),
            None => break path,
        }
    };
    let key = |p: &Value| {
        (
            p["day"].clone(),
            p["resourceId"].clone(),
            p["metric"].clone(),
        )
    };
    assert_eq!(
        paged.iter().map(key).collect::<Vec<_>>(),
        items.iter().map(key).collect::<Vec<_>>()
    );
    eprintln!("{} points in {pages} pages of 2", paged.len());
    if let Some((_, cursor)) = last_cursor.split_once("cursor=") {
        let r = c
            .get(&format!(
                "/metrics?limit=2&metric=compute_hours&cursor={cursor}"
            ))
            .await;
        assert_eq!(
            (r.status, r.json()["code"].as_str()),
            (400, Some("invalid_cursor")),
            "{}",
            r.text()
        );
    }
    let r = c.get("/metrics?limit=0").await;
    assert_eq!(r.status, 400, "{}", r.text());

    let other_metric = c
        .get(&format!(
            "/metrics?resource={cache_id}&metric=storage_gb_hours"
        ))
        .await
        .json();
    assert_eq!(other_metric["items"], json!([]));

    // /usage: this period against the plan (free includes 750 node-hours).
    let u = c.get("/usage").await.json();
    let row = u["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "compute_hours")
        .unwrap()
        .clone();
    assert!(row["quantity"].as_f64().unwrap() >= later, "{row}");
    assert_eq!(
        (row["includedQuantity"].as_f64(), row["costCents"].as_f64()),
        (Some(750.0), Some(0.0))
    );
    // Whole cents, as before: plan plus the rounded overage.
    assert_eq!(
        u["cost"]["totalCents"].as_i64(),
        Some(
            u["cost"]["planCents"].as_i64().unwrap() + u["cost"]["meteredCents"].as_i64().unwrap()
        )
    );

    // Bad input names its field.
    for (query, field) in [
        ("from=2026-13-01", "from"),
        ("to=yesterday", "to"),
        ("from=2020-01-01&to=2026-01-01", "from"),
        ("from=2026-02-01&to=2026-01-01", "from"),
        ("metric=bandwidth_zettabytes", "metric"),
        ("resource=", "resource"),
    ] {
        let r = c.get(&format!("/metrics?{query}")).await;
        assert_eq!(
            (r.status, r.json()["errors"][0]["field"].as_str()),
            (400, Some(field)),
            "{query}: {}",
            r.text()
        );
    }

    // Scopes and tenants.
    let no_scope = mint(&s, json!({ "name": "t", "scopes": ["usage:read"] })).await;
    let r = s.client().with_token(&no_scope).get("/metrics").await;
    assert_eq!(r.status, 403, "{}", r.text());
    let other = create_org(&s, "other", "free").await;
    let theirs = s
        .client()
        .with_token(&other)
        .get(&format!("/metrics?resource={cache_id}"))
        .await
        .json();
    assert_eq!(theirs["items"], json!([]));
}
