//! [`Provider`] on the local provider: buckets and single objects here,
//! listings, settings and multipart uploads in their modules.

use async_trait::async_trait;
use plateau_core::{id::new_id, time};
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::storage::{self, buckets, objects};
use serde_json::json;

use super::objects::{info, read_segments, segments, take_digests};
use super::{LocalProvider, conditions, list, multipart, settings, versions};
use crate::blobs::Blobs;
use crate::error::{Error, Result};
use crate::names;
use crate::provider::*;

#[async_trait]
impl Provider for LocalProvider {
    async fn create_bucket(
        &self,
        org_id: &str,
        project_id: Option<String>,
        name: &str,
        s3_name: Option<&str>,
        actor: &Actor,
    ) -> Result<Bucket> {
        let (name, full) = match s3_name {
            Some(full) => {
                if names::check_s3_name(org_id, full).is_err() {
                    return Err(Error::InvalidArgument(format!(
                        "{full} is not a bucket name of this organisation"
                    )));
                }
                (full, full.to_owned())
            }
            None => {
                if let Some(problem) = names::check_name(name) {
                    return Err(Error::InvalidArgument(problem));
                }
                (name, names::bucket_name(org_id, name))
            }
        };
        let now = time::now_ms();
        let bucket = Bucket {
            id: new_id("bkt"),
            org_id: org_id.to_owned(),
            project_id,
            name: name.to_owned(),
            bucket: full,
            bytes: 0,
            objects: 0,
            created_at: now,
        };
        let mut tx = self.db.begin().await?;
        if let Err(e) = buckets::insert(&mut tx, &bucket).await {
            return Err(if e.is_unique_violation() {
                Error::NameTaken(name.to_owned())
            } else {
                e.into()
            });
        }
        let event = NewEvent::audited(
            org_id,
            "storage.bucket.created",
            "resources",
            "create",
            actor,
        )
        .resource("storage_bucket", &bucket.id)
        .data(json!({ "name": bucket.name, "bucket": bucket.bucket }));
        events::record(&mut tx, &event, now).await?;
        tx.commit_last().await?;
        Ok(bucket)
    }

    async fn delete_bucket(&self, bucket: &Bucket, actor: &Actor) -> Result<()> {
        let mut tx = self.db.begin().await?;
        if !buckets::delete(&mut tx, &bucket.org_id, &bucket.id).await? {
            return Err(Error::BucketNotEmpty);
        }
        let event = NewEvent::audited(
            &bucket.org_id,
            "storage.bucket.deleted",
            "resources",
            "delete",
            actor,
        )
        .resource("storage_bucket", &bucket.id)
        .data(json!({ "name": bucket.name, "bucket": bucket.bucket }));
        events::record(&mut tx, &event, time::now_ms()).await?;
        tx.commit_last().await?;
        self.buckets.forget(&bucket.bucket);
        Ok(())
    }

    async fn bucket_by_name(&self, name: &str) -> Result<Option<Bucket>> {
        if let Some(bucket) = self.buckets.get(name) {
            return Ok(Some(bucket));
        }
        let found = buckets::by_name(&self.db, name).await?;
        if let Some(bucket) = &found {
            self.buckets.insert(bucket);
        }
        Ok(found)
    }

    async fn buckets(&self, org_id: &str) -> Result<Vec<Bucket>> {
        Ok(buckets::all(&self.db, org_id).await?)
    }

    async fn usage(&self, org_id: &str) -> Result<Usage> {
        Ok(storage::usage(&self.db, org_id).await?)
    }

    async fn put_object(
        &self,
        bucket: &Bucket,
        key: &str,
        upload: Upload,
        headers: ObjectHeaders,
        actor: &Actor,
    ) -> Result<ObjectInfo> {
        let room = self
            .room(&bucket.org_id, Some((bucket.id.as_str(), key)))
            .await?;
        conditions::holds(&self.db, &bucket.id, key, &upload.condition).await?;
        let condition = upload.condition.clone();
        let digests = upload.digests.clone();
        let blob = Blobs::object_key(&bucket.id);
        let written = self.write(&blob, upload, &room, room.replaced).await?;
        let (checksums, etag) = take_digests(&digests);
        let mut headers = headers;
        headers.checksums.extend(checksums);
        let row = objects::Object {
            bucket_id: bucket.id.clone(),
            key: key.to_owned(),
            size: written.size as i64,
            etag: etag.unwrap_or_else(|| hex::encode(written.md5)),
            blobs: serde_json::to_string(&[(&blob, written.size)]).unwrap_or_default(),
            headers: serde_json::to_string(&headers).unwrap_or_default(),
            modified_at: time::now_ms(),
            version_id: new_id("v"),
        };
        self.commit_object(bucket, row, room, actor, vec![blob], &condition)
            .await
    }

    async fn head_object(&self, bucket: &Bucket, key: &str) -> Result<ObjectInfo> {
        Ok(info(self.object_row(bucket, key).await?))
    }

    async fn get_object(&self, bucket: &Bucket, key: &str) -> Result<Opened> {
        let row = self.object_row(bucket, key).await?;
        let parts = segments(&row.blobs);
        let blobs = self.blobs.clone();
        Ok(Opened::new(info(row), move |want| {
            read_segments(blobs, parts, want)
        }))
    }

    async fn open_version(&self, bucket: &Bucket, key: &str, version: &str) -> Result<Opened> {
        let row = versions::row(self, bucket, key, version).await?;
        let parts = segments(&row.blobs);
        let blobs = self.blobs.clone();
        let mut found = info(row);
        found.version_id = Some(version.to_owned());
        Ok(Opened::new(found, move |want| {
            read_segments(blobs, parts, want)
        }))
    }

    async fn delete_version(
        &self,
        bucket: &Bucket,
        key: &str,
        version: Option<&str>,
        bypass: bool,
        condition: &DeleteCondition,
        actor: &Actor,
    ) -> Result<Option<Deleted>> {
        let checked =
            conditions::check_delete(&self.locks, &self.db, bucket, key, version, condition);
        let _held = match checked.await? {
            conditions::Verdict::Go(held) => held,
            conditions::Verdict::Nothing => return Ok(None),
        };
        versions::delete(self, bucket, key, version, bypass, actor).await
    }

    async fn list_versions(
        &self,
        bucket: &Bucket,
        query: &ListQuery,
        version_after: Option<&str>,
    ) -> Result<VersionListing> {
        versions::list(self, bucket, query, version_after).await
    }

    async fn copy_object(
        &self,
        from: (&Bucket, &str, Option<&str>),
        to: (&Bucket, &str),
        headers: Option<ObjectHeaders>,
        actor: &Actor,
    ) -> Result<ObjectInfo> {
        let source = match from.2 {
            None => self.object_row(from.0, from.1).await?,
            Some(v) => versions::row(self, from.0, from.1, v).await?,
        };
        let room = self
            .room(&to.0.org_id, Some((to.0.id.as_str(), to.1)))
            .await?;
        if room.used - room.replaced + source.size > room.limit {
            return Err(Error::QuotaExceeded(room.message));
        }
        let mut copied = Vec::new();
        for (blob, size) in segments(&source.blobs) {
            let key = Blobs::object_key(&to.0.id);
            if let Err(e) = self.blobs.copy(&blob, &key).await {
                self.blobs
                    .delete_all(copied.into_iter().map(|(k, _)| k))
                    .await;
                return Err(e);
            }
            copied.push((key, size));
        }
        let keys: Vec<String> = copied.iter().map(|(k, _)| k.clone()).collect();
        let row = objects::Object {
            bucket_id: to.0.id.clone(),
            key: to.1.to_owned(),
            size: source.size,
            etag: source.etag,
            blobs: serde_json::to_string(&copied).unwrap_or_default(),
            headers: match headers {
                Some(h) => serde_json::to_string(&h).unwrap_or_default(),
                None => source.headers,
            },
            modified_at: time::now_ms(),
            version_id: new_id("v"),
        };
        self.commit_object(to.0, row, room, actor, keys, &Condition::default())
            .await
    }

    async fn list_objects(&self, bucket: &Bucket, query: &ListQuery) -> Result<Listing> {
        list::list(&self.db, bucket, query).await
    }

    async fn change_headers(
        &self,
        bucket: &Bucket,
        key: &str,
        change: HeaderChange,
    ) -> Result<ObjectInfo> {
        settings::change_headers(self, bucket, key, change).await
    }

    async fn change_version(
        &self,
        bucket: &Bucket,
        key: &str,
        version: Option<&str>,
        change: VersionChange,
    ) -> Result<ObjectInfo> {
        settings::change_version(self, bucket, key, version, change).await
    }

    async fn bucket_setting(&self, bucket: &Bucket, kind: &str) -> Result<Option<String>> {
        Ok(storage::settings::get(&self.db, &bucket.id, kind).await?)
    }

    async fn bucket_settings(
        &self,
        bucket: &Bucket,
    ) -> Result<std::collections::BTreeMap<String, String>> {
        Ok(storage::settings::all(&self.db, &bucket.id)
            .await?
            .into_iter()
            .collect())
    }

    async fn set_bucket_setting(&self, b: &Bucket, kind: &str, body: Option<&str>) -> Result<bool> {
        settings::set(self, b, kind, body).await
    }

    async fn create_upload(
        &self,
        bucket: &Bucket,
        key: &str,
        headers: ObjectHeaders,
    ) -> Result<UploadInfo> {
        multipart::create(self, bucket, key, headers).await
    }

    async fn upload_part(
        &self,
        bucket: &Bucket,
        upload_id: &str,
        number: i64,
        upload: Upload,
    ) -> Result<PartInfo> {
        multipart::upload_part(self, bucket, upload_id, number, upload).await
    }

    async fn complete_upload(
        &self,
        bucket: &Bucket,
        upload_id: &str,
        parts: &[(i64, String)],
        condition: &Condition,
        actor: &Actor,
    ) -> Result<ObjectInfo> {
        multipart::complete(self, bucket, upload_id, parts, condition, actor).await
    }

    async fn abort_upload(&self, bucket: &Bucket, upload_id: &str) -> Result<()> {
        multipart::abort(self, bucket, upload_id).await
    }

    async fn upload(&self, bucket: &Bucket, upload_id: &str) -> Result<UploadInfo> {
        multipart::get(self, bucket, upload_id)
            .await
            .map(multipart::upload_info)
    }

    async fn list_parts(
        &self,
        bucket: &Bucket,
        upload_id: &str,
        after: i64,
        max: usize,
    ) -> Result<(Vec<PartInfo>, bool)> {
        multipart::list_parts(self, bucket, upload_id, after, max).await
    }

    async fn list_uploads(
        &self,
        bucket: &Bucket,
        prefix: &str,
        after: (&str, &str),
        max: usize,
    ) -> Result<(Vec<UploadInfo>, bool)> {
        multipart::list_uploads(self, bucket, prefix, after, max).await
    }
}
