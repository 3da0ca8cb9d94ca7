//! Cron's starting deadline over HTTP, on a manual clock moved past two
//! minute boundaries at once (what an outage looks like to the job
//! runner): the latest passed time runs once, the earlier one is recorded
//! as `missed`, and past a job's deadline nothing is sent.

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};

use crate::cron::{manual_server, move_to, target};
use crate::plugins::admin;
use crate::{advance, until};

crate::on_both_backends!(an_outage_across_two_minutes_runs_the_latest_once_and_records_the_missed);

/// The job's runs, oldest first, once there are `n`.
async fn runs(c: &Client, id: &str, n: usize) -> Vec<Value> {
    let path = format!("/cron-jobs/{id}/runs");
    let page = until(c, &path, &format!("{n} runs"), |page| {
        page["items"]
            .as_array()
            .is_some_and(|items| items.len() == n)
    })
    .await;
    let mut items = page["items"].as_array().unwrap().clone();
    items.reverse();
    items
}

async fn an_outage_across_two_minutes_runs_the_latest_once_and_records_the_missed(
    backend: Backend,
) {
    let (addr, hits) = target().await;
    let s = manual_server(backend).await;
    let c = s.client();
    let admin = admin(&s).await;
    move_to(&admin, "2027-06-01T00:00:00Z").await;
    let url = format!("http://{addr}/hook");
    let mut ids = Vec::new();
    for (name, deadline) in [("default", None), ("strict", Some(5))] {
        let mut job = json!({ "name": name, "schedule": "* * * * *", "type": "http", "url": url });
        if let Some(seconds) = deadline {
            job["startingDeadlineSeconds"] = json!(seconds);
        }
        let r = c.post("/cron-jobs", job).await;
        assert_eq!(r.status, 201, "{}", r.text());
        ids.push(r.json()["id"].as_str().unwrap().to_owned());
    }

    // 00:00:00 to 00:02:10 in one step: the delivery of 00:01 comes 70 s
    // late, and 00:02 has passed too.
    advance(&admin, 130_000).await;
    let default = runs(&c, &ids[0], 2).await;
    let got: Vec<(&str, &str)> = default
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap(),
                r["scheduledAt"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("missed", "2027-06-01T00:01:00.000Z"),
            ("succeeded", "2027-06-01T00:02:00.000Z"),
        ]
    );
    let strict = runs(&c, &ids[1], 1).await;
    assert_eq!(strict[0]["status"], "missed");
    assert!(
        strict[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("2 runs due from 2027-06-01T00:01:00.000Z to 2027-06-01T00:02:00.000Z"),
        "{}",
        strict[0]
    );
    for id in &ids {
        let job = c.get(&format!("/cron-jobs/{id}")).await.json();
        assert_eq!(job["nextRunAt"], "2027-06-01T00:03:00.000Z", "{job}");
    }
    assert_eq!(
        hits.lock().unwrap().len(),
        1,
        "one request: the default job's 00:02"
    );
}
