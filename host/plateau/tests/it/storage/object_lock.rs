//! S3 object lock driven by boto3 (issue 37): a bucket made over the API
//! with `objectLock` (versioning on, never suspended), its configuration
//! and default retention, per-version retention (GOVERNANCE yields to
//! `x-amz-bypass-governance-retention` from an unlimited key only,
//! COMPLIANCE to nothing) and legal hold; a locked version is never
//! deleted (a delete without version id makes a delete marker), by
//! DeleteObject, DeleteObjects or the lifecycle job; a bucket without
//! object lock refuses all of it with S3's errors. Also ListBuckets pages
//! (`MaxBuckets`) and the whole-upload checksum of a completion.

use std::time::Duration;

use plateau_testkit::{Backend, ServerOptions};
use serde_json::json;

use super::S3;

#[tokio::test]
async fn locked_versions_are_kept() {
    let options = ServerOptions::new(Backend::Sqlite)
        .env("PLATEAU_STORAGE_LIFECYCLE_DAY_MS", "1000")
        .env("PLATEAU_STORAGE_LIFECYCLE_EVERY_MS", "200");
    let s3 = S3::start_with(options).await;
    let c = plateau_testkit::Client::new(&s3.server.url).with_token(&s3.server.token);
    let made = c
        .post(
            "/storage/buckets",
            json!({ "name": "vault", "objectLock": true }),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text());
    let vault = made.json();
    let name = vault["bucket"].as_str().unwrap();
    let limited = super::create_key(
        &s3.server,
        &s3.server.token,
        json!({ "name": "app", "buckets": [vault["id"]] }),
    )
    .await;
    let script = SCRIPT
        .replace("VAULT", name)
        .replace("LIMITED_ID", &limited.access_key_id)
        .replace("LIMITED_SECRET", &limited.secret);
    let out = s3.boto(&s3.key, &script);
    eprintln!("{out:#}");

    // A bucket without object lock refuses it with S3's errors.
    assert_eq!(
        out["plain_get_config"],
        "ObjectLockConfigurationNotFoundError"
    );
    assert_eq!(out["plain_put_config"], "InvalidBucketState");
    assert_eq!(out["plain_retention"], "InvalidRequest");
    assert_eq!(out["plain_legal_hold"], "InvalidRequest");
    assert_eq!(out["plain_put_locked"], "InvalidRequest");

    // Made with object lock: versioning on, and never suspended.
    assert_eq!(out["versioning"], "Enabled");
    assert_eq!(
        out["config_at_creation"],
        json!({ "ObjectLockEnabled": "Enabled" })
    );
    assert_eq!(out["suspend"], "InvalidBucketState");
    assert_eq!(out["days_and_years"], "MalformedXML");
    assert_eq!(out["days_zero"], "InvalidRetentionPeriod");
    assert_eq!(out["lowercase_mode"], "MalformedXML");
    assert_eq!(out["disabled"], "MalformedXML");
    assert_eq!(out["config_read_back"], out["config_set"]);

    // The default retention: GOVERNANCE for a day from the write.
    assert_eq!(out["default_mode"], "GOVERNANCE");
    let until = out["default_until_hours"].as_f64().unwrap();
    assert!((23.9..24.1).contains(&until), "{until} hours");
    assert_eq!(out["delete_locked_version"], "AccessDenied");
    assert_eq!(out["delete_makes_marker"], true);
    assert_eq!(out["bypass_limited_key"], "AccessDenied");
    assert_eq!(out["bypass_unlimited_key"], "OK");

    // GOVERNANCE: kept or extended freely; shortened only with bypass.
    assert_eq!(out["gov_extend"], "OK");
    assert_eq!(out["gov_shorten"], "AccessDenied");
    assert_eq!(out["gov_to_compliance"], "AccessDenied");
    assert_eq!(out["gov_shorten_bypass"], "OK");
    assert_eq!(out["gov_read_back"], out["gov_shortened_to"]);
    assert_eq!(out["retention_bad_mode"], "MalformedXML");
    assert_eq!(out["retention_past"], "InvalidArgument");

    // COMPLIANCE: nothing shortens it, no bypass deletes it.
    assert_eq!(out["comp_shorten_bypass"], "AccessDenied");
    assert_eq!(out["comp_to_governance"], "AccessDenied");
    assert_eq!(out["comp_extend"], "OK");
    assert_eq!(out["comp_delete_bypass"], "AccessDenied");
    assert_eq!(out["comp_multi_delete"], json!([["AccessDenied", "comp"]]));

    // A noncurrent version by id.
    assert_eq!(out["old_version_retention"], "GOVERNANCE");
    assert_eq!(out["current_retention"], "NoSuchObjectLockConfiguration");
    assert_eq!(out["delete_old_version"], "AccessDenied");

    // Legal hold: no bypass passes it; released, the version goes.
    assert_eq!(out["hold_status"], json!(["ON", "ON", "OFF"]));
    assert_eq!(out["hold_delete_bypass"], "AccessDenied");
    assert_eq!(out["hold_bad_status"], "MalformedXML");
    assert_eq!(out["multipart_hold"], "ON");
    assert_eq!(out["multipart_delete"], "AccessDenied");
    assert_eq!(out["released_delete"], "OK");
    // A copy's lock is its own, never its source's.
    assert_eq!(out["copy_lock"], json!([null, "COMPLIANCE"]));

    // The lifecycle job expires noncurrent versions but not locked ones.
    let state = crate::eventually(
        "noncurrent versions expired",
        Duration::from_secs(60),
        || {
            let state = s3.boto(&s3.key, &STATE.replace("VAULT", name));
            async move { (state["free_versions"] == 1).then_some(state) }
        },
    )
    .await;
    eprintln!("after lifecycle: {state}");
    assert_eq!(
        state["kept_versions"], 2,
        "the locked noncurrent version stays"
    );

    // ListBuckets pages; the whole-upload checksum is compared.
    let out = s3.boto(&s3.key, PAGES_AND_CHECKSUMS);
    eprintln!("{out:#}");
    assert_eq!(out["pages"], out["all"]);
    let sizes = out["page_sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), out["all"].as_array().unwrap().len());
    assert!(sizes.iter().all(|n| *n == 1), "{sizes:?}");
    assert_eq!(out["bad_whole"], "BadDigest");
    assert_eq!(out["good_whole"], "OK");
}

const SCRIPT: &str = r#"
import datetime
s3 = client("path")
lim = client("path", akid="LIMITED_ID", secret="LIMITED_SECRET")
V = "VAULT"
out = {}
now = lambda: datetime.datetime.now(datetime.timezone.utc)
gov = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}

out["plain_get_config"] = code(lambda: s3.get_object_lock_configuration(Bucket=B))
out["plain_put_config"] = code(lambda: s3.put_object_lock_configuration(Bucket=B, ObjectLockConfiguration=gov))
s3.put_object(Bucket=B, Key="p", Body=b"p")
out["plain_retention"] = code(lambda: s3.put_object_retention(Bucket=B, Key="p",
    Retention={"Mode": "GOVERNANCE", "RetainUntilDate": now() + datetime.timedelta(hours=1)}))
out["plain_legal_hold"] = code(lambda: s3.get_object_legal_hold(Bucket=B, Key="p"))
out["plain_put_locked"] = code(lambda: s3.put_object(Bucket=B, Key="q", Body=b"q", ObjectLockLegalHoldStatus="ON"))

out["versioning"] = s3.get_bucket_versioning(Bucket=V).get("Status")
out["config_at_creation"] = s3.get_object_lock_configuration(Bucket=V)["ObjectLockConfiguration"]
out["suspend"] = code(lambda: s3.put_bucket_versioning(Bucket=V, VersioningConfiguration={"Status": "Suspended"}))
def conf(**d):
    return {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": d}}
def put_conf(c):
    return code(lambda: s3.put_object_lock_configuration(Bucket=V, ObjectLockConfiguration=c))
out["days_and_years"] = put_conf(conf(Mode="GOVERNANCE", Days=1, Years=1))
out["days_zero"] = put_conf(conf(Mode="GOVERNANCE", Days=0))
out["lowercase_mode"] = put_conf(conf(Mode="governance", Days=1))
out["disabled"] = put_conf({"ObjectLockEnabled": "Disabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}})
put_conf(gov)
out["config_set"] = gov
out["config_read_back"] = s3.get_object_lock_configuration(Bucket=V)["ObjectLockConfiguration"]

v1 = s3.put_object(Bucket=V, Key="doc", Body=b"one")["VersionId"]
h = s3.head_object(Bucket=V, Key="doc")
out["default_mode"] = h.get("ObjectLockMode")
out["default_until_hours"] = (h["ObjectLockRetainUntilDate"] - now()).total_seconds() / 3600
out["delete_locked_version"] = code(lambda: s3.delete_object(Bucket=V, Key="doc", VersionId=v1))
out["delete_makes_marker"] = s3.delete_object(Bucket=V, Key="doc").get("DeleteMarker")
out["bypass_limited_key"] = code(lambda: lim.delete_object(Bucket=V, Key="doc", VersionId=v1, BypassGovernanceRetention=True))
out["bypass_unlimited_key"] = code(lambda: s3.delete_object(Bucket=V, Key="doc", VersionId=v1, BypassGovernanceRetention=True))
s3.put_object_lock_configuration(Bucket=V, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})

def ret(mode, hours):
    return {"Mode": mode, "RetainUntilDate": (now() + datetime.timedelta(hours=hours)).replace(microsecond=0)}
def put_ret(key, r, **kw):
    return code(lambda: s3.put_object_retention(Bucket=V, Key=key, Retention=r, **kw))
g = s3.put_object(Bucket=V, Key="gov", Body=b"g", ObjectLockMode="GOVERNANCE",
    ObjectLockRetainUntilDate=now() + datetime.timedelta(hours=1))["VersionId"]
out["gov_extend"] = put_ret("gov", ret("GOVERNANCE", 3))
out["gov_shorten"] = put_ret("gov", ret("GOVERNANCE", 2))
out["gov_to_compliance"] = put_ret("gov", ret("COMPLIANCE", 3))
shorter = ret("GOVERNANCE", 2)
out["gov_shorten_bypass"] = put_ret("gov", shorter, BypassGovernanceRetention=True)
out["gov_shortened_to"] = shorter["RetainUntilDate"].isoformat()
out["gov_read_back"] = s3.get_object_retention(Bucket=V, Key="gov")["Retention"]["RetainUntilDate"].isoformat()
out["retention_bad_mode"] = put_ret("gov", ret("governance", 3))
out["retention_past"] = put_ret("gov", ret("GOVERNANCE", -1), BypassGovernanceRetention=True)

c = s3.put_object(Bucket=V, Key="comp", Body=b"c", ObjectLockMode="COMPLIANCE",
    ObjectLockRetainUntilDate=now() + datetime.timedelta(hours=1))["VersionId"]
out["comp_shorten_bypass"] = put_ret("comp", ret("COMPLIANCE", 0.5), BypassGovernanceRetention=True)
out["comp_to_governance"] = put_ret("comp", ret("GOVERNANCE", 2), BypassGovernanceRetention=True)
out["comp_extend"] = put_ret("comp", ret("COMPLIANCE", 2))
out["comp_delete_bypass"] = code(lambda: s3.delete_object(Bucket=V, Key="comp", VersionId=c, BypassGovernanceRetention=True))
r = s3.delete_objects(Bucket=V, BypassGovernanceRetention=True, Delete={"Objects": [{"Key": "comp", "VersionId": c}]})
out["comp_multi_delete"] = [[e["Code"], e["Key"]] for e in r.get("Errors", [])]

old = s3.put_object(Bucket=V, Key="multi", Body=b"1")["VersionId"]
s3.put_object(Bucket=V, Key="multi", Body=b"2")
put_ret("multi", ret("GOVERNANCE", 1), VersionId=old)
out["old_version_retention"] = s3.get_object_retention(Bucket=V, Key="multi", VersionId=old)["Retention"]["Mode"]
out["current_retention"] = code(lambda: s3.get_object_retention(Bucket=V, Key="multi"))
out["delete_old_version"] = code(lambda: s3.delete_object(Bucket=V, Key="multi", VersionId=old))

hv = s3.put_object(Bucket=V, Key="held", Body=b"h", ObjectLockLegalHoldStatus="ON")["VersionId"]
hs = [s3.head_object(Bucket=V, Key="held").get("ObjectLockLegalHoldStatus")]
hs.append(s3.get_object_legal_hold(Bucket=V, Key="held")["LegalHold"]["Status"])
out["hold_delete_bypass"] = code(lambda: s3.delete_object(Bucket=V, Key="held", VersionId=hv, BypassGovernanceRetention=True))
out["hold_bad_status"] = code(lambda: s3.put_object_legal_hold(Bucket=V, Key="held", LegalHold={"Status": "on"}))
s3.put_object_legal_hold(Bucket=V, Key="held", LegalHold={"Status": "OFF"})
hs.append(s3.get_object_legal_hold(Bucket=V, Key="held")["LegalHold"]["Status"])
out["hold_status"] = hs
out["released_delete"] = code(lambda: s3.delete_object(Bucket=V, Key="held", VersionId=hv))
up = s3.create_multipart_upload(Bucket=V, Key="mp", ObjectLockLegalHoldStatus="ON")
e = s3.upload_part(Bucket=V, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"part")["ETag"]
mv = s3.complete_multipart_upload(Bucket=V, Key="mp", UploadId=up["UploadId"],
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})["VersionId"]
out["multipart_hold"] = s3.get_object_legal_hold(Bucket=V, Key="mp", VersionId=mv)["LegalHold"]["Status"]
out["multipart_delete"] = code(lambda: s3.delete_object(Bucket=V, Key="mp", VersionId=mv))
s3.put_object_legal_hold(Bucket=V, Key="mp", VersionId=mv, LegalHold={"Status": "OFF"})
s3.copy_object(Bucket=V, Key="plain-copy", CopySource={"Bucket": V, "Key": "gov"})
s3.copy_object(Bucket=V, Key="copy", CopySource={"Bucket": V, "Key": "gov"},
    ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=now() + datetime.timedelta(hours=1))
out["copy_lock"] = [s3.head_object(Bucket=V, Key=k).get("ObjectLockMode") for k in ["plain-copy", "copy"]]

s3.put_bucket_lifecycle_configuration(Bucket=V, LifecycleConfiguration={"Rules": [
    {"ID": "old", "Status": "Enabled", "Filter": {"Prefix": "life/"},
     "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}]})
s3.put_object(Bucket=V, Key="life/kept", Body=b"1", ObjectLockMode="GOVERNANCE",
    ObjectLockRetainUntilDate=now() + datetime.timedelta(hours=1))
s3.put_object(Bucket=V, Key="life/kept", Body=b"2")
s3.put_object(Bucket=V, Key="life/free", Body=b"1")
s3.put_object(Bucket=V, Key="life/free", Body=b"2")
print(json.dumps(out, default=str))
"#;

const STATE: &str = r#"
s3 = client("path")
r = s3.list_object_versions(Bucket="VAULT", Prefix="life/")
vs = r.get("Versions", [])
print(json.dumps({"kept_versions": sum(v["Key"] == "life/kept" for v in vs),
                  "free_versions": sum(v["Key"] == "life/free" for v in vs)}))
"#;

const PAGES_AND_CHECKSUMS: &str = r#"
import base64, hashlib
s3 = client("path")
out = {"all": [b["Name"] for b in s3.list_buckets()["Buckets"]]}
pages, sizes, token = [], [], None
while True:
    kw = {"MaxBuckets": 1}
    if token:
        kw["ContinuationToken"] = token
    r = s3.list_buckets(**kw)
    pages += [b["Name"] for b in r["Buckets"]]
    sizes.append(len(r["Buckets"]))
    token = r.get("ContinuationToken")
    if not token:
        break
out["pages"], out["page_sizes"] = pages, sizes
def upload(key):
    up = s3.create_multipart_upload(Bucket=B, Key=key, ChecksumAlgorithm="SHA256")
    p = s3.upload_part(Bucket=B, Key=key, UploadId=up["UploadId"], PartNumber=1, Body=b"A" * 1024,
        ChecksumAlgorithm="SHA256")
    return up["UploadId"], p
uid, p = upload("bad")
parts = {"Parts": [{"PartNumber": 1, "ETag": p["ETag"], "ChecksumSHA256": p["ChecksumSHA256"]}]}
out["bad_whole"] = code(lambda: s3.complete_multipart_upload(Bucket=B, Key="bad", UploadId=uid,
    ChecksumSHA256=base64.b64encode(hashlib.sha256(b"x").digest()).decode(), MultipartUpload=parts))
uid, p = upload("good")
parts = {"Parts": [{"PartNumber": 1, "ETag": p["ETag"], "ChecksumSHA256": p["ChecksumSHA256"]}]}
whole = base64.b64encode(hashlib.sha256(base64.b64decode(p["ChecksumSHA256"])).digest()).decode() + "-1"
out["good_whole"] = code(lambda: s3.complete_multipart_upload(Bucket=B, Key="good", UploadId=uid,
    ChecksumSHA256=whole, MultipartUpload=parts))
print(json.dumps(out))
"#;
