//! The S3 features browsers and tools rely on beyond objects (issue 37),
//! driven by boto3 and by plain HTTP as a browser sends it: CORS (a real
//! preflight and the headers of the actual request), object and bucket
//! tagging, UploadPartCopy, GetObjectAttributes, and the canned ACLs private and public-read
//! (read without a signature, and by another organisation's key; grants
//! and the other canned ACLs are in `acl.rs`).

use plateau_testkit::Backend;
use serde_json::json;

use super::S3;

#[tokio::test]
async fn cors_tagging_part_copy_acl() {
    let s3 = S3::start(Backend::Sqlite).await;
    let other = crate::create_org(&s3.server, "Other", "pro").await;
    let other_key = super::create_key(&s3.server, &other, json!({ "name": "other" })).await;
    let mut script = SCRIPT.replace("OTHER_AKID", &other_key.access_key_id);
    script = script.replace("OTHER_SECRET", &other_key.secret);
    let out = s3.boto(&s3.key, &script);
    eprintln!("{out:#}");

    // CORS: none set, then set, read back, acted on, deleted.
    assert_eq!(out["cors_none"], "NoSuchCORSConfiguration");
    assert_eq!(out["cors_bad_method"], "InvalidRequest");
    assert_eq!(
        out["cors_rules"],
        json!([[
            ["https://app.example", "https://*.example.org"],
            ["GET", "PUT"]
        ]])
    );
    let pre = &out["preflight"];
    assert_eq!(pre["status"], 200, "{pre}");
    assert_eq!(pre["allow-origin"], "https://app.example");
    assert_eq!(pre["allow-methods"], "GET, PUT");
    assert_eq!(pre["allow-headers"], "content-type, x-amz-meta-owner");
    assert_eq!(pre["max-age"], "600");
    assert_eq!(
        out["preflight_wildcard"]["allow-origin"],
        "https://www.example.org"
    );
    for refused in [
        "preflight_other_origin",
        "preflight_delete",
        "preflight_header",
    ] {
        assert_eq!(out[refused]["status"], 403, "{refused}: {}", out[refused]);
        assert_eq!(out[refused]["allow-origin"], json!(null), "{refused}");
    }
    assert_eq!(out["preflight_no_method"]["status"], 400);
    let actual = &out["actual"];
    assert_eq!(actual["status"], 200);
    assert_eq!(actual["allow-origin"], "https://app.example");
    assert_eq!(actual["expose-headers"], "ETag");
    assert_eq!(out["actual_other"]["allow-origin"], json!(null));
    assert_eq!(out["actual_missing"]["status"], 404);
    assert_eq!(
        out["actual_missing"]["allow-origin"], "https://app.example",
        "errors carry CORS headers too"
    );
    assert_eq!(out["cors_deleted"], "NoSuchCORSConfiguration");
    assert_eq!(out["preflight_after_delete"]["status"], 403);

    // Tagging.
    assert_eq!(out["put_tags"], json!({ "project": "blue", "team": "a b" }));
    assert_eq!(out["tag_count"], 2);
    assert_eq!(out["tags_set"], json!({ "k": "v" }));
    assert_eq!(out["tags_deleted"], json!({}));
    assert_eq!(out["count_after_delete"], json!(null));
    assert_eq!(out["too_many"], "InvalidTag");
    assert_eq!(out["mp_tags"], json!({ "from": "multipart" }));
    assert_eq!(
        out["copy_tags"],
        json!({ "project": "blue", "team": "a b" })
    );
    assert_eq!(out["copy_replaced"], json!({ "new": "1" }));
    assert_eq!(out["no_key_tags"], "NoSuchKey");
    assert_eq!(out["bucket_none"], "NoSuchTagSet");
    assert_eq!(out["bucket_tags"], json!({ "cost-center": "42" }));
    assert_eq!(out["bucket_deleted"], "NoSuchTagSet");

    // UploadPartCopy: a 5 MiB range and a whole small object make one object.
    assert_eq!(out["part_copy_ok"], true);
    assert_eq!(out["part_copy_improper"], "InvalidArgument");
    assert_eq!(out["part_copy_past_end"], "InvalidRange");
    assert_eq!(
        out["attributes"],
        json!([5_242_881, 2, [[1, 5_242_880], [2, 1]], true])
    );

    // ACLs: private by default, public-read read by anyone, never written;
    // grants to groups are listed first, as RGW lists them.
    assert_eq!(
        out["acl_default"],
        json!([["CanonicalUser", "FULL_CONTROL"]])
    );
    assert_eq!(out["anon_private"], 403);
    assert_eq!(out["other_private"], "AccessDenied");
    assert_eq!(out["anon_object_public"], json!([200, "public object"]));
    assert_eq!(out["anon_object_private_sibling"], 403);
    assert_eq!(
        out["object_acl"],
        json!([["Group", "READ"], ["CanonicalUser", "FULL_CONTROL"]])
    );
    assert_eq!(
        out["bucket_acl"],
        json!([["Group", "READ"], ["CanonicalUser", "FULL_CONTROL"]])
    );
    assert_eq!(out["anon_bucket_public"], json!([200, "secret"]));
    assert_eq!(
        out["anon_list"],
        json!(["page.html", "private.txt", "public.txt"])
    );
    // A public bucket serves its objects to unsigned requests (static
    // sites); a signed request reads what the object's own ACL grants.
    assert_eq!(out["other_reads_public"], "AccessDenied");
    assert_eq!(out["anon_put"], 403);
    assert_eq!(out["other_put"], "AccessDenied");
    assert_eq!(out["anon_delete"], 403);
    assert_eq!(out["still_there"], "OK");
    // Other ACLs are taken (acl.rs tests them); a grant names an
    // organisation that exists.
    assert_eq!(out["public_read_write"], "OK");
    assert_eq!(out["grant_header"], "InvalidArgument");
    assert_eq!(out["object_rw"], "OK");
    assert_eq!(out["back_to_private"], 403);

    // Versioning and lifecycle read as never set (versioning.rs sets them).
    assert_eq!(out["versioning"], json!(null));
    assert_eq!(out["lifecycle"], "NoSuchLifecycleConfiguration");
}

const SCRIPT: &str = r#"
import urllib3
s3 = client("path")
http = urllib3.PoolManager(retries=False)
URL = os.environ["DIRECT"] + "/" + B
def call(method, path, headers):
    r = http.request(method, URL + path, headers=headers)
    h = {k.lower(): v for k, v in r.headers.items()}
    res = {"status": r.status}
    for name in ["allow-origin", "allow-methods", "allow-headers", "max-age", "expose-headers"]:
        res[name] = h.get("access-control-" + name)
    return res
def tags(key):
    return {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=B, Key=key)["TagSet"]}
out = {}

out["cors_none"] = code(lambda: s3.get_bucket_cors(Bucket=B))
out["cors_bad_method"] = code(lambda: s3.put_bucket_cors(Bucket=B, CORSConfiguration={"CORSRules": [
    {"AllowedMethods": ["PATCH"], "AllowedOrigins": ["*"]}]}))
s3.put_bucket_cors(Bucket=B, CORSConfiguration={"CORSRules": [
    {"AllowedMethods": ["GET", "PUT"], "AllowedOrigins": ["https://app.example", "https://*.example.org"],
     "AllowedHeaders": ["Content-Type", "x-amz-meta-*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 600}]})
out["cors_rules"] = [[r["AllowedOrigins"], r["AllowedMethods"]] for r in s3.get_bucket_cors(Bucket=B)["CORSRules"]]
s3.put_object(Bucket=B, Key="page.html", Body=b"<p>hi</p>")
pre = {"Origin": "https://app.example", "Access-Control-Request-Method": "PUT",
       "Access-Control-Request-Headers": "content-type, x-amz-meta-owner"}
out["preflight"] = call("OPTIONS", "/page.html", pre)
out["preflight_wildcard"] = call("OPTIONS", "/page.html", {**pre, "Origin": "https://www.example.org"})
out["preflight_other_origin"] = call("OPTIONS", "/page.html", {**pre, "Origin": "https://evil.example"})
out["preflight_delete"] = call("OPTIONS", "/page.html", {**pre, "Access-Control-Request-Method": "DELETE"})
out["preflight_header"] = call("OPTIONS", "/page.html", {**pre, "Access-Control-Request-Headers": "x-secret"})
out["preflight_no_method"] = call("OPTIONS", "/page.html", {"Origin": "https://app.example"})
url = s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "page.html"})
r = http.request("GET", url, headers={"Origin": "https://app.example"})
out["actual"] = {"status": r.status, "allow-origin": r.headers.get("access-control-allow-origin"),
                 "expose-headers": r.headers.get("access-control-expose-headers")}
r = http.request("GET", url, headers={"Origin": "https://evil.example"})
out["actual_other"] = {"allow-origin": r.headers.get("access-control-allow-origin")}
url = s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "missing"})
r = http.request("GET", url, headers={"Origin": "https://app.example"})
out["actual_missing"] = {"status": r.status, "allow-origin": r.headers.get("access-control-allow-origin")}
s3.delete_bucket_cors(Bucket=B)
out["cors_deleted"] = code(lambda: s3.get_bucket_cors(Bucket=B))
out["preflight_after_delete"] = call("OPTIONS", "/page.html", pre)

s3.put_object(Bucket=B, Key="t.txt", Body=b"x", Tagging="project=blue&team=a+b")
out["put_tags"] = tags("t.txt")
out["tag_count"] = s3.get_object(Bucket=B, Key="t.txt").get("TagCount")
s3.put_object(Bucket=B, Key="u.txt", Body=b"x")
s3.put_object_tagging(Bucket=B, Key="u.txt", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
out["tags_set"] = tags("u.txt")
s3.delete_object_tagging(Bucket=B, Key="u.txt")
out["tags_deleted"] = tags("u.txt")
out["count_after_delete"] = s3.get_object(Bucket=B, Key="u.txt").get("TagCount")
out["too_many"] = code(lambda: s3.put_object_tagging(Bucket=B, Key="u.txt",
    Tagging={"TagSet": [{"Key": f"k{i}", "Value": "v"} for i in range(11)]}))
up = s3.create_multipart_upload(Bucket=B, Key="mp.bin", Tagging="from=multipart")
e = s3.upload_part(Bucket=B, Key="mp.bin", UploadId=up["UploadId"], PartNumber=1, Body=b"abc")["ETag"]
s3.complete_multipart_upload(Bucket=B, Key="mp.bin", UploadId=up["UploadId"],
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
out["mp_tags"] = tags("mp.bin")
s3.copy_object(Bucket=B, Key="c1.txt", CopySource={"Bucket": B, "Key": "t.txt"})
out["copy_tags"] = tags("c1.txt")
s3.copy_object(Bucket=B, Key="c2.txt", CopySource={"Bucket": B, "Key": "t.txt"},
    TaggingDirective="REPLACE", Tagging="new=1")
out["copy_replaced"] = tags("c2.txt")
out["no_key_tags"] = code(lambda: s3.get_object_tagging(Bucket=B, Key="missing"))
out["bucket_none"] = code(lambda: s3.get_bucket_tagging(Bucket=B))
s3.put_bucket_tagging(Bucket=B, Tagging={"TagSet": [{"Key": "cost-center", "Value": "42"}]})
out["bucket_tags"] = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=B)["TagSet"]}
s3.delete_bucket_tagging(Bucket=B)
out["bucket_deleted"] = code(lambda: s3.get_bucket_tagging(Bucket=B))

big = bytes(range(256)) * (4 * 8192)  # 8 MiB
s3.put_object(Bucket=B, Key="big.bin", Body=big)
up = s3.create_multipart_upload(Bucket=B, Key="joined.bin")
uid = up["UploadId"]
src = {"Bucket": B, "Key": "big.bin"}
p1 = s3.upload_part_copy(Bucket=B, Key="joined.bin", UploadId=uid, PartNumber=1, CopySource=src,
                         CopySourceRange="bytes=1024-5243903")["CopyPartResult"]["ETag"]
p2 = s3.upload_part_copy(Bucket=B, Key="joined.bin", UploadId=uid, PartNumber=2,
                         CopySource={"Bucket": B, "Key": "t.txt"})["CopyPartResult"]["ETag"]
out["part_copy_improper"] = code(lambda: s3.upload_part_copy(Bucket=B, Key="joined.bin", UploadId=uid,
    PartNumber=3, CopySource=src, CopySourceRange="0-10"))
out["part_copy_past_end"] = code(lambda: s3.upload_part_copy(Bucket=B, Key="joined.bin", UploadId=uid,
    PartNumber=3, CopySource=src, CopySourceRange=f"bytes=0-{len(big)}"))
s3.complete_multipart_upload(Bucket=B, Key="joined.bin", UploadId=uid,
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1}, {"PartNumber": 2, "ETag": p2}]})
out["part_copy_ok"] = s3.get_object(Bucket=B, Key="joined.bin")["Body"].read() == big[1024:5243904] + b"x"
a = s3.get_object_attributes(Bucket=B, Key="joined.bin", ObjectAttributes=["ObjectSize", "ObjectParts", "ETag"])
out["attributes"] = [a["ObjectSize"], a["ObjectParts"]["TotalPartsCount"],
                     [[p["PartNumber"], p["Size"]] for p in a["ObjectParts"]["Parts"]], a["ETag"].strip('"').endswith("-2")]

def grants(r):
    return [[g["Grantee"]["Type"], g["Permission"]] for g in r["Grants"]]
def anon(method, key, body=None):
    r = http.request(method, URL + "/" + key, body=body)
    return r.status, r.data.decode(errors="replace")
other = client("path", akid="OTHER_AKID", secret="OTHER_SECRET")
s3.put_object(Bucket=B, Key="private.txt", Body=b"secret")
s3.put_object(Bucket=B, Key="public.txt", Body=b"public object", ACL="public-read")
out["acl_default"] = grants(s3.get_bucket_acl(Bucket=B))
out["anon_private"] = anon("GET", "private.txt")[0]
out["other_private"] = code(lambda: other.get_object(Bucket=B, Key="private.txt"))
out["anon_object_public"] = list(anon("GET", "public.txt"))
out["anon_object_private_sibling"] = anon("HEAD", "private.txt")[0]
out["object_acl"] = grants(s3.get_object_acl(Bucket=B, Key="public.txt"))
s3.put_bucket_acl(Bucket=B, ACL="public-read")
out["bucket_acl"] = grants(s3.get_bucket_acl(Bucket=B))
out["anon_bucket_public"] = list(anon("GET", "private.txt"))
unsigned = boto3.client("s3", endpoint_url=os.environ["DIRECT"], region_name="ap-south-1",
    config=Config(signature_version=botocore.UNSIGNED, s3={"addressing_style": "path"}))
out["anon_list"] = [o["Key"] for o in unsigned.list_objects_v2(Bucket=B, Prefix="p")["Contents"]]
out["other_reads_public"] = code(lambda: other.get_object(Bucket=B, Key="private.txt"))
out["anon_put"] = anon("PUT", "new.txt", b"x")[0]
out["other_put"] = code(lambda: other.put_object(Bucket=B, Key="new.txt", Body=b"x"))
out["anon_delete"] = anon("DELETE", "private.txt")[0]
out["still_there"] = code(lambda: s3.head_object(Bucket=B, Key="private.txt"))
out["public_read_write"] = code(lambda: s3.put_bucket_acl(Bucket=B, ACL="public-read-write"))
out["grant_header"] = code(lambda: s3.put_bucket_acl(Bucket=B, GrantRead="id=someone"))
out["object_rw"] = code(lambda: s3.put_object(Bucket=B, Key="rw.txt", Body=b"x", ACL="public-read-write"))
s3.put_bucket_acl(Bucket=B, ACL="private")
out["versioning"] = s3.get_bucket_versioning(Bucket=B).get("Status")
out["lifecycle"] = code(lambda: s3.get_bucket_lifecycle_configuration(Bucket=B))
out["back_to_private"] = anon("GET", "private.txt")[0]
print(json.dumps(out))
"#;
