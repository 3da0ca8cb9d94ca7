//! Job ids: lowercase ULIDs that sort by creation time, and jobs created
//! before ids were ULIDs (`cron_` and 16 random digits) still resolve.

use plateau_plugin_cron::record::{self, CronJob};
use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{Bucket, Method, Response, testing};

use crate::ms;

const ORG: &str = "org_ids";

fn send(method: Method, target: &str, body: Option<Value>) -> Response {
    crate::send_as(ORG, method, target, body)
}

fn create(name: &str) -> String {
    let job = json!({ "name": name, "schedule": "0 * * * *", "type": "http", "url": "https://hooks.test/a" });
    let res = send(Method::Post, "/cron-jobs", Some(job));
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    testing::json_body(&res)["id"].as_str().unwrap().to_owned()
}

fn names() -> Vec<String> {
    let res = send(Method::Get, "/cron-jobs", None);
    testing::json_body(&res)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn ids_are_lowercase_ulids_that_list_in_creation_order() {
    testing::reset();
    let mut ids = Vec::new();
    // Later jobs first by name, so only the ids can give creation order.
    for (i, name) in ["c", "b", "a"].into_iter().enumerate() {
        let at = ms("2027-01-01T00:00:00Z") + i as u64 * 1_000;
        testing::set_now(at);
        let id = create(name);
        assert_eq!(id, id.to_ascii_lowercase(), "{id}");
        assert_eq!(plateau_sdk::ids::id_time(&id, "cron"), Some(at), "{id}");
        ids.push(id);
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(names(), ["c", "b", "a"]);
}

#[test]
fn a_job_with_an_id_of_before_still_resolves() {
    testing::reset();
    testing::set_now(ms("2027-01-01T00:00:00Z"));
    let id = create("new");
    testing::set_organization(Some(ORG));
    let bucket = Bucket::organization(ORG).unwrap();
    let mut job: CronJob = bucket.get(&CronJob::key(&id)).unwrap().unwrap();
    let old = "cron_0123456789abcdef";
    assert!(record::is_id(old));
    job.id = old.to_owned();
    job.name = "old".to_owned();
    bucket.set(&CronJob::key(old), &job).unwrap();
    testing::set_organization(None);

    let res = send(Method::Get, &format!("/cron-jobs/{old}"), None);
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    assert_eq!(testing::json_body(&res)["name"], "old");
    let res = send(Method::Delete, &format!("/cron-jobs/{old}"), None);
    assert_eq!(res.status, 204, "{}", String::from_utf8_lossy(&res.body));
    assert_eq!(names(), ["new"]);
    for bad in [
        "cron_0123",
        "cron_../../../../../../..",
        "hb_0123456789abcdef",
    ] {
        assert!(!record::is_id(bad), "{bad}");
    }
}
