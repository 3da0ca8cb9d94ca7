//! SSE-KMS with the built-in KMS, driven by boto3: objects under an
//! organisation's named keys (PutObject, multipart, CopyObject, a
//! bucket's default), the headers S3 answers with, and what is refused:
//! a key id without `aws:kms`, a malformed one, another organisation's
//! key, a read naming an encryption. No plaintext is at rest.

use plateau_testkit::Backend;
use serde_json::json;

use super::{S3, create_key};

const SCRIPT: &str = r#"
import hashlib
s3 = client()
other = client(akid=OTHER_AKID, secret=OTHER_SECRET)
out = {}
body = b"KMS-PLAINTEXT-MARKER-" * 1000
r = s3.put_object(Bucket=B, Key="k", Body=body, ServerSideEncryption="aws:kms", SSEKMSKeyId="reports")
out["put"] = [r.get("ServerSideEncryption"), r.get("SSEKMSKeyId"), r["ETag"] == '"' + hashlib.md5(body).hexdigest() + '"']
h = s3.head_object(Bucket=B, Key="k")
out["head"] = [h.get("ServerSideEncryption"), h.get("SSEKMSKeyId")]
g = s3.get_object(Bucket=B, Key="k")
out["get"] = [g.get("ServerSideEncryption"), g.get("SSEKMSKeyId"), g["Body"].read() == body]
out["range"] = s3.get_object(Bucket=B, Key="k", Range="bytes=7-99")["Body"].read() == body[7:100]
# A read names no encryption; an SSE-KMS object takes no customer key.
out["read_naming_kms"] = code(lambda: s3.get_object(Bucket=B, Key="k", SSECustomerAlgorithm="AES256", SSECustomerKey="k" * 32))
# Another organisation reads nothing it was not granted, key or not.
out["other_reads"] = code(lambda: other.get_object(Bucket=B, Key="k"))
# The ARN of the organisation's own key names the same key; another's is refused.
r = s3.put_object(Bucket=B, Key="arn", Body=body, ServerSideEncryption="aws:kms",
    SSEKMSKeyId=f"arn:aws:kms:us-east-1:{ORG}:key/reports", BucketKeyEnabled=True)
out["own_arn"] = [r.get("SSEKMSKeyId") == f"arn:aws:kms:us-east-1:{ORG}:key/reports", r.get("BucketKeyEnabled"),
    s3.get_object(Bucket=B, Key="arn")["Body"].read() == body]
out["other_arn"] = code(lambda: s3.put_object(Bucket=B, Key="x", Body=b"x", ServerSideEncryption="aws:kms",
    SSEKMSKeyId=f"arn:aws:kms:us-east-1:{OTHER_ORG}:key/reports"))
out["bad_id"] = code(lambda: s3.put_object(Bucket=B, Key="x", Body=b"x", ServerSideEncryption="aws:kms", SSEKMSKeyId="a b"))
out["id_without_kms"] = code(lambda: s3.put_object(Bucket=B, Key="x", Body=b"x", ServerSideEncryption="AES256", SSEKMSKeyId="reports"))
# aws:kms alone is the organisation's default key, as S3's aws/s3.
r = s3.put_object(Bucket=B, Key="default", Body=body, ServerSideEncryption="aws:kms")
out["default"] = r.get("SSEKMSKeyId")
# Multipart: the upload's key encrypts every part.
part = b"KMS-PLAINTEXT-MARKER-" * (260 * 1024)
up = s3.create_multipart_upload(Bucket=B, Key="mp", ServerSideEncryption="aws:kms", SSEKMSKeyId="reports")
es = [s3.upload_part(Bucket=B, Key="mp", UploadId=up["UploadId"], PartNumber=n, Body=x) for n, x in [(1, part), (2, b"tail")]]
done = s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up["UploadId"],
    MultipartUpload={"Parts": [{"PartNumber": n + 1, "ETag": e["ETag"]} for n, e in enumerate(es)]})
out["mp"] = [up.get("SSEKMSKeyId"), es[0].get("SSEKMSKeyId"), done.get("SSEKMSKeyId"),
    s3.get_object(Bucket=B, Key="mp")["Body"].read() == part + b"tail"]
# A copy under another key, and one decrypted on the way.
c = s3.copy_object(Bucket=B, Key="copy", CopySource={"Bucket": B, "Key": "k"}, ServerSideEncryption="aws:kms", SSEKMSKeyId="ledger")
out["copy"] = [c.get("SSEKMSKeyId"), s3.get_object(Bucket=B, Key="copy")["Body"].read() == body]
# The bucket's default: writes that ask for nothing are under its key.
s3.put_bucket_encryption(Bucket=B, ServerSideEncryptionConfiguration={"Rules": [
    {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "ledger"}}]})
rule = s3.get_bucket_encryption(Bucket=B)["ServerSideEncryptionConfiguration"]["Rules"][0]["ApplyServerSideEncryptionByDefault"]
r = s3.put_object(Bucket=B, Key="by-default", Body=body)
out["bucket_default"] = [rule["SSEAlgorithm"], rule.get("KMSMasterKeyID"), r.get("ServerSideEncryption"), r.get("SSEKMSKeyId"),
    s3.get_object(Bucket=B, Key="by-default")["Body"].read() == body]
out["dsse"] = code(lambda: s3.put_object(Bucket=B, Key="x", Body=b"x", ServerSideEncryption="aws:kms:dsse"))
print(json.dumps(out))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_kms_objects_are_sealed_under_the_organisations_named_keys() {
    let s3 = S3::start(Backend::Sqlite).await;
    let other_token = crate::create_org(&s3.server, "Other", "free").await;
    let other = create_key(&s3.server, &other_token, json!({ "name": "other" })).await;
    let org = super::acl::org_of(&s3, &s3.server.token).await;
    let other_org = super::acl::org_of(&s3, &other_token).await;
    let script = format!(
        "ORG, OTHER_ORG = {org:?}, {other_org:?}\nOTHER_AKID, OTHER_SECRET = {:?}, {:?}\n{SCRIPT}",
        other.access_key_id, other.secret
    );
    let out = s3.boto(&s3.key, &script);
    assert_eq!(
        out,
        json!({
            "put": ["aws:kms", "reports", true],
            "head": ["aws:kms", "reports"],
            "get": ["aws:kms", "reports", true],
            "range": true,
            "read_naming_kms": "InvalidRequest",
            "other_reads": "AccessDenied",
            "own_arn": [true, true, true],
            "other_arn": "AccessDenied",
            "bad_id": "InvalidArgument",
            "id_without_kms": "InvalidArgument",
            "default": "alias/aws/s3",
            "mp": ["reports", "reports", "reports", true],
            "copy": ["ledger", true],
            "bucket_default": ["aws:kms", "ledger", "aws:kms", "ledger", true],
            "dsse": "NotImplemented",
        })
    );
    let store = s3.server.data_dir.path().join("storage");
    let plain = super::semantics::files_containing(&store, b"KMS-PLAINTEXT-MARKER-");
    eprintln!("files holding the plaintext: {plain:?}");
    assert!(plain.is_empty(), "{plain:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_bucket_over_s3_makes_the_organisations_own_names() {
    let s3 = S3::start(Backend::Sqlite).await;
    let limited = create_key(
        &s3.server,
        &s3.server.token,
        json!({ "name": "limited", "buckets": [s3.bucket["id"]] }),
    )
    .await;
    let out = s3.boto(
        &s3.key,
        &format!(
            "LIMITED_AKID, LIMITED_SECRET = {:?}, {:?}\n{}",
            limited.access_key_id,
            limited.secret,
            r#"
s3 = client()
prefix = "-".join(B.split("-")[:2]) + "-"
made = prefix + "made.over-s3"
out = {"create": s3.create_bucket(Bucket=made)["ResponseMetadata"]["HTTPStatusCode"],
       "again": code(lambda: s3.create_bucket(Bucket=made)),
       "with_acl": code(lambda: s3.create_bucket(Bucket=prefix + "public", ACL="public-read")),
       "invalid": code(lambda: s3.create_bucket(Bucket=prefix + "a..b")),
       "outside": code(lambda: s3.create_bucket(Bucket="some-new-bucket-name")),
       "limited_key": code(lambda: client(akid=LIMITED_AKID, secret=LIMITED_SECRET).create_bucket(Bucket=prefix + "nope"))}
s3.put_object(Bucket=made, Key="k", Body=b"v")
out["written"] = s3.get_object(Bucket=made, Key="k")["Body"].read().decode()
out["acl"] = [g["Permission"] for g in s3.get_bucket_acl(Bucket=prefix + "public")["Grants"]]
out["listed"] = sorted(b["Name"][len(prefix):] for b in s3.list_buckets()["Buckets"] if not b["Name"].startswith(B))
print(json.dumps(out))
"#
        ),
    );
    assert_eq!(
        out,
        json!({ "create": 200, "again": "BucketAlreadyOwnedByYou", "with_acl": "OK",
                "invalid": "InvalidBucketName", "outside": "BucketAlreadyExists",
                "limited_key": "AccessDenied", "written": "v", "acl": ["READ", "FULL_CONTROL"],
                "listed": ["made.over-s3", "public"] })
    );
    // The API sees the bucket made over S3, named by its S3 name.
    let c = plateau_testkit::Client::new(&s3.server.url).with_token(&s3.server.token);
    let listed = c.get("/storage/buckets").await.json();
    let names: Vec<&str> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["bucket"].as_str())
        .collect();
    eprintln!("buckets over the API: {names:?}");
    assert!(
        names.iter().any(|n| n.ends_with("-made.over-s3")),
        "{names:?}"
    );
}
