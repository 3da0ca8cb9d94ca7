//! Who a request is and what it reaches: [`Auth`] gives `s3s` a key's
//! secret, [`Access`] lets every request through to [`Front`], which
//! resolves each bucket with tenant isolation ([`Front::access`]).

use s3s::auth::{S3Auth, SecretKey};
use s3s::{S3Error, S3ErrorCode, S3Request, S3Result};

use super::{Front, acl};
use super::{denied, internal};
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

    /// The bucket `name`, if the caller's key may read (or write) it.
    pub(super) async fn bucket<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
        write: bool,
    ) -> S3Result<(Principal, Bucket)> {
        self.access(req, name, write, None).await
    }

    /// The bucket `name`, to read the object `key`: as [`Front::bucket`],
    /// and also when the object is public-read.
    pub(super) async fn object_reader<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
        key: &str,
    ) -> S3Result<(Principal, Bucket)> {
        self.access(req, name, false, Some(key)).await
    }

    /// A key reaches its organisation's buckets as far as its limits let
    /// it; anyone (no signature, or another organisation's key) reads a
    /// public-read bucket or object ([`acl`]) and writes nothing.
    async fn access<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
        write: bool,
        key: Option<&str>,
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
            (Some(b), p) if !write && self.public(&b, key).await? => {
                Ok((p.unwrap_or_else(|| Principal::anonymous(&b.org_id)), b))
            }
            _ => Err(denied()),
        }
    }

    /// Whether the bucket, or the object `key` in it, is public-read.
    async fn public(&self, bucket: &Bucket, key: Option<&str>) -> S3Result<bool> {
        if acl::of_bucket(self, bucket).await?.as_deref() == Some(acl::PUBLIC_READ) {
            return Ok(true);
        }
        let Some(key) = key else {
            return Ok(false);
        };
        match self.storage.provider().head_object(bucket, key).await {
            Ok(info) => Ok(info.headers.acl.as_deref() == Some(acl::PUBLIC_READ)),
            Err(Error::NoSuchKey) => Ok(false),
            Err(e) => Err(internal(e)),
        }
    }
}

/// Requests reach [`Front`] signed or not: it decides, per operation,
/// what an unsigned request may read (public-read buckets and objects).
pub(super) struct Access;

#[async_trait::async_trait]
impl s3s::access::S3Access for Access {
    async fn check(&self, _cx: &mut s3s::access::S3AccessContext<'_>) -> S3Result<()> {
        Ok(())
    }
}
