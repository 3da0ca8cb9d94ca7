//! Canned ACLs as far as `private` and `public-read`: a bucket's kept as
//! its `acl` setting, an object's in its headers (`x-amz-acl` on
//! PutObject, CopyObject and CreateMultipartUpload, PutObjectAcl). A
//! public-read bucket's listing and objects, and a public-read object, are
//! read without a signature or with another organisation's key; nothing
//! is ever written that way. Every other ACL (other canned ACLs, grant
//! headers, a policy granting anything else) is refused with
//! NotImplemented, never stored and ignored.

use std::sync::Arc;

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, internal, s3_error};
use crate::provider::Bucket as Stored;

pub(super) const KIND: &str = "acl";
pub(super) const PUBLIC_READ: &str = "public-read";
const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";

fn unsupported(what: &str) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::NotImplemented,
        format!("{what}: only the canned ACLs private and public-read are supported"),
    )
}

/// The canned ACL a request asks for: None for `private` (or none).
pub(super) fn canned(acl: Option<&str>, grants: &[Option<&String>]) -> S3Result<Option<String>> {
    if grants.iter().any(Option::is_some) {
        return Err(unsupported("x-amz-grant-*"));
    }
    match acl {
        None | Some("private") => Ok(None),
        Some(PUBLIC_READ) => Ok(Some(PUBLIC_READ.to_owned())),
        Some(other) if KNOWN.contains(&other) => Err(unsupported(&format!("x-amz-acl {other}"))),
        Some(other) => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            format!("x-amz-acl: {other} is not a canned ACL"),
        )),
    }
}

/// S3's canned ACLs: the others than private and public-read are refused
/// as not implemented, a name outside them as invalid.
const KNOWN: [&str; 6] = [
    "public-read-write",
    "authenticated-read",
    "aws-exec-read",
    "bucket-owner-read",
    "bucket-owner-full-control",
    "log-delivery-write",
];

/// The canned ACL an access control policy amounts to: the owner's
/// (`owner_id`) full control, and READ for everyone or not; a grant to
/// anyone else is refused.
/// The ACL a PutBucketAcl or PutObjectAcl asks for: a canned one (grant
/// headers refused), or the one a policy amounts to.
fn requested(
    acl: Option<&str>,
    grants: [&Option<String>; 5],
    policy: Option<&AccessControlPolicy>,
    owner_id: &str,
) -> S3Result<Option<String>> {
    let acl = canned(acl, &grants.map(Option::as_ref))?;
    match policy {
        Some(policy) => from_policy(policy, owner_id),
        None => Ok(acl),
    }
}

fn from_policy(policy: &AccessControlPolicy, owner_id: &str) -> S3Result<Option<String>> {
    let mut public = false;
    for grant in policy.grants.iter().flatten() {
        let permission = grant.permission.as_ref().map(Permission::as_str);
        let grantee = grant.grantee.as_ref();
        let kind = grantee.map(|g| g.type_.as_str());
        match (kind, permission) {
            (Some(Type::CANONICAL_USER), Some(Permission::FULL_CONTROL))
                if grantee.and_then(|g| g.id.as_deref()) == Some(owner_id) => {}
            (Some(Type::GROUP), Some(Permission::READ))
                if grantee.and_then(|g| g.uri.as_deref()) == Some(ALL_USERS) =>
            {
                public = true;
            }
            _ => return Err(unsupported("AccessControlPolicy")),
        }
    }
    Ok(public.then(|| PUBLIC_READ.to_owned()))
}

fn grants(owner: &Owner, acl: Option<&str>) -> Grants {
    let mut grants = vec![Grant {
        grantee: Some(Grantee {
            display_name: owner.display_name.clone(),
            id: owner.id.clone(),
            type_: Type::from_static(Type::CANONICAL_USER),
            email_address: None,
            uri: None,
        }),
        permission: Some(Permission::from_static(Permission::FULL_CONTROL)),
    }];
    if acl == Some(PUBLIC_READ) {
        grants.push(Grant {
            grantee: Some(Grantee {
                type_: Type::from_static(Type::GROUP),
                uri: Some(ALL_USERS.to_owned()),
                display_name: None,
                email_address: None,
                id: None,
            }),
            permission: Some(Permission::from_static(Permission::READ)),
        });
    }
    grants
}

/// The organisation owning a bucket, as S3 names an owner.
pub(super) fn owner(bucket: &Stored) -> Owner {
    Owner {
        id: Some(bucket.org_id.clone()),
        display_name: Some(bucket.org_id.clone()),
    }
}

/// The bucket's canned ACL (None: private).
pub(super) async fn of_bucket(front: &Front, bucket: &Stored) -> S3Result<Option<String>> {
    let found = front
        .storage
        .provider()
        .bucket_setting(bucket, KIND)
        .await
        .map_err(internal)?;
    Ok(found.and_then(|json| serde_json::from_str(&json).ok()))
}

pub(super) async fn put_bucket(
    front: &Front,
    req: S3Request<PutBucketAclInput>,
) -> S3Result<S3Response<PutBucketAclOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let i = &req.input;
    let acl = requested(
        i.acl.as_ref().map(BucketCannedACL::as_str),
        [
            &i.grant_full_control,
            &i.grant_read,
            &i.grant_read_acp,
            &i.grant_write,
            &i.grant_write_acp,
        ],
        i.access_control_policy.as_ref(),
        &bucket.org_id,
    )?;
    let provider = front.storage.provider();
    let json = acl.map(|a| serde_json::Value::from(a).to_string());
    provider
        .set_bucket_setting(&bucket, KIND, json.as_deref())
        .await
        .map_err(s3_error)?;
    Ok(S3Response::new(PutBucketAclOutput::default()))
}

pub(super) async fn get_bucket(
    front: &Front,
    req: S3Request<GetBucketAclInput>,
) -> S3Result<S3Response<GetBucketAclOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let acl = of_bucket(front, &bucket).await?;
    let owner = owner(&bucket);
    Ok(S3Response::new(GetBucketAclOutput {
        grants: Some(grants(&owner, acl.as_deref())),
        owner: Some(owner),
    }))
}

pub(super) async fn put_object(
    front: &Front,
    req: S3Request<PutObjectAclInput>,
) -> S3Result<S3Response<PutObjectAclOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let i = &req.input;
    let acl = requested(
        i.acl.as_ref().map(ObjectCannedACL::as_str),
        [
            &i.grant_full_control,
            &i.grant_read,
            &i.grant_read_acp,
            &i.grant_write,
            &i.grant_write_acp,
        ],
        i.access_control_policy.as_ref(),
        &bucket.org_id,
    )?;
    super::versioning::current_only(front, &bucket, &i.key, i.version_id.as_deref()).await?;
    front
        .storage
        .provider()
        .change_headers(&bucket, &i.key, Arc::new(move |h| h.acl = acl.clone()))
        .await
        .map_err(s3_error)?;
    Ok(S3Response::new(PutObjectAclOutput::default()))
}

pub(super) async fn get_object(
    front: &Front,
    req: S3Request<GetObjectAclInput>,
) -> S3Result<S3Response<GetObjectAclOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let info = front
        .version(&bucket, &req.input.key, req.input.version_id.as_deref())
        .await?;
    let owner = owner(&bucket);
    Ok(S3Response::new(GetObjectAclOutput {
        grants: Some(grants(&owner, info.headers.acl.as_deref())),
        owner: Some(owner),
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::{canned, from_policy};
    use s3s::dto::*;

    fn grant(id: &str) -> Grant {
        Grant {
            grantee: Some(Grantee {
                id: Some(id.to_owned()),
                type_: Type::from_static(Type::CANONICAL_USER),
                display_name: None,
                email_address: None,
                uri: None,
            }),
            permission: Some(Permission::from_static(Permission::FULL_CONTROL)),
        }
    }

    #[test]
    fn a_policy_granting_another_is_refused() {
        let own = AccessControlPolicy {
            grants: Some(vec![grant("org_a")]),
            owner: None,
        };
        assert_eq!(from_policy(&own, "org_a").unwrap(), None);
        let other = AccessControlPolicy {
            grants: Some(vec![grant("org_a"), grant("org_b")]),
            owner: None,
        };
        assert_eq!(
            from_policy(&other, "org_a").unwrap_err().code().as_str(),
            "NotImplemented"
        );
    }

    #[test]
    fn only_private_and_public_read_are_taken() {
        assert_eq!(canned(None, &[]).unwrap(), None);
        assert_eq!(canned(Some("private"), &[]).unwrap(), None);
        assert_eq!(
            canned(Some("public-read"), &[]).unwrap().as_deref(),
            Some("public-read")
        );
        let code = |acl| {
            canned(Some(acl), &[])
                .unwrap_err()
                .code()
                .as_str()
                .to_owned()
        };
        assert_eq!(code("public-read-write"), "NotImplemented");
        assert_eq!(code("public-ready"), "InvalidArgument");
        let grant = "id=x".to_owned();
        assert!(canned(Some("private"), &[Some(&grant)]).is_err());
    }
}
