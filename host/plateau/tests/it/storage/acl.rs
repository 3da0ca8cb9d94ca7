//! ACL grants between organisations, bucket ownership controls and public
//! access blocks, driven by boto3 as ceph/s3-tests drives them: a grant
//! by organisation id gives exactly its permission (READ lists, WRITE
//! writes objects, READ_ACP and WRITE_ACP read and change the ACL), an
//! object another organisation writes is its own unless the bucket's
//! ownership controls say otherwise, and a public access block refuses
//! or ignores grants to everyone. `x-amz-expected-bucket-owner` names
//! the organisation a request expects, refused otherwise.

use plateau_testkit::Backend;
use serde_json::json;

use super::S3;

#[tokio::test]
async fn grants_ownership_and_public_access_blocks() {
    let s3 = S3::start(Backend::Sqlite).await;
    let other = crate::create_org(&s3.server, "Other", "pro").await;
    let other_key = super::create_key(&s3.server, &other, json!({ "name": "other" })).await;
    let main_org = org_of(&s3, &s3.server.token).await;
    let other_org = org_of(&s3, &other).await;
    let script = SCRIPT
        .replace("OTHER_AKID", &other_key.access_key_id)
        .replace("OTHER_SECRET", &other_key.secret)
        .replace("OTHER_ORG", &other_org)
        .replace("MAIN_ORG", &main_org);
    let out = s3.boto(&s3.key, &script);
    eprintln!("{out:#}");

    // Grants by organisation id, one permission at a time.
    assert_eq!(out["owner"], json!([main_org, main_org]));
    assert_eq!(out["expected_owner"], json!(["AccessDenied", "OK"]));
    assert_eq!(
        out["read"],
        json!(["OK", "AccessDenied", "AccessDenied", "AccessDenied"])
    );
    assert_eq!(
        out["read_acp"],
        json!(["AccessDenied", "OK", "AccessDenied", "AccessDenied"])
    );
    assert_eq!(
        out["write"],
        json!(["AccessDenied", "AccessDenied", "OK", "AccessDenied"])
    );
    assert_eq!(
        out["write_acp"],
        json!(["AccessDenied", "AccessDenied", "AccessDenied", "OK"])
    );
    assert_eq!(out["full_control"], json!(["OK", "OK", "OK", "OK"]));
    assert_eq!(
        out["granted"],
        json!([
            ["CanonicalUser", main_org, "FULL_CONTROL"],
            ["CanonicalUser", other_org, "READ"]
        ])
    );
    assert_eq!(out["no_such_org"], "InvalidArgument");
    assert_eq!(out["by_email"], "UnresolvableGrantByEmailAddress");
    assert_eq!(out["canned_and_grants"], "InvalidRequest");
    assert_eq!(out["revoked"], json!([0, "OK"]));

    // Objects another organisation writes: its own, or the bucket's.
    assert_eq!(out["written_owner"], json!(other_org));
    assert_eq!(
        out["bucket_owner_read"],
        json!([
            ["CanonicalUser", other_org, "FULL_CONTROL"],
            ["CanonicalUser", main_org, "READ"]
        ])
    );
    assert_eq!(
        out["header_grants"],
        json!([
            ["CanonicalUser", other_org, "READ"],
            ["CanonicalUser", other_org, "WRITE_ACP"]
        ])
    );
    assert_eq!(out["other_reads_granted_object"], "OK");
    assert_eq!(out["authenticated_read"], json!(["OK", 403]));
    assert_eq!(out["anon_write_public_rw"], 200);

    // Ownership controls.
    assert_eq!(out["ownership_none"], "OwnershipControlsNotFoundError");
    assert_eq!(
        out["enforced_on_public"],
        "InvalidBucketAclWithObjectOwnership"
    );
    assert_eq!(out["ownership"], "BucketOwnerEnforced");
    assert_eq!(
        out["enforced_acl"],
        json!([
            "AccessControlListNotSupported",
            "AccessControlListNotSupported",
            "OK"
        ])
    );
    assert_eq!(out["enforced_ignores_acls"], 403);
    assert_eq!(out["preferred_owner"], json!([main_org, other_org]));
    assert_eq!(out["ownership_deleted"], "OwnershipControlsNotFoundError");

    // Public access blocks.
    assert_eq!(out["block_none"], "NoSuchPublicAccessBlockConfiguration");
    assert_eq!(out["block"], json!([true, false, false, true]));
    assert_eq!(
        out["blocked"],
        json!(["AccessDenied", "AccessDenied", "OK", "OK"])
    );
    assert_eq!(out["ignored"], json!([200, 403, "AccessDenied"]));
    assert_eq!(
        out["block_deleted"],
        json!(["NoSuchPublicAccessBlockConfiguration", 200])
    );
}

/// The organisation of `token`: its S3 canonical user id.
pub(super) async fn org_of(s3: &S3, token: &str) -> String {
    let me = s3
        .server
        .anonymous()
        .with_token(token)
        .get("/me")
        .await
        .json();
    me["organization"]["id"].as_str().unwrap().to_owned()
}

const SCRIPT: &str = r#"
import urllib3
s3 = client("path")
other = client("path", akid="OTHER_AKID", secret="OTHER_SECRET")
http = urllib3.PoolManager(retries=False)
def anon(method, key, body=None):
    return http.request(method, os.environ["DIRECT"] + "/" + B + "/" + key, body=body).status
def grants(r):
    return [[g["Grantee"]["Type"], g["Grantee"].get("ID") or g["Grantee"].get("URI"), g["Permission"]]
            for g in r["Grants"]]
def policy(*extra):
    return {"Owner": {"ID": "MAIN_ORG"}, "Grants": [
        {"Grantee": {"ID": "MAIN_ORG", "Type": "CanonicalUser"}, "Permission": "FULL_CONTROL"}] + list(extra)}
def to_other(permission):
    return {"Grantee": {"ID": "OTHER_ORG", "Type": "CanonicalUser"}, "Permission": permission}
out = {}
s3.put_object(Bucket=B, Key="base.txt", Body=b"base")
out["expected_owner"] = [code(lambda: s3.list_objects_v2(Bucket=B, ExpectedBucketOwner=o)) for o in ["OTHER_ORG", "MAIN_ORG"]]
acl = s3.get_bucket_acl(Bucket=B)
out["owner"] = [acl["Owner"]["ID"], acl["Owner"]["DisplayName"]]
for permission in ["READ", "READ_ACP", "WRITE", "WRITE_ACP", "FULL_CONTROL"]:
    s3.put_bucket_acl(Bucket=B, AccessControlPolicy=policy(to_other(permission)))
    if permission == "READ":
        out["granted"] = grants(s3.get_bucket_acl(Bucket=B))
    out[permission.lower()] = [
        code(lambda: other.list_objects_v2(Bucket=B)),
        code(lambda: other.get_bucket_acl(Bucket=B)),
        code(lambda: other.put_object(Bucket=B, Key="by-other.txt", Body=b"x")),
        code(lambda: other.put_bucket_acl(Bucket=B, AccessControlPolicy=policy(to_other(permission)))),
    ]
out["no_such_org"] = code(lambda: s3.put_bucket_acl(Bucket=B, GrantRead="id=org_nobody"))
out["by_email"] = code(lambda: s3.put_bucket_acl(Bucket=B, GrantRead='emailAddress="a@example.com"'))
out["canned_and_grants"] = code(lambda: s3.put_object(Bucket=B, Key="x", Body=b"x", ACL="public-read",
                                                      GrantRead="id=OTHER_ORG"))
s3.put_bucket_acl(Bucket=B, AccessControlPolicy={"Owner": {"ID": "MAIN_ORG"}, "Grants": []})
out["revoked"] = [len(s3.get_bucket_acl(Bucket=B)["Grants"]), code(lambda: s3.head_object(Bucket=B, Key="base.txt"))]

s3.put_bucket_acl(Bucket=B, AccessControlPolicy=policy(to_other("WRITE")))
other.put_object(Bucket=B, Key="theirs.txt", Body=b"x")
out["written_owner"] = s3.get_object_acl(Bucket=B, Key="theirs.txt")["Owner"]["ID"]
other.put_object(Bucket=B, Key="shared.txt", Body=b"x", ACL="bucket-owner-read")
out["bucket_owner_read"] = grants(other.get_object_acl(Bucket=B, Key="shared.txt"))
s3.put_object(Bucket=B, Key="granted.txt", Body=b"x", GrantRead="id=OTHER_ORG", GrantWriteACP="id=OTHER_ORG")
out["header_grants"] = grants(s3.get_object_acl(Bucket=B, Key="granted.txt"))
out["other_reads_granted_object"] = code(lambda: other.get_object(Bucket=B, Key="granted.txt"))
s3.put_object(Bucket=B, Key="auth.txt", Body=b"x", ACL="authenticated-read")
out["authenticated_read"] = [code(lambda: other.get_object(Bucket=B, Key="auth.txt")), anon("GET", "auth.txt")]
s3.put_bucket_acl(Bucket=B, ACL="public-read-write")
out["anon_write_public_rw"] = anon("PUT", "anon.txt", b"x")

out["ownership_none"] = code(lambda: s3.get_bucket_ownership_controls(Bucket=B))
enforced = {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
out["enforced_on_public"] = code(lambda: s3.put_bucket_ownership_controls(Bucket=B, OwnershipControls=enforced))
s3.put_bucket_acl(Bucket=B, ACL="private")
s3.put_object(Bucket=B, Key="was-public.txt", Body=b"x", ACL="public-read")
s3.put_bucket_ownership_controls(Bucket=B, OwnershipControls=enforced)
out["ownership"] = s3.get_bucket_ownership_controls(Bucket=B)["OwnershipControls"]["Rules"][0]["ObjectOwnership"]
out["enforced_acl"] = [code(lambda: s3.put_bucket_acl(Bucket=B, ACL="public-read")),
                       code(lambda: s3.put_object(Bucket=B, Key="e.txt", Body=b"x", ACL="public-read")),
                       code(lambda: s3.put_object(Bucket=B, Key="e.txt", Body=b"x", ACL="bucket-owner-full-control"))]
out["enforced_ignores_acls"] = anon("GET", "was-public.txt")
s3.put_bucket_ownership_controls(Bucket=B, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
s3.put_bucket_acl(Bucket=B, AccessControlPolicy=policy(to_other("WRITE")))
other.put_object(Bucket=B, Key="preferred.txt", Body=b"x", ACL="bucket-owner-full-control")
other.put_object(Bucket=B, Key="written.txt", Body=b"x")
out["preferred_owner"] = [s3.get_object_acl(Bucket=B, Key=k)["Owner"]["ID"] for k in ["preferred.txt", "written.txt"]]
s3.delete_bucket_ownership_controls(Bucket=B)
out["ownership_deleted"] = code(lambda: s3.get_bucket_ownership_controls(Bucket=B))

out["block_none"] = code(lambda: s3.get_public_access_block(Bucket=B))
s3.put_object(Bucket=B, Key="public.txt", Body=b"x", ACL="public-read")
s3.put_public_access_block(Bucket=B, PublicAccessBlockConfiguration={
    "BlockPublicAcls": True, "IgnorePublicAcls": False, "BlockPublicPolicy": False, "RestrictPublicBuckets": True})
c = s3.get_public_access_block(Bucket=B)["PublicAccessBlockConfiguration"]
out["block"] = [c["BlockPublicAcls"], c["IgnorePublicAcls"], c["BlockPublicPolicy"], c["RestrictPublicBuckets"]]
out["blocked"] = [code(lambda: s3.put_bucket_acl(Bucket=B, ACL="authenticated-read")),
                  code(lambda: s3.put_object(Bucket=B, Key="p.txt", Body=b"x", ACL="public-read")),
                  code(lambda: s3.put_object(Bucket=B, Key="p.txt", Body=b"x", ACL="private")),
                  code(lambda: s3.put_object_acl(Bucket=B, Key="p.txt", GrantRead="id=OTHER_ORG"))]
before = anon("GET", "public.txt")
s3.put_public_access_block(Bucket=B, PublicAccessBlockConfiguration={
    "BlockPublicAcls": False, "IgnorePublicAcls": True, "BlockPublicPolicy": False, "RestrictPublicBuckets": False})
out["ignored"] = [before, anon("GET", "public.txt"), code(lambda: other.get_object(Bucket=B, Key="public.txt"))]
s3.delete_public_access_block(Bucket=B)
out["block_deleted"] = [code(lambda: s3.get_public_access_block(Bucket=B)), anon("GET", "public.txt")]
print(json.dumps(out))
"#;
