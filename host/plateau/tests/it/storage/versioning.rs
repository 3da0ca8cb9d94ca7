//! S3 versioning driven by boto3 (issue 37): enabling and suspending,
//! versions and delete markers, GET/HEAD/DELETE and CopySource by
//! `versionId`, ListObjectVersions with its markers, the null version of a
//! suspended bucket, noncurrent versions counted in the bucket's usage, and
//! a bucket with versions left refused deletion.

use plateau_testkit::{Backend, Client};
use serde_json::json;

use super::S3;

#[tokio::test]
async fn versions_delete_markers_and_the_null_version() {
    let s3 = S3::start(Backend::Sqlite).await;
    let versioned = super::create_bucket(&s3.server, &s3.server.token, "versioned").await;
    let name = versioned["bucket"].as_str().unwrap();
    let out = s3.boto(&s3.key, &SCRIPT.replace("VERSIONED", name));
    eprintln!("{out:#}");

    // An unversioned bucket: no version ids, one object per key.
    assert_eq!(out["plain_version"], json!(null));
    assert_eq!(out["suspend_never_versioned"], "Suspended");
    assert_eq!(out["status"], json!([null, "Enabled", "Suspended"]));
    assert_eq!(out["bad_status"], "MalformedXML");

    // Versions: each write its own id, each readable by it.
    let ids = out["ids"].as_array().unwrap();
    assert_eq!(ids.len(), 3);
    assert!(
        ids[1..]
            .iter()
            .all(|v| v.as_str().is_some_and(|s| s != "null"))
    );
    assert_eq!(ids[0], "null", "written before versioning was enabled");
    assert_eq!(out["bodies"], json!(["null-body", "one", "two"]));
    assert_eq!(out["head_size"], 3);
    assert_eq!(out["current"], "two");
    assert_eq!(out["no_such_version"], "NoSuchVersion");
    assert_eq!(
        out["listed"],
        json!([
            ["doc", "two", true],
            ["doc", "one", false],
            ["doc", "null", false]
        ])
    );

    // A delete makes a delete marker; the versions stay readable.
    assert_eq!(out["delete"]["marker"], true);
    assert_eq!(out["after_delete"], "NoSuchKey");
    assert_eq!(out["head_marker_header"], "true");
    assert_eq!(out["read_marker"], 405);
    assert_eq!(out["old_after_delete"], "one");
    assert_eq!(out["markers"], json!([["doc", true]]));
    // Deleting the marker brings the newest version back.
    assert_eq!(out["marker_deleted"], true);
    assert_eq!(out["after_undelete"], "two");
    // Deleting the current version for good makes the previous current.
    assert_eq!(out["after_version_delete"], "one");
    assert_eq!(out["copied"], "null-body");
    assert_eq!(out["copy_source_version"], out["ids"][0]);

    // Pages of one version each walk every version once.
    assert_eq!(out["pages"], out["all"]);
    assert!(out["pages"].as_array().unwrap().len() >= 4);
    assert_eq!(out["prefixes"], json!(["dir/"]));
    assert_eq!(out["multipart_version"], true);
    assert_eq!(out["multi_delete"], json!([[true, true], [false, true]]));

    // Suspended: writes are the null version, replaced in place.
    assert_eq!(out["suspended_put"], "null");
    assert_eq!(
        out["suspended_versions"],
        json!([["s", "null", "second", true], ["s", "v", "kept", false]])
    );
    assert_eq!(out["suspended_delete"], json!([true, "null"]));
    assert_eq!(
        out["suspended_after"],
        json!([["s", "null", true, true], ["s", "v", false, false]])
    );

    // Tags of a noncurrent version are refused, not applied to the current.
    assert_eq!(out["tag_old_version"], "NotImplemented");

    // Every version's bytes count in the bucket's usage.
    let c = Client::new(&s3.server.url).with_token(&s3.server.token);
    let id = versioned["id"].as_str().unwrap();
    let bucket = c.get(&format!("/storage/buckets/{id}")).await.json();
    eprintln!("usage with versions: {bucket}");
    assert_eq!(bucket["usage"]["bytes"], out["stored_bytes"], "{bucket}");

    // A bucket holding versions (or delete markers) is not empty.
    let out = s3.boto(&s3.key, &EMPTY.replace("VERSIONED", name));
    assert_eq!(out["with_versions"], "BucketNotEmpty");
    assert_eq!(out["emptied"], "OK");
}

const SCRIPT: &str = r#"
s3 = client("path")
out = {}
def body(key, v=None):
    args = {"VersionId": v} if v else {}
    return s3.get_object(Bucket=V, Key=key, **args)["Body"].read().decode()
def versions(bucket, **kw):
    r = s3.list_object_versions(Bucket=bucket, **kw)
    return r.get("Versions", []), r.get("DeleteMarkers", []), r

out["plain_version"] = s3.put_object(Bucket=B, Key="plain", Body=b"x").get("VersionId")
s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Suspended"})
out["suspend_never_versioned"] = s3.get_bucket_versioning(Bucket=B).get("Status")

V = "VERSIONED"
status = [s3.get_bucket_versioning(Bucket=V).get("Status")]
s3.put_object(Bucket=V, Key="doc", Body=b"null-body")
out["bad_status"] = code(lambda: s3.put_bucket_versioning(Bucket=V, VersioningConfiguration={"Status": "On"}))
s3.put_bucket_versioning(Bucket=V, VersioningConfiguration={"Status": "Enabled"})
status.append(s3.get_bucket_versioning(Bucket=V).get("Status"))
ids = ["null"]
for text in ["one", "two"]:
    ids.append(s3.put_object(Bucket=V, Key="doc", Body=text.encode())["VersionId"])
out["ids"] = ids
out["bodies"] = [body("doc", v) for v in ids]
out["head_size"] = s3.head_object(Bucket=V, Key="doc", VersionId=ids[1])["ContentLength"]
out["current"] = body("doc")
out["no_such_version"] = code(lambda: s3.get_object(Bucket=V, Key="doc", VersionId="v_missing"))
vs, _, _ = versions(V)
names = {v: b for v, b in zip(ids, ["null", "one", "two"])}
out["listed"] = [[v["Key"], names[v["VersionId"]], v["IsLatest"]] for v in vs]

d = s3.delete_object(Bucket=V, Key="doc")
out["delete"] = {"marker": d.get("DeleteMarker"), "version": d.get("VersionId")}
out["after_delete"] = code(lambda: s3.get_object(Bucket=V, Key="doc"))
try:
    s3.head_object(Bucket=V, Key="doc")
except botocore.exceptions.ClientError as e:
    out["head_marker_header"] = e.response["ResponseMetadata"]["HTTPHeaders"].get("x-amz-delete-marker")
try:
    s3.get_object(Bucket=V, Key="doc", VersionId=d["VersionId"])
    out["read_marker"] = 200
except botocore.exceptions.ClientError as e:
    out["read_marker"] = e.response["ResponseMetadata"]["HTTPStatusCode"]
out["old_after_delete"] = body("doc", ids[1])
_, ms, _ = versions(V)
out["markers"] = [[m["Key"], m["IsLatest"]] for m in ms]
out["marker_deleted"] = s3.delete_object(Bucket=V, Key="doc", VersionId=d["VersionId"]).get("DeleteMarker")
out["after_undelete"] = body("doc")
s3.delete_object(Bucket=V, Key="doc", VersionId=ids[2])
out["after_version_delete"] = body("doc")
c = s3.copy_object(Bucket=V, Key="copy", CopySource={"Bucket": V, "Key": "doc", "VersionId": "null"})
out["copied"] = body("copy")
out["copy_source_version"] = c.get("CopySourceVersionId")
out["tag_old_version"] = code(lambda: s3.put_object_tagging(Bucket=V, Key="doc", VersionId="null",
    Tagging={"TagSet": [{"Key": "k", "Value": "v"}]}))

for i in range(2):
    s3.put_object(Bucket=V, Key="dir/a", Body=b"d%d" % i)
up = s3.create_multipart_upload(Bucket=V, Key="mp")
e = s3.upload_part(Bucket=V, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"part")["ETag"]
done = s3.complete_multipart_upload(Bucket=V, Key="mp", UploadId=up["UploadId"],
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
out["multipart_version"] = bool(done.get("VersionId")) and done["VersionId"] != "null"
vs, ms, _ = versions(V)
out["all"] = [[v["Key"], v["VersionId"]] for v in sorted(vs + ms, key=lambda v: v["Key"])]
pages, km, vm = [], None, None
while True:
    kw = {"MaxKeys": 1}
    if km is not None:
        kw["KeyMarker"] = km
        kw["VersionIdMarker"] = vm
    vs, ms, r = versions(V, **kw)
    pages += [[v["Key"], v["VersionId"]] for v in vs + ms]
    if not r["IsTruncated"]:
        break
    km, vm = r["NextKeyMarker"], r.get("NextVersionIdMarker", "")
out["pages"] = sorted(pages, key=lambda v: v[0])
out["all"] = sorted(out["all"], key=lambda v: v[0])
r = s3.list_object_versions(Bucket=V, Delimiter="/")
out["prefixes"] = [p["Prefix"] for p in r.get("CommonPrefixes", [])]
s3.put_object(Bucket=V, Key="m1", Body=b"1")
s3.put_object(Bucket=V, Key="m2", Body=b"2")
m2 = s3.list_object_versions(Bucket=V, Prefix="m2")["Versions"][0]["VersionId"]
r = s3.delete_objects(Bucket=V, Delete={"Objects": [{"Key": "m1"}, {"Key": "m2", "VersionId": m2}]})
got = sorted(r["Deleted"], key=lambda d: d["Key"])
out["multi_delete"] = [[bool(got[0].get("DeleteMarker")), bool(got[0].get("DeleteMarkerVersionId"))],
                       [bool(got[1].get("DeleteMarker")), got[1].get("VersionId") == m2]]

s3.put_object(Bucket=V, Key="s", Body=b"kept")
kept = s3.list_object_versions(Bucket=V, Prefix="s")["Versions"][0]["VersionId"]
s3.put_bucket_versioning(Bucket=V, VersioningConfiguration={"Status": "Suspended"})
status.append(s3.get_bucket_versioning(Bucket=V).get("Status"))
out["status"] = status
out["suspended_put"] = s3.put_object(Bucket=V, Key="s", Body=b"first").get("VersionId")
s3.put_object(Bucket=V, Key="s", Body=b"second")
vs, _, _ = versions(V, Prefix="s")
out["suspended_versions"] = [[v["Key"], "null" if v["VersionId"] == "null" else "v",
    body("s", v["VersionId"]), v["IsLatest"]] for v in vs]
d = s3.delete_object(Bucket=V, Key="s")
out["suspended_delete"] = [d.get("DeleteMarker"), d.get("VersionId")]
vs, ms, _ = versions(V, Prefix="s")
out["suspended_after"] = sorted([[x["Key"], "null" if x["VersionId"] == "null" else "v", x in ms, x["IsLatest"]]
    for x in vs + ms], key=lambda x: x[1])

vs, ms, _ = versions(V)
out["stored_bytes"] = sum(v["Size"] for v in vs)
print(json.dumps(out))
"#;

const EMPTY: &str = r#"
s3 = client("path")
V = "VERSIONED"
out = {"with_versions": code(lambda: s3.delete_bucket(Bucket=V))}
r = s3.list_object_versions(Bucket=V)
for x in r.get("Versions", []) + r.get("DeleteMarkers", []):
    s3.delete_object(Bucket=V, Key=x["Key"], VersionId=x["VersionId"])
out["emptied"] = code(lambda: s3.delete_bucket(Bucket=V))
print(json.dumps(out))
"#;
