//! The key layout of the organisation's bucket, and the one trick that
//! makes the ledger's filters cheap: time ranges as sets of key prefixes.
//!
//! | Key | Value |
//! |---|---|
//! | `config` | the SMTP configuration, password sealed |
//! | `m:{time}:{id}` | a ledger entry |
//! | `s:{status}:{time}:{id}` | the same entry, indexed by status |
//! | `c:{id}:head`, `c:{id}:{part}:{n}` | the message content until its final outcome |
//! | `sup:{address}` | a suppressed recipient, address lowercased |
//! | `rate:m:{minute}`, `rate:d:{day}` | the rate limit's counters |
//! | `evt:{event id}` | an alert event already queued (at-least-once delivery) |
//!
//! `{time}` is the creation time as 48 binary digits of its complement
//! (`2^48 - 1 - millis`), so keys sort newest first. Entries created in a
//! time range are then exactly the keys under a small set of prefixes (at
//! most two per bit, 96), which the host lists and counts by range.

/// Digits of the time part of ledger keys.
const TIME_BITS: u32 = 48;
const MAX_TIME: u64 = (1 << TIME_BITS) - 1;

pub const CONFIG: &str = "config";
pub const SUPPRESSION_PREFIX: &str = "sup:";
pub const RATE_PREFIX: &str = "rate:";

/// The time part of a ledger key for an entry created at `millis`.
pub fn time_part(millis: u64) -> String {
    let inverted = MAX_TIME - millis.min(MAX_TIME);
    format!("{inverted:048b}")
}

/// `m:{time}:{id}`.
pub fn entry(created_ms: u64, id: &str) -> String {
    format!("m:{}:{id}", time_part(created_ms))
}

/// `s:{status}:{time}:{id}`.
pub fn status_index(status: &str, created_ms: u64, id: &str) -> String {
    format!("s:{status}:{}:{id}", time_part(created_ms))
}

/// Where the ledger's entries are, optionally only those of `status`.
pub fn ledger_root(status: Option<&str>) -> String {
    match status {
        Some(status) => format!("s:{status}:"),
        None => "m:".to_owned(),
    }
}

/// The head of a message's stored content: addresses, subject, headers and
/// the sizes of its parts.
pub fn content_head(id: &str) -> String {
    format!("c:{id}:head")
}

/// One chunk of one part (`t` for the text, `h` for the html, `a0`, `a1`...
/// for the attachments) of a message's content.
pub fn content_chunk(id: &str, part: &str, n: usize) -> String {
    format!("c:{id}:{part}:{n:04}")
}

pub fn suppression(address_lowercase: &str) -> String {
    format!("{SUPPRESSION_PREFIX}{address_lowercase}")
}

pub fn rate_minute(minute: u64) -> String {
    format!("{RATE_PREFIX}m:{minute}")
}

pub fn rate_day(day: u64) -> String {
    format!("{RATE_PREFIX}d:{day}")
}

pub fn event_marker(event_id: &str) -> String {
    format!("evt:{event_id}")
}

/// The prefixes, below a [`ledger_root`], of the entries created in
/// `[since, until)` (milliseconds; `None` is unbounded), newest first. An
/// empty range gives no prefix; no bounds give the root itself (`""`).
pub fn time_prefixes(since: Option<u64>, until: Option<u64>) -> Vec<String> {
    let since = since.unwrap_or(0).min(MAX_TIME + 1);
    let until = until.unwrap_or(MAX_TIME + 1).min(MAX_TIME + 1);
    if until <= since {
        return Vec::new();
    }
    // Created in [since, until) is inverted in [MAX - (until - 1), MAX - since].
    let (lo, hi) = (MAX_TIME - (until - 1), MAX_TIME - since);
    let mut out = Vec::new();
    cover(0, 0, lo, hi, &mut out);
    out
}

/// Appends, in order, the prefixes of the `depth`-digit node `value` that
/// cover `[lo, hi]` exactly.
fn cover(value: u64, depth: u32, lo: u64, hi: u64, out: &mut Vec<String>) {
    let width = TIME_BITS - depth;
    let first = value << width;
    let last = first | ((1u64 << width) - 1);
    if last < lo || first > hi {
        return;
    }
    if lo <= first && last <= hi {
        out.push(if depth == 0 {
            String::new()
        } else {
            format!("{value:0width$b}", width = depth as usize)
        });
        return;
    }
    cover(value << 1, depth + 1, lo, hi, out);
    cover((value << 1) | 1, depth + 1, lo, hi, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether an entry created at `t` is under one of `prefixes`.
    fn covered(prefixes: &[String], t: u64) -> bool {
        let key = time_part(t);
        prefixes.iter().any(|p| key.starts_with(p.as_str()))
    }

    #[test]
    fn keys_sort_newest_first() {
        assert!(entry(2_000, "em_b") < entry(1_000, "em_a"));
        assert!(status_index("sent", 2_000, "em_b") < status_index("sent", 1_000, "em_a"));
        assert_eq!(time_part(0).len(), 48);
        assert_eq!(time_part(MAX_TIME), "0".repeat(48));
    }

    #[test]
    fn prefixes_cover_exactly_the_range() {
        let now = 1_795_305_600_000;
        let ranges = [
            (Some(now), Some(now + 1)),
            (Some(now - 3_600_000), None),
            (None, Some(now)),
            (Some(now - 86_400_000), Some(now - 3_600_000)),
            (Some(0), Some(1)),
            (Some(12_345), Some(67_891)),
        ];
        for (since, until) in ranges {
            let prefixes = time_prefixes(since, until);
            assert!(prefixes.len() <= 96, "{} prefixes", prefixes.len());
            assert!(
                prefixes
                    .windows(2)
                    .all(|w| w[0] < w[1] && !w[1].starts_with(&w[0]))
            );
            let (lo, hi) = (since.unwrap_or(0), until.unwrap_or(MAX_TIME + 1));
            for t in [
                lo.saturating_sub(2),
                lo.saturating_sub(1),
                lo,
                lo + 1,
                hi - 1,
                hi,
                hi + 1,
                (lo + hi) / 2,
            ] {
                if t > MAX_TIME {
                    continue;
                }
                let inside = t >= lo && t < hi;
                assert_eq!(covered(&prefixes, t), inside, "{since:?}..{until:?} at {t}");
            }
        }
    }

    #[test]
    fn no_bounds_is_the_root_and_an_empty_range_nothing() {
        assert_eq!(time_prefixes(None, None), [String::new()]);
        assert!(time_prefixes(Some(10), Some(10)).is_empty());
        assert!(time_prefixes(Some(10), Some(5)).is_empty());
        assert_eq!(time_prefixes(Some(5), Some(6)), [time_part(5)]);
    }
}
