//! What a write requires of the object it replaces (`If-Match`,
//! `If-None-Match: *`), checked by the provider when the write commits.

/// What a write requires of the object it replaces (`If-Match`,
/// `If-None-Match: *`), checked when it commits.
#[derive(Clone, Debug, Default)]
pub struct Condition {
    /// The entity tag the current object must have (`*`: any object).
    pub if_match: Option<String>,
    /// There must be no current object.
    pub if_none_match: bool,
}

impl Condition {
    pub fn is_empty(&self) -> bool {
        self.if_match.is_none() && !self.if_none_match
    }

    /// Whether a write may replace `current` (its entity tag, or None
    /// when there is no object).
    pub fn holds(&self, current: Option<&str>) -> bool {
        if self.if_none_match && current.is_some() {
            return false;
        }
        match (&self.if_match, current) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(want), Some(etag)) => want == "*" || want.trim_matches('"') == etag,
        }
    }
}
