//! PutBucketLifecycleConfiguration, GetBucketLifecycleConfiguration and
//! DeleteBucketLifecycle: the rules checked and kept in
//! [`crate::lifecycle::Rule`]'s shape, and given back as they were set.
//! An element the job does not act on (transitions,
//! NewerNoncurrentVersions) is refused with NotImplemented.

use std::collections::HashSet;

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, s3_error, timestamp};
use crate::lifecycle::{FilterForm, Rule, Rules};

const SETTING: &str = plateau_store::storage::lifecycle::SETTING;

fn err(code: S3ErrorCode, message: &str) -> S3Error {
    S3Error::with_message(code, message.to_owned())
}

/// A number of days, which must be positive.
fn days(n: Option<i32>, field: &str) -> S3Result<Option<i64>> {
    match n {
        Some(d) if d <= 0 => Err(err(
            S3ErrorCode::InvalidArgument,
            &format!("{field}: must be a positive number of days"),
        )),
        d => Ok(d.map(i64::from)),
    }
}

fn tags_of(set: &[Tag]) -> std::collections::BTreeMap<String, String> {
    set.iter()
        .map(|t| {
            let key = t.key.clone().unwrap_or_default();
            (key, t.value.clone().unwrap_or_default())
        })
        .collect()
}

fn rule_of(r: &LifecycleRule) -> S3Result<Rule> {
    if r.transitions.as_ref().is_some_and(|t| !t.is_empty())
        || r.noncurrent_version_transitions
            .as_ref()
            .is_some_and(|t| !t.is_empty())
    {
        return Err(err(
            S3ErrorCode::NotImplemented,
            "Transition: Plateau has one storage class; transitions are not supported",
        ));
    }
    let mut rule = Rule {
        id: r.id.clone(),
        enabled: match r.status.as_str() {
            ExpirationStatus::ENABLED => true,
            ExpirationStatus::DISABLED => false,
            _ => {
                return Err(err(
                    S3ErrorCode::MalformedXML,
                    "Status: Enabled or Disabled",
                ));
            }
        },
        ..Default::default()
    };
    match (&r.prefix, &r.filter) {
        (Some(_), Some(_)) => {
            return Err(err(
                S3ErrorCode::MalformedXML,
                "Prefix and Filter: give one, not both",
            ));
        }
        (prefix, None) => rule.prefix = prefix.clone().unwrap_or_default(),
        (None, Some(f)) => match &f.and {
            Some(and) => {
                rule.form = FilterForm::And;
                rule.prefix = and.prefix.clone().unwrap_or_default();
                rule.tags = tags_of(and.tags.as_deref().unwrap_or_default());
                rule.size_greater_than = and.object_size_greater_than;
                rule.size_less_than = and.object_size_less_than;
            }
            None => {
                rule.form = FilterForm::Single;
                rule.prefix = f.prefix.clone().unwrap_or_default();
                rule.tags = tags_of(f.tag.as_slice());
                rule.size_greater_than = f.object_size_greater_than;
                rule.size_less_than = f.object_size_less_than;
            }
        },
    }
    if let Some(e) = &r.expiration {
        rule.expiration_days = days(e.days, "Expiration.Days")?;
        if let Some(date) = &e.date {
            let t: time::OffsetDateTime = date.clone().into();
            if t.time() != time::Time::MIDNIGHT || t.offset() != time::UtcOffset::UTC {
                return Err(err(
                    S3ErrorCode::InvalidArgument,
                    "Expiration.Date: must be midnight UTC",
                ));
            }
            rule.expiration_date = Some((t.unix_timestamp_nanos() / 1_000_000) as i64);
        }
        rule.expired_object_delete_marker = e.expired_object_delete_marker;
        if [
            rule.expiration_days.is_some(),
            rule.expiration_date.is_some(),
            rule.expired_object_delete_marker.is_some(),
        ]
        .iter()
        .filter(|x| **x)
        .count()
            > 1
        {
            return Err(err(
                S3ErrorCode::MalformedXML,
                "Expiration: give one of Days, Date and ExpiredObjectDeleteMarker",
            ));
        }
    }
    if let Some(n) = &r.noncurrent_version_expiration {
        if n.newer_noncurrent_versions.is_some() {
            return Err(err(
                S3ErrorCode::NotImplemented,
                "NoncurrentVersionExpiration.NewerNoncurrentVersions is not supported",
            ));
        }
        rule.noncurrent_days = days(
            n.noncurrent_days,
            "NoncurrentVersionExpiration.NoncurrentDays",
        )?;
    }
    if let Some(a) = &r.abort_incomplete_multipart_upload {
        rule.abort_upload_days = days(
            a.days_after_initiation,
            "AbortIncompleteMultipartUpload.DaysAfterInitiation",
        )?;
    }
    Ok(rule)
}

pub(super) async fn put(
    front: &Front,
    req: S3Request<PutBucketLifecycleConfigurationInput>,
) -> S3Result<S3Response<PutBucketLifecycleConfigurationOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let Some(config) = &req.input.lifecycle_configuration else {
        return Err(err(
            S3ErrorCode::MalformedXML,
            "LifecycleConfiguration: required",
        ));
    };
    if config.rules.is_empty() || config.rules.len() > 1000 {
        return Err(err(
            S3ErrorCode::MalformedXML,
            "Rule: between 1 and 1000 rules",
        ));
    }
    let mut ids = HashSet::new();
    let mut rules: Rules = Vec::new();
    for r in &config.rules {
        if let Some(id) = &r.id {
            if id.len() > 255 {
                return Err(err(
                    S3ErrorCode::InvalidArgument,
                    "ID: at most 255 characters",
                ));
            }
            if !ids.insert(id.clone()) {
                return Err(err(
                    S3ErrorCode::InvalidArgument,
                    "ID: each rule needs its own",
                ));
            }
        }
        rules.push(rule_of(r)?);
    }
    // A rule given without ID gets one, as S3 makes one up.
    for (rule, n) in rules.iter_mut().filter(|r| r.id.is_none()).zip(1..) {
        let mut id = format!("rule-{n}");
        while ids.contains(&id) {
            id.push('-');
        }
        ids.insert(id.clone());
        rule.id = Some(id);
    }
    let body = serde_json::to_string(&rules)
        .map_err(|e| err(S3ErrorCode::InternalError, &e.to_string()))?;
    front.put_setting(&bucket, SETTING, Some(&body)).await?;
    Ok(S3Response::new(
        PutBucketLifecycleConfigurationOutput::default(),
    ))
}

fn tag_list(rule: &Rule) -> Vec<Tag> {
    rule.tags
        .iter()
        .map(|(k, v)| Tag {
            key: Some(k.clone()),
            value: Some(v.clone()),
        })
        .collect()
}

fn dto(rule: &Rule) -> LifecycleRule {
    let (prefix, filter) = match rule.form {
        FilterForm::Legacy => (Some(rule.prefix.clone()), None),
        FilterForm::Single => {
            let content = rule.filters_content();
            let filter = LifecycleRuleFilter {
                prefix: (!rule.prefix.is_empty() || !content).then(|| rule.prefix.clone()),
                tag: tag_list(rule).into_iter().next(),
                object_size_greater_than: rule.size_greater_than,
                object_size_less_than: rule.size_less_than,
                ..Default::default()
            };
            (None, Some(filter))
        }
        FilterForm::And => {
            let and = LifecycleRuleAndOperator {
                prefix: (!rule.prefix.is_empty()).then(|| rule.prefix.clone()),
                tags: (!rule.tags.is_empty()).then(|| tag_list(rule)),
                object_size_greater_than: rule.size_greater_than,
                object_size_less_than: rule.size_less_than,
            };
            let filter = LifecycleRuleFilter {
                and: Some(and),
                ..Default::default()
            };
            (None, Some(filter))
        }
    };
    let expiration = (rule.expiration_days.is_some()
        || rule.expiration_date.is_some()
        || rule.expired_object_delete_marker.is_some())
    .then(|| LifecycleExpiration {
        days: rule.expiration_days.map(|d| d as i32),
        date: rule.expiration_date.map(timestamp),
        expired_object_delete_marker: rule.expired_object_delete_marker,
    });
    LifecycleRule {
        id: rule.id.clone(),
        status: ExpirationStatus::from_static(if rule.enabled {
            ExpirationStatus::ENABLED
        } else {
            ExpirationStatus::DISABLED
        }),
        prefix,
        filter,
        expiration,
        noncurrent_version_expiration: rule.noncurrent_days.map(|d| NoncurrentVersionExpiration {
            noncurrent_days: Some(d as i32),
            newer_noncurrent_versions: None,
        }),
        abort_incomplete_multipart_upload: rule.abort_upload_days.map(|d| {
            AbortIncompleteMultipartUpload {
                days_after_initiation: Some(d as i32),
            }
        }),
        noncurrent_version_transitions: None,
        transitions: None,
    }
}

pub(super) async fn get(
    front: &Front,
    req: S3Request<GetBucketLifecycleConfigurationInput>,
) -> S3Result<S3Response<GetBucketLifecycleConfigurationOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let found = front
        .storage
        .provider()
        .bucket_setting(&bucket, SETTING)
        .await
        .map_err(s3_error)?;
    let rules: Option<Rules> = found.and_then(|b| serde_json::from_str(&b).ok());
    let Some(rules) = rules else {
        return Err(err(
            S3ErrorCode::NoSuchLifecycleConfiguration,
            "the lifecycle configuration does not exist",
        ));
    };
    Ok(S3Response::new(GetBucketLifecycleConfigurationOutput {
        rules: Some(rules.iter().map(dto).collect()),
        ..Default::default()
    }))
}

pub(super) async fn delete(
    front: &Front,
    req: S3Request<DeleteBucketLifecycleInput>,
) -> S3Result<S3Response<DeleteBucketLifecycleOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    front.put_setting(&bucket, SETTING, None).await?;
    let mut out = S3Response::new(DeleteBucketLifecycleOutput::default());
    out.status = Some(http::StatusCode::NO_CONTENT);
    Ok(out)
}
