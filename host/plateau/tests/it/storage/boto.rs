//! boto3 with its defaults: objects, listings, conditions, copies and a
//! multipart upload, path and virtual-host style.

use plateau_testkit::Backend;
use serde_json::json;

use super::S3;

crate::on_both_backends!(boto3_objects_listings_multipart);

const SCRIPT: &str = r#"
out = {}
for style in ["path", "virtual"]:
    s3 = client(style)
    k = f"{style}/note.txt"
    s3.put_object(Bucket=B, Key=k, Body=b"0123456789", ContentType="text/plain",
                  Metadata={"owner": "ci"}, CacheControl="max-age=60")
    got = s3.get_object(Bucket=B, Key=k)
    out[style] = {"body": got["Body"].read().decode(), "type": got["ContentType"],
                  "meta": got["Metadata"], "cache": got.get("CacheControl")}
s3 = client("path")
etag = s3.head_object(Bucket=B, Key="path/note.txt")["ETag"]
out["etag"] = etag
out["range"] = s3.get_object(Bucket=B, Key="path/note.txt", Range="bytes=2-5")["Body"].read().decode()
out["suffix"] = s3.get_object(Bucket=B, Key="path/note.txt", Range="bytes=-3")["Body"].read().decode()
out["bad_range"] = code(lambda: s3.get_object(Bucket=B, Key="path/note.txt", Range="bytes=50-60"))
out["if_none_match"] = code(lambda: s3.get_object(Bucket=B, Key="path/note.txt", IfNoneMatch=etag))
out["if_match"] = code(lambda: s3.get_object(Bucket=B, Key="path/note.txt", IfMatch='"0000"'))
out["no_key"] = code(lambda: s3.get_object(Bucket=B, Key="missing"))
out["no_key_head"] = code(lambda: s3.head_object(Bucket=B, Key="missing"))
out["bad_md5"] = code(lambda: s3.put_object(Bucket=B, Key="m", Body=b"abc", ContentMD5="AAAAAAAAAAAAAAAAAAAAAA=="))
out["bad_crc"] = code(lambda: s3.put_object(Bucket=B, Key="c", Body=b"abc", ChecksumCRC32="AAAAAA=="))
out["after_bad"] = code(lambda: s3.head_object(Bucket=B, Key="c"))
out["sha256"] = code(lambda: s3.put_object(Bucket=B, Key="s", Body=b"abc", ChecksumAlgorithm="SHA256"))
out["location"] = code(lambda: s3.get_bucket_location(Bucket=B))
out["head_bucket"] = code(lambda: s3.head_bucket(Bucket=B))
out["no_bucket"] = code(lambda: s3.list_objects_v2(Bucket=B + "x"))
out["bad_bucket_name"] = code(lambda: s3.list_objects_v2(Bucket="Bad_Name"))

# Copy, with and without new metadata.
s3.copy_object(Bucket=B, Key="copy.txt", CopySource={"Bucket": B, "Key": "path/note.txt"})
out["copy"] = s3.get_object(Bucket=B, Key="copy.txt")["Body"].read().decode()
s3.copy_object(Bucket=B, Key="copy.txt", CopySource={"Bucket": B, "Key": "copy.txt"},
               MetadataDirective="REPLACE", Metadata={"v": "2"}, ContentType="text/x")
h = s3.head_object(Bucket=B, Key="copy.txt")
out["copy_meta"] = [h["Metadata"], h["ContentType"]]

# Listing: 7 keys under list/, pages of 3, a delimiter, start-after, v1.
for i in range(5):
    s3.put_object(Bucket=B, Key=f"list/k{i}", Body=b"x")
s3.put_object(Bucket=B, Key="list/sub/a", Body=b"x")
s3.put_object(Bucket=B, Key="list/sub/b", Body=b"x")
keys, token = [], None
while True:
    args = {"Bucket": B, "Prefix": "list/", "MaxKeys": 3}
    if token:
        args["ContinuationToken"] = token
    page = s3.list_objects_v2(**args)
    keys += [o["Key"] for o in page.get("Contents", [])]
    if not page["IsTruncated"]:
        break
    token = page["NextContinuationToken"]
out["pages"] = keys
d = s3.list_objects_v2(Bucket=B, Prefix="list/", Delimiter="/")
out["delimited"] = [[o["Key"] for o in d.get("Contents", [])], [p["Prefix"] for p in d.get("CommonPrefixes", [])]]
out["start_after"] = [o["Key"] for o in s3.list_objects_v2(Bucket=B, Prefix="list/", StartAfter="list/k3")["Contents"]]
out["v1"] = [o["Key"] for o in s3.list_objects(Bucket=B, Prefix="list/sub/")["Contents"]]
paginator = s3.get_paginator("list_objects")
out["v1_pages"] = sum(len(p.get("Contents", [])) for p in paginator.paginate(Bucket=B, Prefix="list/", PaginationConfig={"PageSize": 2}))

# Delete one, then several.
s3.delete_object(Bucket=B, Key="list/k0")
r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "list/k1"}, {"Key": "list/k2"}, {"Key": "never"}]})
out["deleted"] = sorted(d["Key"] for d in r["Deleted"])
out["left"] = s3.list_objects_v2(Bucket=B, Prefix="list/k")["KeyCount"]

# Multipart: two parts of 5 MiB and a small one, listed, completed.
part = bytes(range(256)) * (5 * 1024 * 4)
up = s3.create_multipart_upload(Bucket=B, Key="mp.bin", ContentType="application/x-test")
uid = up["UploadId"]
etags = []
for n, body in enumerate([part, part[::-1], b"tail"], start=1):
    etags.append(s3.upload_part(Bucket=B, Key="mp.bin", UploadId=uid, PartNumber=n, Body=body)["ETag"])
out["uploads"] = [u["Key"] for u in s3.list_multipart_uploads(Bucket=B).get("Uploads", [])]
out["parts"] = [p["Size"] for p in s3.list_parts(Bucket=B, Key="mp.bin", UploadId=uid)["Parts"]]
out["bad_order"] = code(lambda: s3.complete_multipart_upload(Bucket=B, Key="mp.bin", UploadId=uid,
    MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": etags[1]}, {"PartNumber": 1, "ETag": etags[0]}]}))
out["bad_part"] = code(lambda: s3.complete_multipart_upload(Bucket=B, Key="mp.bin", UploadId=uid,
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"ffff"'}]}))
r = s3.complete_multipart_upload(Bucket=B, Key="mp.bin", UploadId=uid,
    MultipartUpload={"Parts": [{"PartNumber": n + 1, "ETag": e} for n, e in enumerate(etags)]})
out["mp_etag"] = r["ETag"]
got = s3.get_object(Bucket=B, Key="mp.bin")
body = got["Body"].read()
out["mp_ok"] = body == part + part[::-1] + b"tail"
out["mp_type"] = got["ContentType"]
out["mp_range"] = s3.get_object(Bucket=B, Key="mp.bin", Range=f"bytes={len(part)-2}-{len(part)+1}")["Body"].read() == (part + part[::-1])[len(part)-2:len(part)+2]
out["no_upload"] = code(lambda: s3.list_parts(Bucket=B, Key="mp.bin", UploadId=uid))
up = s3.create_multipart_upload(Bucket=B, Key="gone.bin")
s3.upload_part(Bucket=B, Key="gone.bin", UploadId=up["UploadId"], PartNumber=1, Body=b"abc")
s3.abort_multipart_upload(Bucket=B, Key="gone.bin", UploadId=up["UploadId"])
out["aborted"] = code(lambda: s3.head_object(Bucket=B, Key="gone.bin"))
print(json.dumps(out))
"#;

async fn boto3_objects_listings_multipart(backend: Backend) {
    let s3 = S3::start(backend).await;
    let out = s3.boto(&s3.key, SCRIPT);
    for style in ["path", "virtual"] {
        assert_eq!(
            out[style],
            json!({ "body": "0123456789", "type": "text/plain", "meta": { "owner": "ci" }, "cache": "max-age=60" }),
            "{style}"
        );
    }
    assert_eq!(out["etag"], "\"781e5e245d69b566979b86e28d23f2c7\"");
    assert_eq!(out["range"], "2345");
    assert_eq!(out["suffix"], "789");
    assert_eq!(out["bad_range"], "InvalidRange");
    assert_eq!(out["if_none_match"], "304");
    assert_eq!(out["if_match"], "PreconditionFailed");
    assert_eq!(out["no_key"], "NoSuchKey");
    assert_eq!(out["no_key_head"], "404");
    assert_eq!(out["bad_md5"], "BadDigest");
    assert_eq!(out["bad_crc"], "BadDigest");
    assert_eq!(out["after_bad"], "404", "a refused write leaves nothing");
    assert_eq!(out["sha256"], "OK");
    assert_eq!(out["location"], "OK");
    assert_eq!(out["head_bucket"], "OK");
    assert_eq!(out["no_bucket"], "NoSuchBucket");
    assert_eq!(out["bad_bucket_name"], "InvalidBucketName");
    assert_eq!(out["copy"], "0123456789");
    assert_eq!(out["copy_meta"], json!([{ "v": "2" }, "text/x"]));
    assert_eq!(
        out["pages"],
        json!([
            "list/k0",
            "list/k1",
            "list/k2",
            "list/k3",
            "list/k4",
            "list/sub/a",
            "list/sub/b"
        ])
    );
    assert_eq!(
        out["delimited"],
        json!([
            ["list/k0", "list/k1", "list/k2", "list/k3", "list/k4"],
            ["list/sub/"]
        ])
    );
    assert_eq!(
        out["start_after"],
        json!(["list/k4", "list/sub/a", "list/sub/b"])
    );
    assert_eq!(out["v1"], json!(["list/sub/a", "list/sub/b"]));
    assert_eq!(out["v1_pages"], 7);
    assert_eq!(out["deleted"], json!(["list/k1", "list/k2", "never"]));
    assert_eq!(out["left"], 2);
    assert_eq!(out["uploads"], json!(["mp.bin"]));
    assert_eq!(out["parts"], json!([5_242_880, 5_242_880, 4]));
    assert_eq!(out["bad_order"], "InvalidPartOrder");
    assert_eq!(out["bad_part"], "InvalidPart");
    assert!(
        out["mp_etag"].as_str().unwrap().ends_with("-3\""),
        "{}",
        out["mp_etag"]
    );
    assert_eq!(out["mp_ok"], true);
    assert_eq!(out["mp_type"], "application/x-test");
    assert_eq!(out["mp_range"], true);
    assert_eq!(out["no_upload"], "NoSuchUpload");
    assert_eq!(out["aborted"], "404");
    let usage = s3.server.client().get("/usage").await.json();
    // Nothing of the aborted upload stays counted.
    let objects = usage["storage"]["objects"].as_i64().unwrap();
    assert_eq!(objects, 2 + 1 + 1 + 2 + 2 + 1, "{usage}");
}
