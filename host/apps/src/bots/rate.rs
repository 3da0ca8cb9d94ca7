//! Rate-based detection: a token bucket per client address (an IPv6
//! client's /64), holding a minute's worth of requests and refilled
//! continuously at the policy's rate. One table per app lives in the agent
//! and outlives the app's chains, so every replica of the app behind this
//! host's edge draws from the same buckets, and a policy change keeps what
//! was counted. Each host's edge counts its own requests.
//!
//! Memory is bounded: past [`MAX_TRACKED`] addresses, buckets refilled
//! to the full are dropped, and if that is not enough the table starts
//! over (an address flood cannot grow it).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// The most addresses one app's table tracks.
pub const MAX_TRACKED: usize = 65_536;

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// One app's buckets.
#[derive(Default)]
pub struct RateTable {
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

impl RateTable {
    /// Takes a token for `ip` at `per_minute` requests a minute: false
    /// when its bucket is empty (the request is over the rate).
    pub fn take(&self, ip: IpAddr, per_minute: u32, now: Instant) -> bool {
        let capacity = f64::from(per_minute.max(1));
        let per_second = capacity / 60.0;
        let key = key(ip);
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_TRACKED && !buckets.contains_key(&key) {
            buckets.retain(|_, b| {
                now.duration_since(b.at).as_secs_f64() * per_second + b.tokens < capacity
            });
            if buckets.len() >= MAX_TRACKED {
                buckets.clear();
            }
        }
        let bucket = buckets.entry(key).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_second).min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The address a bucket counts: IPv4 whole, IPv6 by its /64 (one host's
/// usual allocation), an IPv4-mapped IPv6 address as IPv4.
fn key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_bucket_holds_a_minute_and_refills_at_the_rate() {
        let table = RateTable::default();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let t0 = Instant::now();
        let passed = (0..15).filter(|_| table.take(ip, 10, t0)).count();
        assert_eq!(passed, 10);
        // Another address has its own bucket.
        assert!(table.take("192.0.2.2".parse().unwrap(), 10, t0));
        // 10 a minute: one token every 6 seconds.
        assert!(!table.take(ip, 10, t0 + Duration::from_secs(5)));
        assert!(table.take(ip, 10, t0 + Duration::from_secs(7)));
        // One IPv6 host (/64) is one client.
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let b: IpAddr = "2001:db8::2".parse().unwrap();
        assert!(table.take(a, 1, t0));
        assert!(!table.take(b, 1, t0));
    }
}
