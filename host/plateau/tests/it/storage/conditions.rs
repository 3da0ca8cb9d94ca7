//! Conditional writes and deletes, driven by boto3: `If-Match` and
//! `If-None-Match` (`*` or an entity tag) on PutObject and
//! CompleteMultipartUpload, and DeleteObject and DeleteObjects entries
//! conditional on the entity tag, size and modification time of the
//! version they delete (a delete marker included).

use plateau_testkit::Backend;
use serde_json::json;

use super::S3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_writes_refuse_what_they_would_overwrite() {
    let s3 = S3::start(Backend::Sqlite).await;
    let out = s3.boto(
        &s3.key,
        r#"
s3 = client()
out = {}
out["create"] = code(lambda: s3.put_object(Bucket=B, Key="lock", Body=b"one", IfNoneMatch="*"))
out["again"] = code(lambda: s3.put_object(Bucket=B, Key="lock", Body=b"two", IfNoneMatch="*"))
etag = s3.head_object(Bucket=B, Key="lock")["ETag"]
out["stale"] = code(lambda: s3.put_object(Bucket=B, Key="lock", Body=b"three", IfMatch='"0123"'))
out["swap"] = code(lambda: s3.put_object(Bucket=B, Key="lock", Body=b"four", IfMatch=etag))
out["missing"] = code(lambda: s3.put_object(Bucket=B, Key="nothing", Body=b"x", IfMatch=etag))
up = s3.create_multipart_upload(Bucket=B, Key="lock")
e = s3.upload_part(Bucket=B, Key="lock", UploadId=up["UploadId"], PartNumber=1, Body=b"five")["ETag"]
parts = {"Parts": [{"PartNumber": 1, "ETag": e}]}
out["complete"] = code(lambda: s3.complete_multipart_upload(Bucket=B, Key="lock", UploadId=up["UploadId"],
                                                            MultipartUpload=parts, IfNoneMatch="*"))
out["body"] = s3.get_object(Bucket=B, Key="lock")["Body"].read().decode()
# If-None-Match with an entity tag refuses only that tag; conditional deletes
# check each condition (ETag, size, modification) and leave the object on failure.
import datetime
etag = s3.head_object(Bucket=B, Key="lock")["ETag"]
out["none_match_same"] = code(lambda: s3.put_object(Bucket=B, Key="lock", Body=b"six", IfNoneMatch=etag))
out["none_match_other"] = code(lambda: s3.put_object(Bucket=B, Key="lock", Body=b"four", IfNoneMatch='"0123"'))
out["delete_refused"] = [code(lambda: s3.delete_object(Bucket=B, Key="lock", **c)) for c in [
    {"IfMatch": '"0123"'}, {"IfMatchSize": 99}, {"IfMatchLastModifiedTime": datetime.datetime(2015, 1, 1)}]]
modified = s3.head_object(Bucket=B, Key="lock")["LastModified"]
out["delete_if_match"] = code(lambda: s3.delete_object(Bucket=B, Key="lock", IfMatch=etag, IfMatchSize=4,
                                                       IfMatchLastModifiedTime=modified))
out["deleted"] = code(lambda: s3.head_object(Bucket=B, Key="lock"))
out["delete_missing"] = code(lambda: s3.delete_object(Bucket=B, Key="lock", IfMatch='"0123"'))
for k in ["a", "b"]:
    s3.put_object(Bucket=B, Key=k, Body=b"x")
r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "a", "ETag": '"0123"'}, {"Key": "b", "Size": 1}]})
out["batch"] = [[(e["Key"], e["Code"]) for e in r.get("Errors", [])], [d["Key"] for d in r.get("Deleted", [])]]
print(json.dumps(out))
"#,
    );
    assert_eq!(
        out,
        json!({ "create": "OK", "again": "PreconditionFailed", "stale": "PreconditionFailed",
                "swap": "OK", "missing": "NoSuchKey", "complete": "PreconditionFailed", "body": "four",
                "none_match_same": "PreconditionFailed", "none_match_other": "OK",
                "delete_refused": ["PreconditionFailed", "PreconditionFailed", "PreconditionFailed"],
                "delete_if_match": "OK",
                "deleted": "404", "delete_missing": "OK",
                "batch": [[["a", "PreconditionFailed"]], ["b"]] })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_deletes_see_versions_and_delete_markers() {
    let s3 = S3::start(Backend::Sqlite).await;
    let out = s3.boto(
        &s3.key,
        r#"
s3 = client()
s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled"})
out = {}
out["nothing_to_delete"] = code(lambda: s3.delete_object(Bucket=B, Key="k", IfMatch='"0123"'))
v1 = s3.put_object(Bucket=B, Key="k", Body=b"one")
v2 = s3.put_object(Bucket=B, Key="k", Body=b"two")
out["old_version_stale"] = code(lambda: s3.delete_object(Bucket=B, Key="k", VersionId=v1["VersionId"],
                                                          IfMatch=v2["ETag"]))
out["old_version"] = code(lambda: s3.delete_object(Bucket=B, Key="k", VersionId=v1["VersionId"],
                                                    IfMatch=v1["ETag"]))
r = s3.delete_object(Bucket=B, Key="k", IfMatch=v2["ETag"])
out["marker_made"] = r.get("DeleteMarker")
out["marker_stale"] = code(lambda: s3.delete_object(Bucket=B, Key="k", IfMatch=v2["ETag"]))
out["marker_any"] = code(lambda: s3.delete_object(Bucket=B, Key="k", IfMatch="*"))
out["versions"] = len(s3.list_object_versions(Bucket=B).get("Versions", []))
print(json.dumps(out))
"#,
    );
    assert_eq!(
        out,
        json!({ "nothing_to_delete": "OK", "old_version_stale": "PreconditionFailed",
                "old_version": "OK", "marker_made": true, "marker_stale": "PreconditionFailed",
                "marker_any": "OK", "versions": 1 })
    );
}
