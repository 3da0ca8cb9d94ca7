//! Cookieless visitors: a visitor is the SHA-256 of the day's salt, the
//! site, the client's address and its user agent, cut to 16 hex digits.
//! The salt is 256 random bits made by the first page view of a UTC day
//! and kept in the plugin's global bucket under that day; making it
//! deletes every older salt in the same claim, so once a day is over its
//! salt is gone and yesterday's visitors cannot be linked to today's, nor
//! a hash traced back to an address. The address itself is never stored.

use plateau_sdk::{ApiError, Bucket, ids};
use sha2::{Digest, Sha256};

use crate::day;

const PREFIX: &str = "salt/";

/// The salt of `day`, made (and older ones deleted) if it is the first
/// page view of the day; `None` once a later day's salt exists (the day
/// is over and its salt gone: a page view that late is not counted).
pub fn salt(day: i64) -> Result<Option<String>, ApiError> {
    let global = Bucket::global()?;
    let key = format!("{PREFIX}{}", day::key(day));
    for _ in 0..4 {
        if let Some(salt) = global.get_raw(&key)? {
            return Ok(Some(String::from_utf8_lossy(&salt).into_owned()));
        }
        let kept = global.list(PREFIX, None, 50)?.entries;
        if kept.iter().any(|e| e.key > key) {
            return Ok(None);
        }
        let stale: Vec<(String, Option<Vec<u8>>)> =
            kept.into_iter().map(|e| (e.key, None)).collect();
        let fresh = format!("{}{}", ids::token(), ids::token());
        if global.claim(&key, None, Some(fresh.as_bytes()), &stale)? {
            return Ok(Some(fresh));
        }
    }
    Err(ApiError::unavailable(
        "the day's salt is being made concurrently: retry the request",
    ))
}

/// The visitor of `(ip, user_agent)` on `site` under `salt`.
pub fn hash(salt: &str, site: &str, ip: &str, user_agent: &str) -> String {
    let mut h = Sha256::new();
    for part in [salt, site, ip, user_agent] {
        h.update((part.len() as u32).to_be_bytes());
        h.update(part.as_bytes());
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use plateau_sdk::testing;

    #[test]
    fn a_new_days_salt_deletes_the_old_ones() {
        testing::reset();
        let monday = salt(20_000).unwrap().unwrap();
        assert_eq!(salt(20_000).unwrap().unwrap(), monday);
        let tuesday = salt(20_001).unwrap().unwrap();
        assert_ne!(tuesday, monday);
        assert_eq!(salt(20_000).unwrap(), None, "monday is over");
        let keys: Vec<String> = Bucket::global()
            .unwrap()
            .list_all(PREFIX)
            .unwrap()
            .into_iter()
            .map(|e| e.key)
            .collect();
        assert_eq!(keys, [format!("{PREFIX}{}", day::key(20_001))]);
        let a = hash(&monday, "site_1", "203.0.113.9", "ua");
        assert_eq!(a.len(), 16);
        assert_ne!(a, hash(&tuesday, "site_1", "203.0.113.9", "ua"));
        assert_ne!(a, hash(&monday, "site_2", "203.0.113.9", "ua"));
    }
}
