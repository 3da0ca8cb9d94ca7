//! The one id scheme, from outside: ids the core and the plugins make are
//! a lowercase prefix, `_` and a lowercase ULID whose time is when they
//! were made (on a manual clock, the clock's time for plugins).

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::json;

use crate::cron::{move_to, ms};
use crate::plugins::admin;
use crate::start_with;

crate::on_both_backends!(new_ids_are_lowercase_ulids_of_their_creation_time);

/// Crockford's base-32 digits, lowercase.
const DIGITS: &str = "0123456789abcdefghjkmnpqrstvwxyz";

/// The milliseconds of `id` if it is `prefix`, `_` and 26 lowercase
/// Crockford digits, else a panic naming it.
fn ulid_millis(id: &str, prefix: &str) -> u64 {
    let ulid = id
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .unwrap_or_else(|| panic!("{id} does not start with {prefix}_"));
    assert_eq!(ulid.len(), 26, "{id}");
    let digits: Vec<u128> = ulid
        .chars()
        .map(|c| DIGITS.find(c).unwrap_or_else(|| panic!("{id}: {c:?}")) as u128)
        .collect();
    assert!(digits[0] <= 7, "{id} overflows 128 bits");
    let value = digits.iter().fold(0u128, |acc, d| (acc << 5) | d);
    (value >> 80) as u64
}

async fn created_id(c: &Client, path: &str, body: serde_json::Value) -> String {
    let r = c.post(path, body).await;
    assert_eq!(r.status, 201, "{path}: {}", r.text());
    r.json()["id"].as_str().unwrap().to_owned()
}

async fn new_ids_are_lowercase_ulids_of_their_creation_time(backend: Backend) {
    let s = start_with(ServerOptions::new(backend).env("PLATEAU_CLOCK", "manual")).await;
    let c = s.client();
    let admin = admin(&s).await;
    let at = "2027-05-01T10:00:00Z";
    move_to(&admin, at).await;

    let hb = created_id(&c, "/heartbeats", json!({"name": "backup"})).await;
    assert_eq!(ulid_millis(&hb, "hb"), ms(at), "{hb}");
    let job = json!({"name": "hourly", "schedule": "0 * * * *", "type": "http", "url": "https://example.com/hook"});
    let cron = created_id(&c, "/cron-jobs", job).await;
    assert_eq!(ulid_millis(&cron, "cron"), ms(at), "{cron}");

    // A later one sorts after.
    move_to(&admin, "2027-05-01T10:00:01Z").await;
    let later = created_id(&c, "/heartbeats", json!({"name": "later"})).await;
    assert!(hb < later, "{hb} < {later}");

    // The core's ids follow the same scheme (its own clock is the real one).
    let prj = created_id(&c, "/projects", json!({"name": "ids"})).await;
    assert!(ulid_millis(&prj, "prj") > 0, "{prj}");
}
