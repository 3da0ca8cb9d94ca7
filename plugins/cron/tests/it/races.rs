//! A run that ends while the API changes its job, through the SDK's
//! in-memory host: the run is recorded over the changed job and never
//! undoes the change; a job deleted meanwhile records nothing.

use plateau_plugin_cron::record::{self, CronJob};
use plateau_plugin_cron::run;
use plateau_plugin_cron::stored::{self, Stored};
use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{Bucket, Method, Response, testing};

use crate::ms;

const ORG: &str = "org_test";

fn send(method: Method, target: &str, body: Option<Value>) -> Response {
    crate::send_as(ORG, method, target, body)
}

/// A job on `* * * * *` created at midnight, and the bytes a run due at
/// 00:01 read before the API changed it.
fn job_read_by_a_run() -> (Bucket, Stored) {
    testing::reset();
    testing::set_now(ms("2027-01-01T00:00:00Z"));
    let res = send(
        Method::Post,
        "/cron-jobs",
        Some(
            json!({ "name": "a", "schedule": "* * * * *", "type": "http", "url": "https://hooks.test/a" }),
        ),
    );
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    let id = testing::json_body(&res)["id"].as_str().unwrap().to_owned();
    testing::set_organization(Some(ORG));
    let bucket = Bucket::organization(ORG).unwrap();
    let read = Stored::load(&bucket, &id).unwrap().unwrap();
    assert_eq!(read.job.next_run_at, Some(ms("2027-01-01T00:01:00Z")));
    (bucket, read)
}

fn record(bucket: &Bucket, read: Stored) -> (i64, Option<CronJob>) {
    let due = ms("2027-01-01T00:01:00Z");
    testing::set_now(due + 200);
    let mut run = run::new_run(&read.job, "schedule", due, due);
    let job = stored::record_run(bucket, read, &mut run, Some(due)).unwrap();
    (run.number, job)
}

#[test]
fn a_run_that_ends_after_a_patch_keeps_what_the_patch_changed() {
    let (bucket, read) = job_read_by_a_run();
    let id = read.job.id.clone();
    let res = send(
        Method::Patch,
        &format!("/cron-jobs/{id}"),
        Some(json!({ "schedule": "30 * * * *" })),
    );
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));

    let (number, job) = record(&bucket, read);
    let job = job.expect("the job still exists");
    assert_eq!(
        (number, job.next_run_at, job.schedule.as_str()),
        (1, Some(ms("2027-01-01T00:30:00Z")), "30 * * * *")
    );
    let got = testing::json_body(&send(Method::Get, &format!("/cron-jobs/{id}"), None));
    assert_eq!(got["nextRunAt"], "2027-01-01T00:30:00.000Z", "{got}");
    let runs = testing::json_body(&send(Method::Get, &format!("/cron-jobs/{id}/runs"), None));
    assert_eq!(runs["total"], 1, "{runs}");
    // The due index holds the job once, at its new time, as its record.
    let index = bucket.list(record::DUE_INDEX, None, 10).unwrap().entries;
    let record_bytes = bucket.get_raw(&CronJob::key(&id)).unwrap().unwrap();
    assert_eq!(index.len(), 1);
    assert_eq!(
        (index[0].key.clone(), &index[0].value),
        (
            record::due_key(ms("2027-01-01T00:30:00Z"), &id),
            &record_bytes
        )
    );
}

#[test]
fn a_run_that_ends_after_a_manual_run_still_moves_its_job_on() {
    let (bucket, read) = job_read_by_a_run();
    let id = read.job.id.clone();
    testing::mock_http(|_| Ok(testing::json_response(&json!({ "ok": true }))));
    let res = send(Method::Post, &format!("/cron-jobs/{id}/trigger"), None);
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));

    let (number, job) = record(&bucket, read);
    assert_eq!(
        (number, job.and_then(|j| j.next_run_at)),
        (2, Some(ms("2027-01-01T00:02:00Z")))
    );
}

#[test]
fn a_run_of_a_job_deleted_meanwhile_is_not_recorded() {
    let (bucket, read) = job_read_by_a_run();
    let id = read.job.id.clone();
    assert_eq!(
        send(Method::Delete, &format!("/cron-jobs/{id}"), None).status,
        204
    );
    let (_, job) = record(&bucket, read);
    assert!(job.is_none());
    assert!(bucket.list("", None, 10).unwrap().entries.is_empty());
}
