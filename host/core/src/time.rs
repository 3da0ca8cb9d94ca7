//! Time as the store keeps it (milliseconds since the Unix epoch) and as the
//! API shows it (RFC 3339, UTC).

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime, UtcOffset};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// RFC 3339 in UTC with millisecond precision: `2026-11-22T10:00:00.123Z`.
pub fn to_rfc3339(ms: i64) -> String {
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let format =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    at.format(&format).unwrap_or_default()
}

/// Parses an RFC 3339 timestamp into milliseconds.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let at = OffsetDateTime::parse(s, &Rfc3339).ok()?;
    Some((at.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// The UTC calendar day of `ms` as `YYYY-MM-DD`, the form [`parse_date`] reads.
pub fn to_date(ms: i64) -> String {
    to_rfc3339(ms)[..10].to_owned()
}

/// Parses `YYYY-MM-DD`.
pub fn parse_date(s: &str) -> Option<Date> {
    Date::parse(s, format_description!("[year]-[month]-[day]")).ok()
}

/// Midnight UTC at the start of `date`, in milliseconds.
pub fn date_start_ms(date: Date) -> i64 {
    date.midnight()
        .assume_offset(UtcOffset::UTC)
        .unix_timestamp()
        * 1000
}

/// The calendar month (UTC) containing `ms`, as start and end milliseconds.
pub fn month_bounds(ms: i64) -> (i64, i64) {
    let at = OffsetDateTime::from_unix_timestamp(ms / 1000).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let start = at.date().replace_day(1).unwrap_or(at.date());
    let next = if start.month() == time::Month::December {
        Date::from_calendar_date(start.year() + 1, time::Month::January, 1)
    } else {
        Date::from_calendar_date(start.year(), start.month().next(), 1)
    }
    .unwrap_or(start);
    (date_start_ms(start), date_start_ms(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_bounds() {
        let ms = 1_795_000_000_123;
        assert_eq!(parse_rfc3339(&to_rfc3339(ms)), Some(ms));
        assert!(parse_date("2026-02-30").is_none());
        assert_eq!(to_date(ms), "2026-11-18");
        assert_eq!(
            parse_date(&to_date(ms)).map(date_start_ms),
            Some(ms - ms % 86_400_000)
        );
        let d = parse_date("2026-11-22").unwrap();
        let (start, end) = month_bounds(date_start_ms(d) + 5_000);
        assert_eq!(to_rfc3339(start), "2026-11-01T00:00:00.000Z");
        assert_eq!(to_rfc3339(end), "2026-12-01T00:00:00.000Z");
    }
}
