//! What a write requires of the object it replaces (`If-Match`,
//! `If-None-Match`), and what a delete requires of the version it deletes
//! (`If-Match`, `x-amz-if-match-last-modified-time`,
//! `x-amz-if-match-size`); the provider checks them when it commits.

/// What a write requires of the object it replaces, checked when it
/// commits.
#[derive(Clone, Debug, Default)]
pub struct Condition {
    /// The entity tag the current object must have (`*`: any object).
    pub if_match: Option<String>,
    /// The entity tag the current object must not have (`*`: there must
    /// be no current object).
    pub if_none_match: Option<String>,
}

fn same(want: &str, etag: &str) -> bool {
    want == "*" || want.trim_matches('"') == etag
}

impl Condition {
    pub fn is_empty(&self) -> bool {
        self.if_match.is_none() && self.if_none_match.is_none()
    }

    /// Whether a write may replace `current` (its entity tag, or None
    /// when there is no object).
    pub fn holds(&self, current: Option<&str>) -> bool {
        if let (Some(unwanted), Some(etag)) = (&self.if_none_match, current)
            && same(unwanted, etag)
        {
            return false;
        }
        match (&self.if_match, current) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(want), Some(etag)) => same(want, etag),
        }
    }
}

/// What a delete requires of the version it deletes (the current one, a
/// delete marker included, or the one named).
#[derive(Clone, Debug, Default)]
pub struct DeleteCondition {
    /// The entity tag (`*`: any version; a delete marker has none).
    pub etag: Option<String>,
    /// The last modification, in milliseconds (compared to the second).
    pub modified_at: Option<i64>,
    pub size: Option<u64>,
}

/// What a [`DeleteCondition`] is checked against.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// None for a delete marker.
    pub etag: Option<&'a str>,
    pub modified_at: i64,
    pub size: u64,
}

impl DeleteCondition {
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.modified_at.is_none() && self.size.is_none()
    }

    /// Whether the delete may go on: with no version to delete it may
    /// (deleting nothing fails nowhere, as in S3).
    pub fn holds(&self, target: Option<Target<'_>>) -> bool {
        let Some(t) = target else {
            return true;
        };
        let etag = match (&self.etag, t.etag) {
            (None, _) => true,
            (Some(want), Some(etag)) => same(want, etag),
            (Some(want), None) => want == "*",
        };
        let modified = self
            .modified_at
            .is_none_or(|ms| ms.div_euclid(1000) == t.modified_at.div_euclid(1000));
        etag && modified && self.size.is_none_or(|s| t.etag.is_some() && s == t.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_conditions() {
        let none_match = |e: &str| Condition {
            if_none_match: Some(e.to_owned()),
            ..Default::default()
        };
        assert!(!none_match("*").holds(Some("a")));
        assert!(none_match("*").holds(None));
        assert!(!none_match("\"a\"").holds(Some("a")));
        assert!(none_match("b").holds(Some("a")));
        let if_match = Condition {
            if_match: Some("a".into()),
            ..Default::default()
        };
        assert!(if_match.holds(Some("a")) && !if_match.holds(Some("b")) && !if_match.holds(None));
    }

    #[test]
    fn delete_conditions() {
        let version = Target {
            etag: Some("a"),
            modified_at: 1_700_000_000_500,
            size: 0,
        };
        let marker = Target {
            etag: None,
            ..version
        };
        let etag = |e: &str| DeleteCondition {
            etag: Some(e.to_owned()),
            ..Default::default()
        };
        assert!(etag("\"a\"").holds(Some(version)));
        assert!(!etag("b").holds(Some(version)));
        assert!(etag("*").holds(Some(marker)));
        assert!(!etag("b").holds(Some(marker)));
        assert!(etag("b").holds(None));
        let at = |ms| DeleteCondition {
            modified_at: Some(ms),
            ..Default::default()
        };
        assert!(at(1_700_000_000_000).holds(Some(version)));
        assert!(!at(1_420_070_400_000).holds(Some(version)));
        let size = |s| DeleteCondition {
            size: Some(s),
            ..Default::default()
        };
        assert!(size(0).holds(Some(version)));
        assert!(!size(9999).holds(Some(version)));
        assert!(!size(0).holds(Some(marker)));
    }
}
