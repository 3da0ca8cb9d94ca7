//! Bucket and object ACLs ([`crate::acl`]): canned ACLs (`x-amz-acl`),
//! grant headers (`x-amz-grant-*`: `id=` an organisation, `uri=` the
//! AllUsers or AuthenticatedUsers group) and access control policies, on
//! PutBucketAcl/GetBucketAcl, PutObjectAcl/GetObjectAcl and the writes
//! that make objects (PutObject, CopyObject, CreateMultipartUpload). An
//! object written by another organisation (with a WRITE grant) is owned
//! by it unless the bucket's ownership controls say otherwise
//! ([`super::ownership`]). A grant by e-mail address is refused
//! (UnresolvableGrantByEmailAddress: Plateau knows organisations, not
//! addresses), and so is a grant to the LogDelivery group or
//! `aws-exec-read` (NotImplemented); nothing is stored and ignored.

use std::sync::Arc;

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, internal, ownership, public_block, s3_error};
use crate::acl::{Acl, Grantee as Who, Grants, Permission as Perm};
use crate::keys::Principal;
use crate::provider::{Bucket as Stored, ObjectHeaders, ObjectInfo};

pub(super) const KIND: &str = "acl";
const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";
const AUTHENTICATED: &str = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";

fn error(code: S3ErrorCode, message: impl Into<String>) -> S3Error {
    S3Error::with_message(code, message.into())
}

/// The bucket's ACL (private to its organisation when none is kept).
pub(super) async fn of_bucket(front: &Front, bucket: &Stored) -> S3Result<Grants> {
    let found = front
        .storage
        .provider()
        .bucket_setting(bucket, KIND)
        .await
        .map_err(internal)?;
    let acl: Option<Acl> = found.and_then(|json| serde_json::from_str(&json).ok());
    Ok(acl.map_or_else(
        || Grants::private(&bucket.org_id),
        |a| a.resolve(&bucket.org_id),
    ))
}

/// An object version's ACL.
pub(super) fn of_object(info: &ObjectInfo, bucket: &Stored) -> Grants {
    of_headers(&info.headers, bucket)
}

fn of_headers(headers: &ObjectHeaders, bucket: &Stored) -> Grants {
    headers.acl.as_ref().map_or_else(
        || Grants::private(&bucket.org_id),
        |a| a.resolve(&bucket.org_id),
    )
}

/// Who owns an object (or the one an upload makes), as S3 names owners.
pub(super) fn owner_of(headers: &ObjectHeaders, bucket: &Stored) -> Owner {
    to_owner(&of_headers(headers, bucket).owner)
}

/// A grant header's grantees: `id="..."`, `uri="..."` or
/// `emailAddress="..."`, separated by commas.
fn header_grantees(value: &str) -> S3Result<Vec<Who>> {
    let mut out = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (kind, v) = part.split_once('=').ok_or_else(|| {
            error(
                S3ErrorCode::InvalidArgument,
                format!("x-amz-grant-*: {part}"),
            )
        })?;
        let v = v.trim().trim_matches('"');
        out.push(grantee(kind.trim(), v)?);
    }
    Ok(out)
}

fn grantee(kind: &str, value: &str) -> S3Result<Who> {
    match kind {
        "id" => Ok(Who::User(value.to_owned())),
        "uri" if value == ALL_USERS => Ok(Who::AllUsers),
        "uri" if value == AUTHENTICATED => Ok(Who::AuthenticatedUsers),
        "uri" => Err(error(
            S3ErrorCode::NotImplemented,
            format!("a grant to the group {value} is not supported"),
        )),
        "emailAddress" => Err(error(
            S3ErrorCode::UnresolvableGrantByEmailAddress,
            "grants by e-mail address are not supported: grant to the organisation's id",
        )),
        other => Err(error(
            S3ErrorCode::InvalidArgument,
            format!("x-amz-grant-*: unknown grantee type {other}"),
        )),
    }
}

/// What a request's canned ACL, grant headers (in [`Perm::ALL`] order:
/// read, write, read-acp, write-acp, full-control) or policy ask for, on
/// a resource of `owner` in a bucket of `bucket_owner`; grantees are
/// checked to be organisations that exist.
pub(super) async fn requested(
    front: &Front,
    canned: Option<&str>,
    headers: [&Option<String>; 5],
    policy: Option<&AccessControlPolicy>,
    owner: &str,
    bucket_owner: &str,
) -> S3Result<Grants> {
    let mut grants = Vec::new();
    for (value, permission) in headers.iter().zip(Perm::ALL) {
        for who in header_grantees(value.as_deref().unwrap_or_default())? {
            grants.push(crate::acl::Grant {
                grantee: who,
                permission,
            });
        }
    }
    let acl = if let Some(policy) = policy {
        Grants {
            owner: owner.to_owned(),
            grants: from_policy(policy)?,
        }
    } else if !grants.is_empty() {
        if canned.is_some() {
            return Err(error(
                S3ErrorCode::InvalidRequest,
                "specifying both a canned ACL and grant headers is not allowed",
            ));
        }
        Grants {
            owner: owner.to_owned(),
            grants,
        }
    } else {
        let name = canned.unwrap_or("private");
        Grants::canned(name, owner, bucket_owner).ok_or_else(|| match name {
            "aws-exec-read" | "log-delivery-write" => error(
                S3ErrorCode::NotImplemented,
                format!("x-amz-acl {name} is not supported"),
            ),
            _ => error(
                S3ErrorCode::InvalidArgument,
                format!("x-amz-acl: {name} is not a canned ACL"),
            ),
        })?
    };
    for g in &acl.grants {
        if let Who::User(id) = &g.grantee
            && id != owner
            && id != bucket_owner
            && !front
                .storage
                .keys()
                .org_exists(id)
                .await
                .map_err(internal)?
        {
            return Err(error(
                S3ErrorCode::InvalidArgument,
                format!("grantee {id} is not an organisation"),
            ));
        }
    }
    Ok(acl)
}

fn from_policy(policy: &AccessControlPolicy) -> S3Result<Vec<crate::acl::Grant>> {
    let mut out = Vec::new();
    for grant in policy.grants.iter().flatten() {
        let permission = grant
            .permission
            .as_ref()
            .and_then(|p| Perm::parse(p.as_str()))
            .ok_or_else(|| error(S3ErrorCode::MalformedACLError, "a grant without permission"))?;
        let g = grant
            .grantee
            .as_ref()
            .ok_or_else(|| error(S3ErrorCode::MalformedACLError, "a grant without grantee"))?;
        let who = match g.type_.as_str() {
            Type::CANONICAL_USER => grantee("id", g.id.as_deref().unwrap_or_default())?,
            Type::GROUP => grantee("uri", g.uri.as_deref().unwrap_or_default())?,
            _ => grantee("emailAddress", "")?,
        };
        out.push(crate::acl::Grant {
            grantee: who,
            permission,
        });
    }
    Ok(out)
}

/// The ACL of an object `principal` writes into `bucket` with these
/// headers: owned by the writer's organisation unless the bucket's
/// ownership controls give it to the bucket's; None for the default.
pub(super) async fn for_object(
    front: &Front,
    principal: &Principal,
    bucket: &Stored,
    canned: Option<&ObjectCannedACL>,
    headers: [&Option<String>; 4],
) -> S3Result<Option<Acl>> {
    let canned = canned.map(ObjectCannedACL::as_str);
    let [full, read, read_acp, write_acp] = headers;
    let headers = [read, &None, read_acp, write_acp, full];
    let sent = headers.iter().any(|h| h.is_some());
    // The common case reads no setting: the organisation's own private
    // object is the default whatever the bucket's controls.
    if principal.org_id == bucket.org_id && !sent && matches!(canned, None | Some("private")) {
        return Ok(None);
    }
    let rule = ownership::of(front, bucket).await?;
    ownership::check_acl(rule.as_deref(), canned, sent)?;
    let owner = ownership::owner(rule.as_deref(), canned, &principal.org_id, &bucket.org_id);
    let acl = requested(front, canned, headers, None, owner, &bucket.org_id).await?;
    public_block::check_acl(front, bucket, &acl).await?;
    Ok(acl.stored(&bucket.org_id))
}

pub(super) fn to_owner(id: &str) -> Owner {
    Owner {
        id: Some(id.to_owned()),
        display_name: Some(id.to_owned()),
    }
}

fn to_grants(acl: &Grants) -> s3s::dto::Grants {
    let grant = |g: &crate::acl::Grant| {
        let (type_, id, uri) = match &g.grantee {
            Who::User(id) => (Type::CANONICAL_USER, Some(id.clone()), None),
            Who::AllUsers => (Type::GROUP, None, Some(ALL_USERS.to_owned())),
            Who::AuthenticatedUsers => (Type::GROUP, None, Some(AUTHENTICATED.to_owned())),
        };
        Grant {
            grantee: Some(Grantee {
                display_name: id.clone(),
                id,
                type_: Type::from_static(type_),
                email_address: None,
                uri,
            }),
            permission: Some(Permission::from(g.permission.as_str().to_owned())),
        }
    };
    // Groups first, as RGW lists them (and ceph/s3-tests expects).
    let mut grants: Vec<_> = acl.grants.iter().collect();
    grants.sort_by_key(|g| matches!(g.grantee, Who::User(_)));
    grants.into_iter().map(grant).collect()
}

pub(super) async fn put_bucket(
    front: &Front,
    req: S3Request<PutBucketAclInput>,
) -> S3Result<S3Response<PutBucketAclOutput>> {
    let (_, bucket) = front.bucket_acp(&req, &req.input.bucket, true).await?;
    let i = &req.input;
    let canned = i.acl.as_ref().map(BucketCannedACL::as_str);
    let rule = ownership::of(front, &bucket).await?;
    let sent = [
        &i.grant_read,
        &i.grant_write,
        &i.grant_read_acp,
        &i.grant_write_acp,
        &i.grant_full_control,
    ];
    let grants = sent.iter().any(|h| h.is_some()) || i.access_control_policy.is_some();
    ownership::check_acl(rule.as_deref(), canned, grants)?;
    let org = bucket.org_id.clone();
    let acl = requested(
        front,
        canned,
        sent,
        i.access_control_policy.as_ref(),
        &org,
        &org,
    )
    .await?;
    public_block::check_acl(front, &bucket, &acl).await?;
    let json = acl
        .stored(&org)
        .map(|a| serde_json::to_string(&a).unwrap_or_default());
    front.put_setting(&bucket, KIND, json.as_deref()).await?;
    Ok(S3Response::new(PutBucketAclOutput::default()))
}

pub(super) async fn get_bucket(
    front: &Front,
    req: S3Request<GetBucketAclInput>,
) -> S3Result<S3Response<GetBucketAclOutput>> {
    let (_, bucket) = front.bucket_acp(&req, &req.input.bucket, false).await?;
    let acl = of_bucket(front, &bucket).await?;
    Ok(S3Response::new(GetBucketAclOutput {
        grants: Some(to_grants(&acl)),
        owner: Some(to_owner(&acl.owner)),
    }))
}

pub(super) async fn put_object(
    front: &Front,
    req: S3Request<PutObjectAclInput>,
) -> S3Result<S3Response<PutObjectAclOutput>> {
    let i = &req.input;
    let version = i.version_id.as_deref();
    let (_, bucket) = front
        .object_acp(&req, &i.bucket, &i.key, version, true)
        .await?;
    let owner = of_object(&front.version(&bucket, &i.key, version).await?, &bucket).owner;
    let canned = i.acl.as_ref().map(ObjectCannedACL::as_str);
    let sent = [
        &i.grant_read,
        &i.grant_write,
        &i.grant_read_acp,
        &i.grant_write_acp,
        &i.grant_full_control,
    ];
    let rule = ownership::of(front, &bucket).await?;
    let grants = sent.iter().any(|h| h.is_some()) || i.access_control_policy.is_some();
    ownership::check_acl(rule.as_deref(), canned, grants)?;
    let policy = i.access_control_policy.as_ref();
    let acl = requested(front, canned, sent, policy, &owner, &bucket.org_id).await?;
    public_block::check_acl(front, &bucket, &acl).await?;
    let acl = acl.stored(&bucket.org_id);
    let change = Arc::new(move |h: &mut ObjectHeaders| {
        h.acl = acl.clone();
        Ok(())
    });
    front
        .storage
        .provider()
        .change_version(&bucket, &i.key, version, change)
        .await
        .map_err(s3_error)?;
    Ok(S3Response::new(PutObjectAclOutput::default()))
}

pub(super) async fn get_object(
    front: &Front,
    req: S3Request<GetObjectAclInput>,
) -> S3Result<S3Response<GetObjectAclOutput>> {
    let i = &req.input;
    let version = i.version_id.as_deref();
    let (_, bucket) = front
        .object_acp(&req, &i.bucket, &i.key, version, false)
        .await?;
    let acl = of_object(&front.version(&bucket, &i.key, version).await?, &bucket);
    Ok(S3Response::new(GetObjectAclOutput {
        grants: Some(to_grants(&acl)),
        owner: Some(to_owner(&acl.owner)),
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::{from_policy, header_grantees};
    use crate::acl::Grantee as Who;
    use s3s::dto::*;

    #[test]
    fn grant_headers_and_policies_name_organisations_and_groups() {
        let got =
            header_grantees(r#"id="org_b", uri="http://acs.amazonaws.com/groups/global/AllUsers""#)
                .unwrap();
        assert_eq!(got, vec![Who::User("org_b".into()), Who::AllUsers]);
        let code = |v: &str| header_grantees(v).unwrap_err().code().as_str().to_owned();
        assert_eq!(
            code("emailAddress=a@example.com"),
            "UnresolvableGrantByEmailAddress"
        );
        assert_eq!(
            code("uri=http://acs.amazonaws.com/groups/s3/LogDelivery"),
            "NotImplemented"
        );
        assert_eq!(code("nobody"), "InvalidArgument");
        let policy = AccessControlPolicy {
            grants: Some(vec![Grant {
                grantee: Some(Grantee {
                    id: Some("org_b".into()),
                    type_: Type::from_static(Type::CANONICAL_USER),
                    display_name: None,
                    email_address: None,
                    uri: None,
                }),
                permission: Some(Permission::from_static(Permission::WRITE_ACP)),
            }]),
            owner: None,
        };
        let grants = from_policy(&policy).unwrap();
        assert_eq!(grants[0].grantee, Who::User("org_b".into()));
        assert_eq!(grants[0].permission, crate::acl::Permission::WriteAcp);
    }
}
