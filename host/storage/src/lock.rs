//! Object lock (S3's WORM): a version's retention (GOVERNANCE or
//! COMPLIANCE until a date) and legal hold, kept in its headers, and a
//! bucket's object lock configuration (the `object_lock` setting, with an
//! optional default retention). The rules of what they forbid live here,
//! for the S3 front, the API and the lifecycle job alike.
//!
//! **Invariant:** a version under a retention in force or a legal hold is
//! never deleted for good: the store refuses the delete inside its
//! transaction ([`protects_json`]), so a lock acknowledged before a
//! delete commits is always seen by it.

use serde::{Deserialize, Serialize};

use crate::provider::ObjectHeaders;

/// The bucket setting that holds the configuration (JSON [`Config`]);
/// present only on buckets with object lock enabled.
pub const SETTING: &str = "object_lock";

const DAY_MS: i64 = 86_400_000;

/// A retention mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Shortened or removed only with `x-amz-bypass-governance-retention`.
    #[serde(rename = "GOVERNANCE")]
    Governance,
    /// Never shortened or removed before its date.
    #[serde(rename = "COMPLIANCE")]
    Compliance,
}

impl Mode {
    /// The mode S3 names exactly (`GOVERNANCE`, `COMPLIANCE`).
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "GOVERNANCE" => Some(Mode::Governance),
            "COMPLIANCE" => Some(Mode::Compliance),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Governance => "GOVERNANCE",
            Mode::Compliance => "COMPLIANCE",
        }
    }
}

/// A version's retention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    pub mode: Mode,
    /// Milliseconds since the epoch.
    pub until: i64,
}

/// A bucket's default retention: `days` or `years` (one of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DefaultRetention {
    pub mode: Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub years: Option<i32>,
}

impl DefaultRetention {
    /// The retention a version written at `now` gets.
    pub fn at(&self, now: i64) -> Retention {
        let days = match (self.days, self.years) {
            (Some(d), _) => i64::from(d),
            (None, Some(y)) => i64::from(y) * 365,
            (None, None) => 0,
        };
        Retention {
            mode: self.mode,
            until: now.saturating_add(days.saturating_mul(DAY_MS)),
        }
    }
}

/// A bucket's object lock configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_retention: Option<DefaultRetention>,
}

impl Config {
    /// The configuration a setting's body holds.
    pub fn parse(body: &str) -> Config {
        serde_json::from_str(body).unwrap_or_default()
    }
}

/// Enables object lock on a bucket just made (without a default
/// retention), versioning with it, as S3's
/// `x-amz-bucket-object-lock-enabled` does at creation.
pub async fn enable_on_new(
    provider: &dyn crate::Provider,
    bucket: &crate::provider::Bucket,
) -> crate::Result<()> {
    use plateau_store::storage::versions;
    let enabled = serde_json::Value::from("Enabled").to_string();
    provider
        .set_bucket_setting(bucket, versions::SETTING, Some(&enabled))
        .await?;
    let config = serde_json::to_string(&Config::default())
        .map_err(|e| crate::Error::Internal(format!("object lock config: {e}")))?;
    provider
        .set_bucket_setting(bucket, SETTING, Some(&config))
        .await?;
    Ok(())
}

/// Whether a version with `headers` may not be deleted at `now`: a legal
/// hold, or a retention in force (GOVERNANCE yields to `bypass`).
pub fn protects(headers: &ObjectHeaders, now: i64, bypass: bool) -> bool {
    headers.legal_hold
        || headers
            .retention
            .is_some_and(|r| r.until > now && !(bypass && r.mode == Mode::Governance))
}

/// [`protects`] of a version's stored headers (JSON).
pub fn protects_json(headers: &str, now: i64, bypass: bool) -> bool {
    let headers: ObjectHeaders = serde_json::from_str(headers).unwrap_or_default();
    protects(&headers, now, bypass)
}

/// Whether `new` may replace a version's retention `old` at `now`: a
/// retention in force may be kept or extended in its mode; shortening,
/// removing it or changing its mode needs `bypass`, and only GOVERNANCE
/// yields to it.
pub fn may_replace(old: Option<Retention>, new: Option<Retention>, now: i64, bypass: bool) -> bool {
    let Some(old) = old.filter(|o| o.until > now) else {
        return true;
    };
    let weaker = match new {
        None => true,
        Some(n) => n.mode != old.mode || n.until < old.until,
    };
    !weaker || (bypass && old.mode == Mode::Governance)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(mode: Mode, until: i64) -> Option<Retention> {
        Some(Retention { mode, until })
    }

    #[test]
    fn retention_changes() {
        use Mode::*;
        // (old, new, bypass) -> allowed, at now = 100
        let cases = [
            (None, r(Compliance, 50), false, true),
            (r(Compliance, 50), None, false, true),
            (r(Governance, 200), r(Governance, 300), false, true),
            (r(Governance, 200), r(Governance, 150), false, false),
            (r(Governance, 200), r(Governance, 150), true, true),
            (r(Governance, 200), r(Compliance, 200), false, false),
            (r(Governance, 200), r(Compliance, 200), true, true),
            (r(Governance, 200), None, true, true),
            (r(Compliance, 200), r(Compliance, 300), false, true),
            (r(Compliance, 200), r(Compliance, 150), true, false),
            (r(Compliance, 200), r(Governance, 200), true, false),
            (r(Compliance, 200), None, true, false),
        ];
        for (old, new, bypass, want) in cases {
            assert_eq!(
                may_replace(old, new, 100, bypass),
                want,
                "{old:?} -> {new:?}"
            );
        }
    }

    #[test]
    fn what_protects_a_version() {
        let mut h = ObjectHeaders::default();
        assert!(!protects(&h, 100, false));
        h.retention = r(Mode::Governance, 200);
        assert!(protects(&h, 100, false));
        assert!(!protects(&h, 100, true));
        assert!(!protects(&h, 300, false));
        h.retention = r(Mode::Compliance, 200);
        assert!(protects(&h, 100, true));
        h.retention = None;
        h.legal_hold = true;
        assert!(protects(&h, 100, true));
        let json = serde_json::to_string(&h).unwrap();
        assert!(protects_json(&json, 100, true));
    }

    #[test]
    fn default_retention_in_days_or_years() {
        let d = DefaultRetention {
            mode: Mode::Governance,
            days: Some(2),
            years: None,
        };
        assert_eq!(d.at(0).until, 2 * DAY_MS);
        let y = DefaultRetention {
            mode: Mode::Compliance,
            days: None,
            years: Some(1),
        };
        assert_eq!(y.at(10).until, 10 + 365 * DAY_MS);
    }
}
