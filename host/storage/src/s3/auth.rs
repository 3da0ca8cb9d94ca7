//! Who a request is and what it reaches: [`Auth`] gives `s3s` a key's
//! secret, [`Access`] lets every request through to [`Front`], which
//! resolves each bucket with tenant isolation ([`Front::access`]).

use s3s::auth::{S3Auth, SecretKey};
use s3s::{S3Error, S3ErrorCode, S3Request, S3Result};

use super::{Front, acl, ownership, public_block};
use super::{denied, internal};
use crate::acl::{Caller, Permission};
use crate::error::Error;
use crate::keys::Principal;
use crate::provider::Bucket;
use crate::{Storage, names};

pub(super) struct Auth {
    pub(super) storage: Storage,
}

#[async_trait::async_trait]
impl S3Auth for Auth {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        match self.storage.keys().principal(access_key).await {
            Ok(Some(p)) => Ok(SecretKey::from(p.secret)),
            Ok(None) => Err(S3Error::with_message(
                S3ErrorCode::InvalidAccessKeyId,
                "the access key id you provided does not exist",
            )),
            Err(e) => Err(internal(e)),
        }
    }
}

impl Front {
    /// The caller's key.
    pub(super) async fn principal<T>(&self, req: &S3Request<T>) -> S3Result<Principal> {
        let Some(creds) = &req.credentials else {
            return Err(denied());
        };
        self.storage
            .keys()
            .principal(&creds.access_key)
            .await
            .map_err(internal)?
            .ok_or_else(denied)
    }

    /// The bucket `name`, if the caller's key may read (or write) it;
    /// a caller outside the bucket's organisation reads it with a READ
    /// grant and changes nothing.
    pub(super) async fn bucket<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
        write: bool,
    ) -> S3Result<(Principal, Bucket)> {
        let need = if write {
            Need::Owner
        } else {
            Need::Bucket(Permission::Read)
        };
        self.access(req, name, write, need).await
    }

    /// The bucket `name`, to write or delete objects in: as
    /// [`Front::bucket`], and also with a WRITE grant.
    pub(super) async fn writer<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
    ) -> S3Result<(Principal, Bucket)> {
        self.access(req, name, true, Need::Bucket(Permission::Write))
            .await
    }

    /// The bucket `name`, to read or change its ACL (`write`): as
    /// [`Front::bucket`], and also with a READ_ACP (WRITE_ACP) grant.
    pub(super) async fn bucket_acp<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
        write: bool,
    ) -> S3Result<(Principal, Bucket)> {
        let permission = if write {
            Permission::WriteAcp
        } else {
            Permission::ReadAcp
        };
        self.access(req, name, write, Need::Bucket(permission))
            .await
    }

    /// The bucket `name`, to read the object `key`: as [`Front::bucket`],
    /// and also with a READ grant on the object.
    pub(super) async fn object_reader<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
        key: &str,
    ) -> S3Result<(Principal, Bucket)> {
        self.access(req, name, false, Need::Object(key, None, Permission::Read))
            .await
    }

    /// The bucket `name`, to read or change (`write`) the ACL of a version
    /// of `key`: as [`Front::bucket`], and also with a READ_ACP
    /// (WRITE_ACP) grant on it or as its owner.
    pub(super) async fn object_acp<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
        key: &str,
        version: Option<&str>,
        write: bool,
    ) -> S3Result<(Principal, Bucket)> {
        let permission = if write {
            Permission::WriteAcp
        } else {
            Permission::ReadAcp
        };
        self.access(req, name, write, Need::Object(key, version, permission))
            .await
    }

    /// A key reaches its organisation's buckets as far as its limits let
    /// it (and a request naming another expected owner none); anyone else (no signature, or another organisation's key, still
    /// within its limits) only as far as the ACLs ([`acl`]) grant `need`.
    async fn access<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
        write: bool,
        need: Need<'_>,
    ) -> S3Result<(Principal, Bucket)> {
        let principal = match &req.credentials {
            Some(_) => Some(self.principal(req).await?),
            None => None,
        };
        let found = self
            .storage
            .provider()
            .bucket_by_name(name)
            .await
            .map_err(internal)?;
        // x-amz-expected-bucket-owner: the bucket's organisation or nothing.
        let expected = req.headers.get("x-amz-expected-bucket-owner");
        if let (Some(want), Some(b)) = (expected, &found)
            && want.as_bytes() != b.org_id.as_bytes()
        {
            return Err(denied());
        }
        match (found, principal) {
            (Some(b), Some(p)) if b.org_id == p.org_id => {
                if p.may(&b.id, write) {
                    Ok((p, b))
                } else {
                    Err(denied())
                }
            }
            (None, Some(p)) if name.starts_with(&names::org_prefix(&p.org_id)) => Err(
                S3Error::with_message(S3ErrorCode::NoSuchBucket, "the bucket does not exist"),
            ),
            (Some(b), p) => {
                let caller = match &p {
                    Some(p) if !p.may(&b.id, write) => return Err(denied()),
                    Some(p) => Caller::Org(&p.org_id),
                    None => Caller::Anonymous,
                };
                if !self.granted(&b, caller, need).await? {
                    return Err(denied());
                }
                Ok((p.unwrap_or_else(|| Principal::anonymous(&b.org_id)), b))
            }
            _ => Err(denied()),
        }
    }

    /// Whether the ACLs grant `caller` (outside the organisation) `need`;
    /// grants to everyone count unless the bucket's public access block
    /// ignores them. A bucket everyone may READ also serves its objects to
    /// unsigned requests (Plateau's rule for public buckets serving static
    /// sites to browsers); a signed request reads an object as its own ACL
    /// says, as in S3. A bucket whose
    /// ownership controls enforce the bucket owner has no ACLs.
    async fn granted(&self, b: &Bucket, caller: Caller<'_>, need: Need<'_>) -> S3Result<bool> {
        if ownership::of(self, b).await?.as_deref() == Some(ownership::ENFORCED) {
            return Ok(false);
        }
        let public = !public_block::of(self, b).await?.ignore_public_acls;
        let bucket_acl = acl::of_bucket(self, b).await?;
        match need {
            Need::Owner => Ok(false),
            Need::Bucket(permission) => Ok(bucket_acl.allows(caller, permission, public)),
            Need::Object(_, _, Permission::Read)
                if matches!(caller, Caller::Anonymous)
                    && bucket_acl.allows(caller, Permission::Read, public) =>
            {
                Ok(true)
            }
            Need::Object(key, version, permission) => {
                match self.storage.provider().open(b, key, version).await {
                    Ok(found) => {
                        Ok(acl::of_object(&found.info, b).allows(caller, permission, public))
                    }
                    Err(Error::NoSuchKey | Error::DeletedKey | Error::NoSuchVersion) => Ok(false),
                    Err(Error::DeleteMarker(_)) => Ok(false),
                    Err(e) => Err(internal(e)),
                }
            }
        }
    }
}

/// What an operation needs of a caller outside the bucket's organisation.
#[derive(Clone, Copy)]
pub(super) enum Need<'a> {
    /// Nothing grants it: the organisation's own keys only.
    Owner,
    /// A grant on the bucket.
    Bucket(Permission),
    /// A grant on a version of an object (the current one for None).
    Object(&'a str, Option<&'a str>, Permission),
}

/// Requests reach [`Front`] signed or not: it decides, per operation,
/// what an unsigned request may do (what the ACLs grant everyone).
pub(super) struct Access;

#[async_trait::async_trait]
impl s3s::access::S3Access for Access {
    async fn check(&self, _cx: &mut s3s::access::S3AccessContext<'_>) -> S3Result<()> {
        Ok(())
    }
}
