//! The rules of rewards (spec sections 4.3 and 8): how a line's claim is
//! verified, what a redemption may be, referral codes, and how redeemed
//! credit lowers invoices month after month.

use rand::Rng;

/// The smallest gift card, in cents (spec section 8: 5 dollars). Credit
/// has no minimum.
pub const GIFTCARD_MIN_CENTS: i64 = 500;
/// The most one line pays per claim, in cents.
pub const MAX_LINE_CENTS: i64 = 1_000_000;
/// The most live claims of one line an organisation may have.
pub const MAX_CLAIMS: i64 = 1_000;
/// The largest `details` object a claim may carry, in bytes of JSON.
pub const MAX_DETAILS_BYTES: usize = 4_096;
/// Characters of a referral code.
pub const REFERRAL_CODE_LEN: usize = 12;

/// How a line's claim is verified from the platform's own records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// The organisation's event timeline holds an event of a type.
    Event,
    /// The series store holds at least a quantity of a metric in a month.
    Usage,
    /// A live resource of a type exists.
    Resource,
    /// An organisation was created with the organisation's referral code;
    /// credited then, never claimed by hand.
    Referral,
}

impl LineKind {
    pub const ALL: [&'static str; 4] = ["event", "usage", "resource", "referral"];

    pub fn parse(s: &str) -> Option<LineKind> {
        Some(match s {
            "event" => LineKind::Event,
            "usage" => LineKind::Usage,
            "resource" => LineKind::Resource,
            "referral" => LineKind::Referral,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LineKind::Event => "event",
            LineKind::Usage => "usage",
            LineKind::Resource => "resource",
            LineKind::Referral => "referral",
        }
    }
}

/// The resource types a `resource` line may name: live means an app
/// running and not in the trash, a database or cache running, a bucket
/// existing.
pub const RESOURCE_TYPES: [&str; 4] = ["app", "database", "cache", "bucket"];

/// A new referral code: lowercase letters and digits.
pub fn referral_code() -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..REFERRAL_CODE_LEN)
        .map(|_| char::from(CHARS[rng.random_range(0..CHARS.len())]))
        .collect()
}

/// Whether `code` has the form of a referral code.
pub fn is_referral_code(code: &str) -> bool {
    code.len() == REFERRAL_CODE_LEN
        && code
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Whether `key` may name a line: 1 to 64 lowercase letters, digits,
/// `_` and `-`, starting with a letter or digit.
pub fn is_line_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 64
        && key.bytes().enumerate().all(|(i, b)| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || (i > 0 && (b == b'_' || b == b'-'))
        })
}

/// Whether `p` is a month `YYYY-MM`.
pub fn is_period(p: &str) -> bool {
    let b = p.as_bytes();
    b.len() == 7
        && b[4] == b'-'
        && b[..4].iter().chain(&b[5..]).all(u8::is_ascii_digit)
        && matches!(p[5..].parse::<u32>(), Ok(1..=12))
}

/// The month after `p` (`YYYY-MM`).
pub fn next_period(p: &str) -> String {
    let year: i32 = p[..4].parse().unwrap_or(1970);
    let month: u32 = p[5..].parse().unwrap_or(1);
    if month >= 12 {
        format!("{:04}-01", year + 1)
    } else {
        format!("{year:04}-{:02}", month + 1)
    }
}

/// One month of an organisation's invoices, for [`apply_credit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Month {
    pub period: String,
    /// What the month costs before credit (plan price and overage).
    pub cost_cents: i64,
    /// Credit redeemed during the month.
    pub credit_cents: i64,
}

/// How much credit each month's invoice takes, oldest first: a month
/// takes what credit is left (what earlier months redeemed and did not
/// take, plus its own), up to its cost; the rest carries on. Answers the
/// credit taken per month and what is left after the last.
pub fn apply_credit(months: &[Month]) -> (Vec<i64>, i64) {
    let mut left = 0i64;
    let taken = months
        .iter()
        .map(|m| {
            left += m.credit_cents;
            let take = left.min(m.cost_cents.max(0));
            left -= take;
            take
        })
        .collect();
    (taken, left)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn month(period: &str, cost: i64, credit: i64) -> Month {
        Month {
            period: period.to_owned(),
            cost_cents: cost,
            credit_cents: credit,
        }
    }

    #[test]
    fn credit_carries_into_later_invoices() {
        let months = [
            month("2026-10", 1200, 2000),
            month("2026-11", 1200, 0),
            month("2026-12", 1200, 300),
        ];
        assert_eq!(apply_credit(&months), (vec![1200, 800, 300], 0));
        let free = [month("2026-11", 0, 250), month("2026-12", 40, 0)];
        assert_eq!(apply_credit(&free), (vec![0, 40], 210));
        assert_eq!(apply_credit(&[]), (vec![], 0));
    }

    #[test]
    fn periods_and_codes() {
        assert_eq!(next_period("2026-12"), "2027-01");
        assert_eq!(next_period("2026-09"), "2026-10");
        assert!(is_period("2026-11") && !is_period("2026-13") && !is_period("26-11"));
        let code = referral_code();
        assert!(is_referral_code(&code), "{code}");
        assert_ne!(code, referral_code());
        assert!(is_line_key("first_app") && !is_line_key("_x") && !is_line_key("A"));
        for kind in LineKind::ALL {
            assert_eq!(LineKind::parse(kind).map(LineKind::as_str), Some(kind));
        }
    }
}
