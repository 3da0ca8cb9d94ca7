//! An organisation's http cron jobs due at the same time run together:
//! each once, each run recorded with its own result, the next time of
//! each scheduled, and what the API changed before the time kept.

use std::collections::BTreeMap;

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};

use crate::cron::{manual_server, move_to, target};
use crate::plugins::admin;
use crate::{create_org, until};

crate::on_both_backends!(jobs_due_together_each_run_once_with_their_own_result);

/// Jobs of the test, all on `*/5 * * * *`.
const JOBS: usize = 40;

async fn create(c: &Client, name: &str, url: &str) -> String {
    let r = c
        .post(
            "/cron-jobs",
            json!({
                "name": name, "schedule": "*/5 * * * *", "type": "http", "url": url,
                "method": "POST", "headers": { "x-token": name },
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["id"].as_str().unwrap().to_owned()
}

/// The runs of job `id`, newest first, once it has `count`.
async fn runs(c: &Client, id: &str, count: usize) -> Vec<Value> {
    let page = until(c, &format!("/cron-jobs/{id}/runs"), "the runs", |p| {
        p["total"] == count
    })
    .await;
    page["items"].as_array().unwrap().clone()
}

async fn jobs_due_together_each_run_once_with_their_own_result(backend: Backend) {
    let (addr, hits) = target().await;
    let s = manual_server(backend).await;
    let admin = admin(&s).await;
    let c = s
        .anonymous()
        .with_token(&create_org(&s, "due", "pro").await);
    move_to(&admin, "2027-06-01T11:58:00Z").await;
    let hook = format!("http://{addr}/hook");
    let mut ids = Vec::new();
    for i in 0..JOBS {
        ids.push(create(&c, &format!("job-{i}"), &hook).await);
    }
    // One answers more than a run keeps; one is paused, one deleted, one
    // moved to 12:01 before the time; one points nowhere.
    let big = create(&c, "big", &format!("http://{addr}/big")).await;
    let nowhere = create(&c, "nowhere", "http://127.0.0.1:9/hook").await;
    let paused = ids.pop().unwrap();
    let r = c
        .patch(&format!("/cron-jobs/{paused}"), json!({ "paused": true }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let deleted = ids.pop().unwrap();
    assert_eq!(c.delete(&format!("/cron-jobs/{deleted}")).await.status, 204);
    let moved = ids.pop().unwrap();
    let r = c
        .patch(
            &format!("/cron-jobs/{moved}"),
            json!({ "schedule": "1 * * * *" }),
        )
        .await;
    assert_eq!(
        r.json()["nextRunAt"],
        "2027-06-01T12:01:00.000Z",
        "{}",
        r.text()
    );

    move_to(&admin, "2027-06-01T12:00:00Z").await;
    for id in &ids {
        let run = &runs(&c, id, 1).await[0];
        assert_eq!(
            (
                run["scheduledAt"].as_str(),
                run["status"].as_str(),
                run["responseBody"].as_str(),
                run["number"].as_u64()
            ),
            (
                Some("2027-06-01T12:00:00.000Z"),
                Some("succeeded"),
                Some("done"),
                Some(1)
            ),
            "{run}"
        );
    }
    let run = &runs(&c, &big, 1).await[0];
    assert_eq!(
        run["responseBody"].as_str().map(str::len),
        Some(4096),
        "{run}"
    );
    assert_eq!(run["responseBodyTruncated"], true);
    let run = &runs(&c, &nowhere, 1).await[0];
    assert_eq!(run["status"], "failed", "{run}");
    assert!(
        run["error"].as_str().unwrap().contains("connection"),
        "{run}"
    );
    let job = c.get(&format!("/cron-jobs/{}", ids[0])).await.json();
    assert_eq!(job["nextRunAt"], "2027-06-01T12:05:00.000Z", "{job}");

    // Each job called once, under its own name; not the paused, deleted
    // or moved ones.
    let count = |hits: &[(String, String, String)]| {
        let mut per: BTreeMap<String, usize> = BTreeMap::new();
        for (_, token, _) in hits {
            *per.entry(token.clone()).or_default() += 1;
        }
        per
    };
    let per = count(&hits.lock().unwrap());
    assert_eq!(per.len(), ids.len(), "{per:?}");
    assert!(per.values().all(|n| *n == 1), "{per:?}");

    // The moved job runs at 12:01 alone; the rest again at 12:05.
    move_to(&admin, "2027-06-01T12:01:00Z").await;
    assert_eq!(
        runs(&c, &moved, 1).await[0]["scheduledAt"],
        "2027-06-01T12:01:00.000Z"
    );
    move_to(&admin, "2027-06-01T12:05:00Z").await;
    for id in &ids {
        let all = runs(&c, id, 2).await;
        assert_eq!(all[0]["scheduledAt"], "2027-06-01T12:05:00.000Z");
        assert_eq!(all[0]["number"], 2);
    }
    assert_eq!(
        c.get(&format!("/cron-jobs/{paused}/runs")).await.json()["total"],
        0
    );
    let per = count(&hits.lock().unwrap());
    assert!(per.values().all(|n| *n <= 2), "{per:?}");
}
