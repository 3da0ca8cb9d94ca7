//! Multipart uploads on the local provider: each part is its own blob,
//! and completing records the object as the list of its parts' blobs, so
//! no byte is copied.

use std::collections::BTreeMap;

use md5::{Digest as _, Md5};
use plateau_core::{id::new_id, time};
use plateau_store::events::Actor;
use plateau_store::storage::{objects, uploads};
use serde_json::json;

use super::LocalProvider;
use super::objects::object_event;
use crate::blobs::Blobs;
use crate::error::{Error, Result};
use crate::provider::*;

/// The smallest part but the last (S3's rule).
const MIN_PART: i64 = 5 * 1024 * 1024;
const MAX_PARTS: i64 = 10_000;

pub(super) fn upload_info(u: uploads::Upload) -> UploadInfo {
    UploadInfo {
        id: u.id,
        key: u.key,
        created_at: u.created_at,
        headers: serde_json::from_str(&u.headers).unwrap_or_default(),
    }
}

fn part_info(p: uploads::Part) -> PartInfo {
    PartInfo {
        number: p.part_number,
        size: p.size.max(0) as u64,
        etag: p.etag,
        modified_at: p.modified_at,
        checksums: serde_json::from_str(&p.checksums).unwrap_or_default(),
    }
}

pub(super) async fn get(
    provider: &LocalProvider,
    bucket: &Bucket,
    id: &str,
) -> Result<uploads::Upload> {
    uploads::get(&provider.db, &bucket.id, id)
        .await?
        .ok_or(Error::NoSuchUpload)
}

pub(super) async fn create(
    provider: &LocalProvider,
    bucket: &Bucket,
    key: &str,
    headers: ObjectHeaders,
) -> Result<UploadInfo> {
    let upload = uploads::Upload {
        id: new_id("upl"),
        bucket_id: bucket.id.clone(),
        org_id: bucket.org_id.clone(),
        key: key.to_owned(),
        headers: serde_json::to_string(&headers).unwrap_or_default(),
        created_at: time::now_ms(),
    };
    let mut tx = provider.db.begin().await?;
    uploads::create(&mut tx, &upload).await?;
    tx.commit().await?;
    Ok(upload_info(upload))
}

pub(super) async fn upload_part(
    provider: &LocalProvider,
    bucket: &Bucket,
    upload_id: &str,
    number: i64,
    upload: Upload,
) -> Result<PartInfo> {
    if !(1..=MAX_PARTS).contains(&number) {
        return Err(Error::InvalidArgument(format!(
            "part number must be between 1 and {MAX_PARTS}"
        )));
    }
    get(provider, bucket, upload_id).await?;
    let freed = uploads::parts(&provider.db, upload_id, number - 1, 1)
        .await?
        .into_iter()
        .find(|p| p.part_number == number)
        .map_or(0, |p| p.size);
    let blob = Blobs::part_key(upload_id, number);
    let room = provider.room(&bucket.org_id, None).await?;
    let digests = upload.digests.clone();
    let written = provider.write(&blob, upload, &room, freed).await?;
    let (checksums, etag) = super::take_digests(&digests);
    let part = uploads::Part {
        upload_id: upload_id.to_owned(),
        part_number: number,
        size: written.size as i64,
        etag: etag.unwrap_or_else(|| hex::encode(written.md5)),
        blob: blob.clone(),
        checksums: serde_json::to_string(&checksums).unwrap_or_else(|_| "{}".to_owned()),
        modified_at: time::now_ms(),
    };
    let mut tx = provider.db.begin().await?;
    match uploads::put_part(&mut tx, &bucket.org_id, &part, room.limit).await {
        Ok(old) => {
            tx.commit().await?;
            if let Some(old) = old {
                provider.blobs.delete_all([old.blob]).await;
            }
            Ok(part_info(part))
        }
        Err(e) => {
            drop(tx);
            provider.blobs.delete_all([blob]).await;
            Err(Error::from_write(e, || room.message))
        }
    }
}

pub(super) async fn complete(
    provider: &LocalProvider,
    bucket: &Bucket,
    upload_id: &str,
    chosen: &[(i64, String)],
    condition: &Condition,
    actor: &Actor,
) -> Result<ObjectInfo> {
    let upload = get(provider, bucket, upload_id).await?;
    if chosen.is_empty() {
        return Err(Error::InvalidPart(
            "name at least one part to complete an upload".to_owned(),
        ));
    }
    if chosen.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Err(Error::InvalidPartOrder);
    }
    let stored = uploads::parts(&provider.db, upload_id, 0, MAX_PARTS + 1).await?;
    let mut used = Vec::with_capacity(chosen.len());
    for (i, (number, etag)) in chosen.iter().enumerate() {
        let etag = etag.trim_matches('"');
        let part = stored
            .iter()
            .find(|p| p.part_number == *number && p.etag == etag)
            .ok_or_else(|| {
                Error::InvalidPart(format!(
                    "part {number} with entity tag {etag:?} was not uploaded"
                ))
            })?;
        if i + 1 < chosen.len() && part.size < MIN_PART {
            return Err(Error::EntityTooSmall);
        }
        used.push(part);
    }
    let mut md5 = Md5::new();
    for part in &used {
        md5.update(hex::decode(&part.etag).unwrap_or_default());
    }
    let etag = format!("{}-{}", hex::encode(md5.finalize()), used.len());
    let mut headers: ObjectHeaders = serde_json::from_str(&upload.headers).unwrap_or_default();
    headers.upload_id = Some(upload_id.to_owned());
    headers.parts = used.iter().map(|p| p.part_number).collect();
    if let Some(algorithm) = &headers.checksum_algorithm {
        let sums: Vec<String> = used
            .iter()
            .map(|p| {
                let found: BTreeMap<String, String> =
                    serde_json::from_str(&p.checksums).unwrap_or_default();
                found.get(algorithm).cloned().unwrap_or_default()
            })
            .collect();
        if sums.iter().any(String::is_empty) {
            return Err(Error::InvalidPart(format!(
                "every part of an upload created with the {algorithm} checksum algorithm needs its checksum"
            )));
        }
        if let Some(sum) = crate::checksum::composite(algorithm, &sums) {
            headers.checksums.insert(algorithm.clone(), sum);
        }
    }
    let blobs: Vec<(&str, i64)> = used.iter().map(|p| (p.blob.as_str(), p.size)).collect();
    let numbers: Vec<i64> = used.iter().map(|p| p.part_number).collect();
    let row = objects::Object {
        bucket_id: bucket.id.clone(),
        key: upload.key.clone(),
        size: used.iter().map(|p| p.size).sum(),
        etag,
        blobs: serde_json::to_string(&blobs).unwrap_or_default(),
        headers: serde_json::to_string(&headers).unwrap_or_default(),
        modified_at: time::now_ms(),
        version_id: new_id("v"),
    };
    let held = super::conditions::check(
        &provider.locks,
        &provider.db,
        &bucket.id,
        &row.key,
        condition,
    )
    .await?;
    let event = object_event(bucket, &row.key, "storage.object.written", actor)
        .data(json!({ "bucket": bucket.bucket, "key": row.key, "size": row.size }));
    let mut tx = provider.db.begin().await?;
    let done = uploads::complete(&mut tx, &upload, &row, &numbers, &event)
        .await
        .map_err(|e| Error::from_write(e, String::new))?;
    tx.commit().await?;
    drop(held);
    let garbage: Vec<String> = done.unused.into_iter().map(|p| p.blob).collect();
    provider.blobs.delete_all(garbage).await;
    provider.delete_removed(&done.replaced.removed).await;
    let settled = done.replaced;
    let mut row = row;
    row.version_id = settled.version_id.clone();
    let mut made = super::info(row);
    made.version_id = settled.versioned.then_some(settled.version_id);
    Ok(made)
}

pub(super) async fn abort(
    provider: &LocalProvider,
    bucket: &Bucket,
    upload_id: &str,
) -> Result<()> {
    let upload = get(provider, bucket, upload_id).await?;
    let mut tx = provider.db.begin().await?;
    let parts = uploads::abort(&mut tx, &upload)
        .await
        .map_err(|e| Error::from_write(e, String::new))?;
    tx.commit().await?;
    provider
        .blobs
        .delete_all(parts.into_iter().map(|p| p.blob))
        .await;
    Ok(())
}

pub(super) async fn list_parts(
    provider: &LocalProvider,
    bucket: &Bucket,
    upload_id: &str,
    after: i64,
    max: usize,
) -> Result<(Vec<PartInfo>, bool)> {
    get(provider, bucket, upload_id).await?;
    let mut parts = uploads::parts(&provider.db, upload_id, after, max as i64 + 1).await?;
    let truncated = parts.len() > max;
    parts.truncate(max);
    Ok((parts.into_iter().map(part_info).collect(), truncated))
}

pub(super) async fn list_uploads(
    provider: &LocalProvider,
    bucket: &Bucket,
    prefix: &str,
    after: (&str, &str),
    max: usize,
) -> Result<(Vec<UploadInfo>, bool)> {
    let (mut key, mut id) = (after.0.to_owned(), after.1.to_owned());
    let mut found = Vec::new();
    loop {
        let batch = uploads::list(&provider.db, &bucket.id, &key, &id, 1000).await?;
        let full = batch.len() == 1000;
        for u in batch {
            (key, id) = (u.key.clone(), u.id.clone());
            if !u.key.starts_with(prefix) {
                continue;
            }
            if found.len() == max {
                return Ok((found, true));
            }
            found.push(upload_info(u));
        }
        if !full {
            return Ok((found, false));
        }
    }
}
