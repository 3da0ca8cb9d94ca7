//! Lifecycle rules of a bucket (PutBucketLifecycleConfiguration), kept as
//! its `lifecycle` setting in the shape below, and what they select. The
//! elements Plateau acts on: expiration of current objects after N days or
//! at a date, removal of expired delete markers, expiration of noncurrent
//! versions N days after they stopped being current, and abort of
//! multipart uploads N days after they began; filters by prefix, tags and
//! size. Any other element (transitions, NewerNoncurrentVersions) is
//! refused when the rules are set, never stored and ignored.
//!
//! [`run`] applies the rules of every bucket, as a job leased in the
//! database.

pub mod run;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::provider::ObjectInfo;

/// How a rule's filter was written, to give it back as it was set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FilterForm {
    /// The legacy `Prefix` element of the rule.
    #[default]
    Legacy,
    /// `Filter` with a single condition (or none).
    Single,
    /// `Filter` with `And`.
    And,
}

/// One rule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Rule {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub enabled: bool,
    pub form: FilterForm,
    pub prefix: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_greater_than: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_less_than: Option<i64>,
    /// Current objects expire this many days after their last change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration_days: Option<i64>,
    /// ... or from this time on (milliseconds since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration_date: Option<i64>,
    /// A delete marker with no other version left is removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expired_object_delete_marker: Option<bool>,
    /// Noncurrent versions are removed this many days after they stopped
    /// being current.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noncurrent_days: Option<i64>,
    /// Multipart uploads are aborted this many days after they began.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abort_upload_days: Option<i64>,
}

/// The rules of a bucket.
pub type Rules = Vec<Rule>;

impl Rule {
    /// Whether the rule's filter selects an object (its key, size and tags).
    pub fn selects(&self, info: &ObjectInfo) -> bool {
        self.selects_key(&info.key)
            && self.size_greater_than.is_none_or(|n| info.size as i64 > n)
            && self.size_less_than.is_none_or(|n| (info.size as i64) < n)
            && self
                .tags
                .iter()
                .all(|(k, v)| info.headers.tags.get(k) == Some(v))
    }

    /// Whether the rule's filter can select what has only a key (a
    /// delete marker, an upload): its prefix matches and it asks nothing else.
    pub fn selects_key(&self, key: &str) -> bool {
        key.starts_with(&self.prefix)
    }

    /// Whether the filter looks at more than keys (tags or sizes).
    pub fn filters_content(&self) -> bool {
        !self.tags.is_empty() || self.size_greater_than.is_some() || self.size_less_than.is_some()
    }
}

/// Whether a thing of `age_from` (ms) is `days` days old at `now`, with
/// days of `day_ms` milliseconds.
pub fn older_than(age_from: i64, days: i64, now: i64, day_ms: i64) -> bool {
    age_from.saturating_add(days.saturating_mul(day_ms)) <= now
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_select_by_prefix_tags_and_size() {
        let mut info = ObjectInfo {
            key: "logs/a".to_owned(),
            size: 10,
            etag: String::new(),
            modified_at: 0,
            headers: Default::default(),
            segments: Vec::new(),
            version_id: None,
        };
        let mut rule = Rule {
            prefix: "logs/".to_owned(),
            ..Default::default()
        };
        assert!(rule.selects(&info));
        rule.tags.insert("keep".to_owned(), "no".to_owned());
        assert!(!rule.selects(&info));
        info.headers.tags.insert("keep".to_owned(), "no".to_owned());
        assert!(rule.selects(&info));
        rule.size_greater_than = Some(10);
        assert!(!rule.selects(&info));
        rule.size_greater_than = Some(9);
        rule.size_less_than = Some(11);
        assert!(rule.selects(&info));
        info.key = "data/a".to_owned();
        assert!(!rule.selects(&info));
        assert!(older_than(1_000, 2, 3_000, 1_000));
        assert!(!older_than(1_000, 2, 2_999, 1_000));
    }
}
