//! Time on the wire and in ids: RFC 3339 and `YYYY-MM-DD` bounds of the
//! ledger's filters, and ULID-based message ids (`em_` and 26 characters
//! of Crockford base32), which sort by creation time like the core's ids.

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp
/// (`2026-11-22T09:30:00Z`, `2026-11-22T10:30:00.250+01:00`) or of the
/// start (UTC) of a `YYYY-MM-DD` date; `None` if it is neither, or before
/// 1970.
pub fn parse_bound(raw: &str) -> Option<u64> {
    let raw = raw.trim();
    if raw.len() == 10 {
        let days = date(raw)?;
        return u64::try_from(days * 86_400_000).ok();
    }
    let (day, rest) = (raw.get(..10)?, raw.get(10..)?);
    let days = date(day)?;
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let (hour, minute, second) = (
        number(rest.get(0..2)?)?,
        number(rest.get(3..5)?)?,
        number(rest.get(6..8)?)?,
    );
    if rest.get(2..3)? != ":" || rest.get(5..6)? != ":" || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = rest.get(8..)?;
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &fraction[..digits.min(3)]);
        millis = number(&padded)?;
        rest = &fraction[digits..];
    }
    let offset_minutes = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.get(..1)? {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.get(3..4)? != ":" {
                return None;
            }
            let (h, m) = (number(rest.get(1..3)?)?, number(rest.get(4..6)?)?);
            if h > 23 || m > 59 {
                return None;
            }
            sign * (h * 60 + m)
        }
    };
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    u64::try_from(seconds * 1000 + millis).ok()
}

fn number(digits: &str) -> Option<i64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Days since 1970-01-01 of a valid `YYYY-MM-DD`.
fn date(raw: &str) -> Option<i64> {
    if raw.len() != 10 || raw.get(4..5)? != "-" || raw.get(7..8)? != "-" {
        return None;
    }
    let (year, month, day) = (
        number(raw.get(0..4)?)?,
        number(raw.get(5..7)?)?,
        number(raw.get(8..10)?)?,
    );
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if day < 1 || day > days_in_month {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The prefix of message ids.
pub const ID_PREFIX: &str = "em";

/// A message id for `now` (milliseconds): `em_` and a ULID, so ids sort by
/// creation time.
pub fn new_id(now: u64) -> String {
    plateau_sdk::ids::new_id(ID_PREFIX, now)
}

/// The creation time of a message id made by [`new_id`], if it is one.
pub fn id_time(id: &str) -> Option<u64> {
    plateau_sdk::ids::id_time(id, ID_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_parse_as_rfc3339_or_dates() {
        let table = [
            ("1970-01-01", Some(0)),
            ("2026-11-22", Some(1_795_305_600_000)),
            ("2026-11-22T00:00:00Z", Some(1_795_305_600_000)),
            ("2026-11-22T00:00:00.25Z", Some(1_795_305_600_250)),
            ("2026-11-22T00:00:00.123456Z", Some(1_795_305_600_123)),
            ("2026-11-22T01:00:00+01:00", Some(1_795_305_600_000)),
            ("2026-11-21T23:30:00-00:30", Some(1_795_305_600_000)),
            ("2024-02-29T12:00:00z", Some(1_709_208_000_000)),
            ("2023-02-29", None),
            ("2026-13-01", None),
            ("2026-11-22T24:00:00Z", None),
            ("2026-11-22T10:00:00", None),
            ("2026-11-22T10:00Z", None),
            ("2026-11-22T10:00:00.Z", None),
            ("2026-11-22T10:00:00+0100", None),
            ("1969-12-31T23:59:59Z", None),
            ("yesterday", None),
            ("", None),
        ];
        for (raw, want) in table {
            assert_eq!(parse_bound(raw), want, "{raw}");
        }
    }

    #[test]
    fn ids_sort_by_time_and_give_it_back() {
        let early = new_id(1_795_305_600_000);
        let late = new_id(1_795_305_600_001);
        assert!(early < late);
        assert_eq!(early.len(), 29);
        assert!(early.starts_with("em_"));
        assert_eq!(id_time(&early), Some(1_795_305_600_000));
        assert_eq!(id_time(&late), Some(1_795_305_600_001));
        for bad in [
            "",
            "em_",
            "em_0",
            "xx_01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "em_01ARZ3NDEKTSV4RRFFQ69G5FAU!",
            "em_81ARZ3NDEKTSV4RRFFQ69G5FAV",
        ] {
            assert_eq!(id_time(bad), None, "{bad}");
        }
    }
}
