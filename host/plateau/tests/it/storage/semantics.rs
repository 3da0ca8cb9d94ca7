//! The S3 behaviour real tools rely on, one test each, driven by boto3
//! (and by hand-signed requests where boto3 cannot send what another
//! client does): encoded listings, SSE-C and SSE-S3,
//! partNumber reads, repeated completions, stored checksums, a 304's
//! entity tag, SigV4 with `Date`, and aws-chunked bodies.

use std::path::Path;

use plateau_testkit::Backend;
use serde_json::json;

use super::S3;

/// A hand-rolled SigV4 signer for what boto3 never sends: `sign(method,
/// key, headers, body, use_date)` returns the response (status, headers,
/// body) of the signed request on the path-style endpoint.
const SIGNER: &str = r#"
import datetime, hashlib, hmac, urllib.parse, urllib.request
def _h(k, m):
    return hmac.new(k, m.encode(), hashlib.sha256).digest()
def send(method, key, headers, body=b"", payload=None, use_date=False):
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    host = os.environ["DIRECT"].split("://")[1]
    path = "/" + B + "/" + urllib.parse.quote(key, safe="/~")
    h = {k.lower(): v for k, v in headers.items()}
    h["host"] = host
    h["x-amz-content-sha256"] = payload or hashlib.sha256(body).hexdigest()
    if use_date:
        h["date"] = now.strftime("%a, %d %b %Y %H:%M:%S GMT")
    else:
        h["x-amz-date"] = stamp
    names = sorted(h)
    canonical = "\n".join([method, path, "", "".join(f"{n}:{h[n].strip()}\n" for n in names),
                           ";".join(names), h["x-amz-content-sha256"]])
    scope = f"{day}/us-east-1/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = _h(_h(_h(_h(("AWS4" + os.environ["SECRET"]).encode(), day), "us-east-1"), "s3"), "aws4_request")
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    h["authorization"] = (f"AWS4-HMAC-SHA256 Credential={os.environ['AKID']}/{scope}, "
                          f"SignedHeaders={';'.join(names)}, Signature={sig}")
    req = urllib.request.Request(os.environ["DIRECT"] + path, data=body if method == "PUT" else None,
                                 method=method, headers=h)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()
"#;

/// Every file under `dir` whose bytes contain `needle`.
pub(super) fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_keys_with_plus_space_percent_and_unicode_read_back() {
    let s3 = S3::start(Backend::Sqlite).await;
    let out = s3.boto(
        &s3.key,
        r#"
s3 = client()
keys = ["a+b c", "100%/x y", "ünï/cödé+1", "q?&=#", "tab\there"]
for k in keys:
    s3.put_object(Bucket=B, Key=k, Body=k.encode())
listed = [o["Key"] for o in s3.list_objects_v2(Bucket=B)["Contents"]]
v1 = [o["Key"] for o in s3.list_objects(Bucket=B)["Contents"]]
prefixes = [p["Prefix"] for p in s3.list_objects_v2(Bucket=B, Delimiter="/").get("CommonPrefixes", [])]
bodies = [s3.get_object(Bucket=B, Key=k)["Body"].read().decode() for k in listed]
for k in listed:
    s3.delete_object(Bucket=B, Key=k)
print(json.dumps({"listed": sorted(listed), "v1": sorted(v1), "keys": sorted(keys), "prefixes": prefixes,
                  "bodies": sorted(bodies), "left": s3.list_objects_v2(Bucket=B)["KeyCount"]}))
"#,
    );
    assert_eq!(out["listed"], out["keys"], "{out}");
    assert_eq!(out["v1"], out["keys"], "{out}");
    assert_eq!(out["bodies"], out["keys"], "{out}");
    assert_eq!(out["prefixes"], json!(["100%/", "ünï/"]));
    assert_eq!(out["left"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_c_and_sse_s3_objects_are_stored_encrypted() {
    let s3 = S3::start(Backend::Sqlite).await;
    let out = s3.boto(
        &s3.key,
        r#"
s3 = client()
out = {}
key, other = "k" * 32, "o" * 32
c = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
body = b"PLAINTEXT-MARKER-" * 1000
r = s3.put_object(Bucket=B, Key="c", Body=body, **c)
out["put_algo"] = r.get("SSECustomerAlgorithm")
out["get"] = s3.get_object(Bucket=B, Key="c", **c)["Body"].read() == body
out["range"] = s3.get_object(Bucket=B, Key="c", Range="bytes=5-40", **c)["Body"].read() == body[5:41]
out["no_key"] = code(lambda: s3.get_object(Bucket=B, Key="c"))
out["head_no_key"] = code(lambda: s3.head_object(Bucket=B, Key="c"))
out["wrong_key"] = code(lambda: s3.get_object(Bucket=B, Key="c", SSECustomerAlgorithm="AES256", SSECustomerKey=other))
out["bad_md5"] = code(lambda: s3.put_object(Bucket=B, Key="d", Body=b"x", SSECustomerAlgorithm="AES256",
    SSECustomerKey=key, SSECustomerKeyMD5="AAAAAAAAAAAAAAAAAAAAAA=="))
part = b"PLAINTEXT-MARKER-" * (320 * 1024)
up = s3.create_multipart_upload(Bucket=B, Key="mp", **c)
es = [s3.upload_part(Bucket=B, Key="mp", UploadId=up["UploadId"], PartNumber=n, Body=b, **c)["ETag"]
      for n, b in [(1, part), (3, b"tail-of-it")]]
out["part_wrong_key"] = code(lambda: s3.upload_part(Bucket=B, Key="mp", UploadId=up["UploadId"], PartNumber=2,
    Body=b"x", SSECustomerAlgorithm="AES256", SSECustomerKey=other))
s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up["UploadId"],
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": es[0]}, {"PartNumber": 3, "ETag": es[1]}]}, **c)
whole = part + b"tail-of-it"
out["mp"] = s3.get_object(Bucket=B, Key="mp", **c)["Body"].read() == whole
out["mp_span"] = s3.get_object(Bucket=B, Key="mp", Range=f"bytes={len(part)-3}-{len(part)+4}", **c)["Body"].read() == whole[len(part)-3:len(part)+5]
r = s3.put_object(Bucket=B, Key="s", Body=body, ServerSideEncryption="AES256")
out["s3_put"] = r.get("ServerSideEncryption")
g = s3.get_object(Bucket=B, Key="s")
out["s3_get"] = [g.get("ServerSideEncryption"), g["Body"].read() == body]
out["s3_etag"] = g["ETag"] == '"' + hashlib.md5(body).hexdigest() + '"'
s3.copy_object(Bucket=B, Key="copied", CopySource={"Bucket": B, "Key": "c"},
               CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=key)
out["copy_plain"] = s3.get_object(Bucket=B, Key="copied")["Body"].read() == body
out["unknown"] = code(lambda: s3.put_object(Bucket=B, Key="k", Body=b"x", ServerSideEncryption="aes:kms"))
print(json.dumps(out))
"#
        .replace("out = {}", "import hashlib\nout = {}")
        .as_str(),
    );
    assert_eq!(
        out,
        json!({ "put_algo": "AES256", "get": true, "range": true, "no_key": "InvalidRequest",
                "head_no_key": "400", "wrong_key": "InvalidRequest", "bad_md5": "InvalidArgument",
                "part_wrong_key": "InvalidRequest", "mp": true, "mp_span": true, "s3_put": "AES256",
                "s3_get": ["AES256", true], "s3_etag": true, "copy_plain": true, "unknown": "InvalidArgument" })
    );
    // The only plaintext at rest is the copy made without encryption.
    let store = s3.server.data_dir.path().join("storage");
    let plain = files_containing(&store, b"PLAINTEXT-MARKER-");
    eprintln!("files holding the plaintext: {plain:?}");
    assert_eq!(plain.len(), 1, "{plain:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn part_number_reads_one_part() {
    let s3 = S3::start(Backend::Sqlite).await;
    let out = s3.boto(
        &s3.key,
        r#"
s3 = client()
a, b = b"a" * (5 * 1024 * 1024), b"bbb"
up = s3.create_multipart_upload(Bucket=B, Key="mp")
es = [s3.upload_part(Bucket=B, Key="mp", UploadId=up["UploadId"], PartNumber=n, Body=x)["ETag"] for n, x in [(1, a), (2, b)]]
s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up["UploadId"],
    MultipartUpload={"Parts": [{"PartNumber": n + 1, "ETag": e} for n, e in enumerate(es)]})
g1 = s3.get_object(Bucket=B, Key="mp", PartNumber=1)
g2 = s3.get_object(Bucket=B, Key="mp", PartNumber=2)
h2 = s3.head_object(Bucket=B, Key="mp", PartNumber=2)
s3.put_object(Bucket=B, Key="one", Body=b"single")
print(json.dumps({"p1": g1["Body"].read() == a, "count": g1.get("PartsCount"), "p2": g2["Body"].read().decode(),
    "h2": h2["ContentLength"], "p3": code(lambda: s3.get_object(Bucket=B, Key="mp", PartNumber=3)),
    "single": s3.get_object(Bucket=B, Key="one", PartNumber=1)["Body"].read().decode()}))
"#,
    );
    assert_eq!(
        out,
        json!({ "p1": true, "count": 2, "p2": "bbb", "h2": 3, "p3": "InvalidPartNumber", "single": "single" })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_completion_answers_with_the_object() {
    let s3 = S3::start(Backend::Sqlite).await;
    let out = s3.boto(
        &s3.key,
        r#"
s3 = client()
up = s3.create_multipart_upload(Bucket=B, Key="mp")
e = s3.upload_part(Bucket=B, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"abc")["ETag"]
parts = {"Parts": [{"PartNumber": 1, "ETag": e}]}
first = s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up["UploadId"], MultipartUpload=parts)["ETag"]
second = s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up["UploadId"], MultipartUpload=parts)["ETag"]
s3.put_object(Bucket=B, Key="mp", Body=b"replaced")
third = code(lambda: s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up["UploadId"], MultipartUpload=parts))
print(json.dumps({"same": first == second, "after_replace": third}))
"#,
    );
    assert_eq!(
        out,
        json!({ "same": true, "after_replace": "NoSuchUpload" })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checksums_are_stored_and_returned() {
    let s3 = S3::start(Backend::Sqlite).await;
    let out = s3.boto(
        &s3.key,
        r#"
import base64, hashlib, zlib
s3 = client()
body = b"checksummed"
s3.put_object(Bucket=B, Key="s", Body=body, ChecksumAlgorithm="SHA256")
h = s3.head_object(Bucket=B, Key="s", ChecksumMode="ENABLED")
g = s3.get_object(Bucket=B, Key="s", ChecksumMode="ENABLED")
crc = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
s3.put_object(Bucket=B, Key="c", Body=body, ChecksumCRC32=crc)
up = s3.create_multipart_upload(Bucket=B, Key="mp", ChecksumAlgorithm="SHA256")
p = s3.upload_part(Bucket=B, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=body, ChecksumAlgorithm="SHA256")
s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up["UploadId"],
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"], "ChecksumSHA256": p["ChecksumSHA256"]}]})
up2 = s3.create_multipart_upload(Bucket=B, Key="mp2", ChecksumAlgorithm="SHA256")
p2 = s3.upload_part(Bucket=B, Key="mp2", UploadId=up2["UploadId"], PartNumber=1, Body=body, ChecksumAlgorithm="SHA256")
wrong = base64.b64encode(hashlib.sha256(b"other").digest()).decode()
bad_part = code(lambda: s3.complete_multipart_upload(Bucket=B, Key="mp2", UploadId=up2["UploadId"],
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p2["ETag"], "ChecksumSHA256": wrong}]}))
part_sum = hashlib.sha256(body).digest()
composite = base64.b64encode(hashlib.sha256(part_sum).digest()).decode() + "-1"
print(json.dumps({
    "sha256": base64.b64encode(hashlib.sha256(body).digest()).decode(),
    "head": h.get("ChecksumSHA256"), "get": g.get("ChecksumSHA256"),
    "crc32": [crc, s3.head_object(Bucket=B, Key="c", ChecksumMode="ENABLED").get("ChecksumCRC32")],
    "without_mode": s3.head_object(Bucket=B, Key="s").get("ChecksumSHA256"),
    "multipart": [composite, s3.head_object(Bucket=B, Key="mp", ChecksumMode="ENABLED").get("ChecksumSHA256")],
    "bad_part": bad_part,
}))
"#,
    );
    assert_eq!(out["head"], out["sha256"], "{out}");
    assert_eq!(out["get"], out["sha256"], "{out}");
    assert_eq!(out["crc32"][0], out["crc32"][1], "{out}");
    assert_eq!(out["without_mode"], serde_json::Value::Null);
    assert_eq!(out["multipart"][0], out["multipart"][1], "{out}");
    assert_eq!(out["bad_part"], "InvalidPart", "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_304_carries_the_entity_tag() {
    let s3 = S3::start(Backend::Sqlite).await;
    let out = s3.boto(
        &s3.key,
        r#"
s3 = client()
etag = s3.put_object(Bucket=B, Key="k", Body=b"v")["ETag"]
try:
    s3.get_object(Bucket=B, Key="k", IfNoneMatch=etag)
    got = None
except botocore.exceptions.ClientError as e:
    got = [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["ResponseMetadata"]["HTTPHeaders"].get("etag"),
           "last-modified" in e.response["ResponseMetadata"]["HTTPHeaders"]]
print(json.dumps({"etag": etag, "got": got}))
"#,
    );
    assert_eq!(out["got"], json!([304, out["etag"], true]), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigv4_with_date_and_aws_chunked_bodies() {
    let s3 = S3::start(Backend::Sqlite).await;
    let script = format!(
        "{SIGNER}\n{}",
        r#"
out = {}
status, _, _ = send("PUT", "dated", {"content-type": "text/plain"}, b"by date", use_date=True)
out["date_put"] = status
status, _, body = send("GET", "dated", {}, use_date=True)
out["date_get"] = [status, body.decode()]
chunked = b"5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n"
status, _, err = send("PUT", "chunked", {"content-encoding": "aws-chunked,gzip", "x-amz-decoded-content-length": "5",
    "x-amz-trailer": "x-amz-checksum-crc32"}, chunked, payload="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
out["chunked_put"] = [status, err.decode()[:200]]
s3 = client()
g = s3.get_object(Bucket=B, Key="chunked", ChecksumMode="ENABLED")
out["chunked_get"] = [g["Body"].read().decode(), g.get("ContentEncoding"), g.get("ChecksumCRC32")]
status, _, err = send("PUT", "plain-chunked", {"content-encoding": "aws-chunked", "x-amz-decoded-content-length": "5",
    "x-amz-trailer": "x-amz-checksum-crc32"}, chunked, payload="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
out["plain_encoding"] = s3.head_object(Bucket=B, Key="plain-chunked").get("ContentEncoding")
print(json.dumps(out))
"#
    );
    let out = s3.boto(&s3.key, &script);
    assert_eq!(
        out,
        json!({ "date_put": 200, "date_get": [200, "by date"], "chunked_put": [200, ""],
                "chunked_get": ["hello", "gzip", "NhCmhg=="], "plain_encoding": null })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_post_forms_name_the_file_check_the_policy_and_tag() {
    let s3 = S3::start(Backend::Sqlite).await;
    let out = s3.boto(
        &s3.key,
        r#"
import base64, requests
s3 = client()
out = {}
post = s3.generate_presigned_post(B, "uploads/${filename}", Conditions=[["starts-with", "$key", "uploads/"]])
r = requests.post(post["url"], data=post["fields"], files={"file": ("report one.txt", b"form body")})
out["post"] = r.status_code
out["stored"] = [o["Key"] for o in s3.list_objects_v2(Bucket=B, Prefix="uploads/").get("Contents", [])]
out["body"] = s3.get_object(Bucket=B, Key="uploads/report one.txt")["Body"].read().decode()
fields = dict(post["fields"])
doc = json.loads(base64.b64decode(fields["policy"]))
doc["expiration"] = "2100-01-01 00:00:00.000000+00:00"
fields["policy"] = base64.b64encode(json.dumps(doc).encode()).decode()
r = requests.post(post["url"], data=fields, files={"file": ("x.txt", b"x")})
out["bad_expiration"] = [r.status_code, "InvalidPolicyDocument" in r.text]
tagging = "<Tagging><TagSet><Tag><Key>team</Key><Value>a&amp;b</Value></Tag></TagSet></Tagging>"
post = s3.generate_presigned_post(B, "tagged", Fields={"tagging": tagging}, Conditions=[{"tagging": tagging}])
r = requests.post(post["url"], data=post["fields"], files={"file": ("t.txt", b"t")})
out["tagged"] = [r.status_code, s3.get_object_tagging(Bucket=B, Key="tagged")["TagSet"]]
print(json.dumps(out))
"#,
    );
    assert_eq!(
        out,
        json!({ "post": 204, "stored": ["uploads/report one.txt"], "body": "form body",
                "bad_expiration": [400, true],
                "tagged": [204, [{ "Key": "team", "Value": "a&b" }]] })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_bucket_over_s3_never_takes_another_organisations_name() {
    let s3 = S3::start(Backend::Sqlite).await;
    let other = crate::create_org(&s3.server, "Other", "free").await;
    let theirs = super::create_bucket(&s3.server, &other, "theirs").await;
    let script = format!(
        "THEIRS = {:?}\n{}",
        theirs["bucket"].as_str().unwrap(),
        r#"
s3 = client()
out = {"own": code(lambda: s3.create_bucket(Bucket=B)),
       "theirs": code(lambda: s3.create_bucket(Bucket=THEIRS)),
       "new": code(lambda: s3.create_bucket(Bucket="some-new-bucket-name"))}
print(json.dumps(out))
"#
    );
    let out = s3.boto(&s3.key, &script);
    assert_eq!(
        out,
        json!({ "own": "BucketAlreadyOwnedByYou", "theirs": "BucketAlreadyExists",
                "new": "BucketAlreadyExists" })
    );
}
