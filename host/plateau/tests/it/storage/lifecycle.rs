//! S3 lifecycle rules driven by boto3 (issue 37): the rules set, read back
//! as they were given and deleted; elements Plateau does not act on
//! refused (NotImplemented), bad ones refused (400); and the job applying
//! them: current objects expired, noncurrent versions and a lone delete
//! marker removed, an old multipart upload aborted, while objects outside
//! the rules (or under a disabled rule) stay. A lifecycle day lasts one
//! second here (`PLATEAU_STORAGE_LIFECYCLE_DAY_MS`), and the job runs every
//! 200 ms (`PLATEAU_STORAGE_LIFECYCLE_EVERY_MS`).

use std::time::{Duration, Instant};

use plateau_testkit::{Backend, ServerOptions};
use serde_json::json;

use super::S3;

#[tokio::test]
async fn rules_are_kept_refused_or_applied() {
    let options = ServerOptions::new(Backend::Sqlite)
        .env("PLATEAU_STORAGE_LIFECYCLE_DAY_MS", "1000")
        .env("PLATEAU_STORAGE_LIFECYCLE_EVERY_MS", "200");
    let s3 = S3::start_with(options).await;
    let versioned = super::create_bucket(&s3.server, &s3.server.token, "aging").await;
    let name = versioned["bucket"].as_str().unwrap().to_owned();
    let set_at = Instant::now();
    let out = s3.boto(&s3.key, &SET.replace("VERSIONED", &name));
    eprintln!("{out:#}");

    assert_eq!(out["none"], "NoSuchLifecycleConfiguration");
    assert_eq!(out["transition"], "NotImplemented");
    assert_eq!(out["newer_noncurrent"], "NotImplemented");
    assert_eq!(out["days0"], "InvalidArgument");
    assert_eq!(out["same_id"], "InvalidArgument");
    assert_eq!(out["long_id"], "InvalidArgument");
    assert_eq!(out["bad_status"], "MalformedXML");
    assert_eq!(out["read_back"], out["rules"], "rules come back as set");
    assert_eq!(out["deleted"], "NoSuchLifecycleConfiguration");

    let script = STATE.replace("VERSIONED", &name);
    let state = crate::eventually("the rules applied", Duration::from_secs(90), || {
        let state = s3.boto(&s3.key, &script);
        async move {
            let done = state["keys"] == json!(["keep/b", "tmp/c"])
                && state["uploads"] == json!([])
                && state["versions"] == json!([["v/x", true, false]]);
            done.then_some(state)
        }
    })
    .await;
    eprintln!(
        "lifecycle applied {:.1} s after the rules were set (a day is 1 s; the \
         longest rule is 2 days): {state}",
        set_at.elapsed().as_secs_f64()
    );
}

const SET: &str = r#"
s3 = client("path")
V = "VERSIONED"
out = {}
def put(bucket, rules):
    return code(lambda: s3.put_bucket_lifecycle_configuration(Bucket=bucket,
        LifecycleConfiguration={"Rules": rules}))
out["none"] = code(lambda: s3.get_bucket_lifecycle_configuration(Bucket=B))
exp = {"Expiration": {"Days": 1}, "Status": "Enabled"}
out["transition"] = put(B, [{"ID": "t", "Filter": {"Prefix": ""}, "Status": "Enabled",
    "Transitions": [{"Days": 1, "StorageClass": "GLACIER"}]}])
out["newer_noncurrent"] = put(B, [{"ID": "n", "Filter": {"Prefix": ""}, "Status": "Enabled",
    "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 2}}])
out["days0"] = put(B, [{"ID": "z", "Prefix": "", "Status": "Enabled", "Expiration": {"Days": 0}}])
out["same_id"] = put(B, [{"ID": "a", "Prefix": "x/", **exp}, {"ID": "a", "Prefix": "y/", **exp}])
out["long_id"] = put(B, [{"ID": "i" * 256, "Prefix": "x/", **exp}])
out["bad_status"] = put(B, [{"ID": "s", "Prefix": "x/", "Expiration": {"Days": 1}, "Status": "On"}])
put(B, [{"ID": "gone", "Prefix": "", **exp}])
s3.delete_bucket_lifecycle(Bucket=B)
out["deleted"] = code(lambda: s3.get_bucket_lifecycle_configuration(Bucket=B))

rules = [
    {"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled", "Expiration": {"Days": 2}},
    {"ID": "tmp", "Prefix": "tmp/", "Status": "Disabled", "Expiration": {"Days": 1}},
    {"ID": "uploads", "Filter": {"Prefix": ""}, "Status": "Enabled",
     "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
]
for key in ["logs/a", "keep/b", "tmp/c"]:
    s3.put_object(Bucket=B, Key=key, Body=b"x")
s3.create_multipart_upload(Bucket=B, Key="unfinished")
put(B, rules)
out["rules"] = rules
out["read_back"] = s3.get_bucket_lifecycle_configuration(Bucket=B)["Rules"]

s3.put_bucket_versioning(Bucket=V, VersioningConfiguration={"Status": "Enabled"})
s3.put_object(Bucket=V, Key="v/x", Body=b"old")
s3.put_object(Bucket=V, Key="v/x", Body=b"new")
s3.put_object(Bucket=V, Key="v/y", Body=b"only")
s3.delete_object(Bucket=V, Key="v/y")
put(V, [{"ID": "noncurrent", "Filter": {"Prefix": "v/"}, "Status": "Enabled",
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
        {"ID": "markers", "Filter": {"Prefix": "v/"}, "Status": "Enabled",
         "Expiration": {"ExpiredObjectDeleteMarker": True}}])
print(json.dumps(out))
"#;

const STATE: &str = r#"
s3 = client("path")
V = "VERSIONED"
r = s3.list_objects_v2(Bucket=B)
r2 = s3.list_multipart_uploads(Bucket=B)
v = s3.list_object_versions(Bucket=V)
print(json.dumps({
    "keys": [o["Key"] for o in r.get("Contents", [])],
    "uploads": [u["Key"] for u in r2.get("Uploads", [])],
    "versions": [[x["Key"], x["IsLatest"], "Size" not in x]
                 for x in v.get("Versions", []) + v.get("DeleteMarkers", [])],
}))
"#;
