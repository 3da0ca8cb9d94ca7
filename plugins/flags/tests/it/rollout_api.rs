//! Percentage rollouts, disabled flags and time-based targeting, evaluated over OFREP.

use crate::client::{bool_flag, evaluate, json, save_flag};
use crate::ofrep_api::{BULK, bulk, rollout};
use plateau_sdk::testing;
use serde_json::json;

/// The published MurmurHash3 edge vectors of `REFERENCE.md`, split into a one-character flag
/// key and a targeting key, so that flagd's default bucketing string (flag key, then
/// targeting key) is the vector: with 50/50 the first three land in the first bucket.
#[test]
fn fractional_rollouts_bucket_like_flagd_over_ofrep() {
    let cases = [
        ("e", "jOoVL", true),  // ejOoVL hashes to 0
        ("b", "Y9fO-", true),  // bY9fO- hashes to 1
        ("S", "I7p-", true),   // SI7p- hashes to 2147483647
        ("6", "LvT0", false),  // 6LvT0 hashes to 2147483648
        ("c", "eQdGm", false), // ceQdGm hashes to 4294967295
    ];
    for (key, targeting_key, first) in cases {
        save_flag(key, &rollout([50, 50]));
        let (status, body) = evaluate(key, &json!({"targetingKey": targeting_key}));
        assert_eq!(status, 200, "{key}{targeting_key}");
        assert_eq!(
            (&body["value"], &body["reason"]),
            (&json!(first), &json!("TARGETING_MATCH")),
            "{key}{targeting_key}"
        );
    }
}

#[test]
fn percentage_rollouts_are_sticky_while_they_ramp_up() {
    let users: Vec<String> = (0..400).map(|i| format!("user-{i}")).collect();
    let enabled = |at_millis: u64| -> Vec<bool> {
        testing::set_now(at_millis);
        users
            .iter()
            .map(|user| evaluate("rollout", &json!({"targetingKey": user})).1["value"] == true)
            .collect()
    };
    save_flag("rollout", &rollout([10, 90]));
    let at_10 = enabled(1_700_000_000_000);
    assert_eq!(enabled(1_800_000_000_000), at_10, "the same users, later");
    let count_10 = at_10.iter().filter(|on| **on).count();
    assert!(
        (20..=60).contains(&count_10),
        "about 10% of 400: {count_10}"
    );

    save_flag("rollout", &rollout([50, 50]));
    let at_50 = enabled(1_700_000_000_000);
    let count_50 = at_50.iter().filter(|on| **on).count();
    assert!(
        (160..=240).contains(&count_50),
        "about 50% of 400: {count_50}"
    );
    let dropped = at_10
        .iter()
        .zip(&at_50)
        .filter(|(before, now)| **before && !**now)
        .count();
    assert_eq!(
        dropped, 0,
        "a ramp-up keeps everyone who already had the feature"
    );
}

#[test]
fn disabled_flags_defer_to_the_code_default_even_without_a_targeting_key() {
    let mut flag = rollout([50, 50]);
    flag["state"] = json!("DISABLED");
    save_flag("paused", &flag);
    let expected = json!({"key": "paused", "reason": "DISABLED", "metadata": {}});
    assert_eq!(evaluate("paused", &json!({})), (200, expected.clone()));
    let all = json(&bulk(BULK, &json!({}), None));
    assert_eq!(all["flags"], json!([expected]));
}

#[test]
fn flagd_timestamp_comes_from_the_host_clock() {
    let launch = 1_750_000_000;
    save_flag(
        "launch",
        &bool_flag(json!({"if": [{">=": [{"var": "$flagd.timestamp"}, launch]}, "on", "off"]})),
    );
    for (now_secs, value) in [(launch - 1, false), (launch, true), (launch + 86_400, true)] {
        testing::set_now(now_secs as u64 * 1000);
        let (_, body) = evaluate("launch", &json!({"targetingKey": "u"}));
        assert_eq!(body["value"], value, "at {now_secs}");
    }
}
