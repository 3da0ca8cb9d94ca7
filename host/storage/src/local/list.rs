//! Listing objects in key order, with prefixes rolled up at a delimiter
//! (ListObjectsV2 and ListObjects).

use plateau_store::Db;
use plateau_store::storage::objects;

use super::info;
use crate::error::Result;
use crate::provider::{Bucket, ListQuery, Listing};

/// Rows read per query.
const BATCH: i64 = 1000;

/// Above every key that starts with `p`: no key continues past U+10FFFF.
fn past(p: &str) -> String {
    format!("{p}{}", char::MAX)
}

pub async fn list(db: &Db, bucket: &Bucket, q: &ListQuery) -> Result<Listing> {
    let mut listing = Listing::default();
    if q.max_keys == 0 {
        return Ok(listing);
    }
    let mut after = q.after.clone();
    // A position inside a rolled-up prefix continues after the prefix.
    if let Some(d) = q.delimiter.as_deref().filter(|d| !d.is_empty())
        && let Some(rest) = after.strip_prefix(q.prefix.as_str())
        && let Some(i) = rest.find(d)
    {
        after = past(&after[..q.prefix.len() + i + d.len()]);
    }
    let mut count = 0usize;
    loop {
        let rows = objects::scan(db, &bucket.id, &after, &q.prefix, BATCH).await?;
        let full = rows.len() as i64 == BATCH;
        let mut jumped = false;
        for row in rows {
            if !row.key.starts_with(q.prefix.as_str()) {
                return Ok(listing);
            }
            let rolled = q
                .delimiter
                .as_deref()
                .filter(|d| !d.is_empty())
                .and_then(|d| {
                    row.key[q.prefix.len()..]
                        .find(d)
                        .map(|i| row.key[..q.prefix.len() + i + d.len()].to_owned())
                });
            if count == q.max_keys {
                listing.truncated = true;
                return Ok(listing);
            }
            count += 1;
            match rolled {
                Some(prefix) => {
                    after = past(&prefix);
                    listing.next_after = Some(after.clone());
                    listing.prefixes.push(prefix);
                    jumped = true;
                    break;
                }
                None => {
                    after = row.key.clone();
                    listing.next_after = Some(row.key.clone());
                    listing.objects.push(info(row));
                }
            }
        }
        if !full && !jumped {
            return Ok(listing);
        }
    }
}
