//! Buckets by S3 name, remembered for a short time: every S3 request
//! resolves its bucket first, and a bucket's row changes only when it is
//! created (under a fresh name, never reused) or deleted (only when
//! empty). Only found buckets are kept, so a new bucket is seen at once;
//! this host forgets a bucket when it deletes it, and other hosts within
//! the time to live, meanwhile finding no objects in it and refused any
//! write by the database (the bucket row is gone).
//! The usage counters of a kept bucket are not read from here.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::provider::Bucket;

/// At most this many buckets are kept; past it the cache starts over.
const MAX: usize = 10_000;

pub(crate) struct BucketCache {
    ttl: Duration,
    map: Mutex<HashMap<String, (Instant, Bucket)>>,
}

impl BucketCache {
    pub(crate) fn new(ttl: Duration) -> Self {
        BucketCache {
            ttl,
            map: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<Bucket> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.get(name)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, b)| b.clone())
    }

    pub(crate) fn insert(&self, bucket: &Bucket) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX {
            map.clear();
        }
        map.insert(bucket.bucket.clone(), (Instant::now(), bucket.clone()));
    }

    pub(crate) fn forget(&self, name: &str) {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
    }
}
