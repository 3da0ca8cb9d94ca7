//! Verifies signed messages with the `standardwebhooks` library (PyPI), as
//! a receiver would: the webhooks' deliveries and the log drains' batches.

use std::process::Stdio;

use serde_json::{Value, json};

/// One message as received: its `webhook-id`, `webhook-timestamp`,
/// `webhook-signature` and body.
pub struct Signed<'a> {
    pub id: &'a str,
    pub timestamp: &'a str,
    pub signature: &'a str,
    pub body: &'a str,
}

/// Verifies each `(secret, message)`; `json_body` false for bodies that
/// are not one JSON document (NDJSON). One `ok` or `bad` per case.
const VERIFY: &str = r#"
import json, sys
from standardwebhooks.webhooks import Webhook, WebhookVerificationError
for case in json.load(open(sys.argv[1])):
    try:
        Webhook(case["secret"]).verify(case["body"], case["headers"], json_parse=case["json"])
        print("ok")
    except WebhookVerificationError:
        print("bad")
"#;

pub async fn verify(cases: &[(&str, Signed<'_>)], json_body: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<Value> = cases
        .iter()
        .map(|(secret, m)| {
            json!({
                "secret": secret,
                "body": m.body,
                "json": json_body,
                "headers": {
                    "webhook-id": m.id,
                    "webhook-timestamp": m.timestamp,
                    "webhook-signature": m.signature,
                },
            })
        })
        .collect();
    let file = dir.path().join("cases.json");
    std::fs::write(&file, serde_json::to_vec(&cases).unwrap()).unwrap();
    let script = dir.path().join("verify.py");
    std::fs::write(&script, VERIFY).unwrap();
    let out = tokio::process::Command::new("python3")
        .arg(&script)
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named"),
        "standardwebhooks is required: cargo xtask test installs it ({stderr})"
    );
    assert!(out.status.success(), "verify.py failed: {stderr}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}
