//! UTC days and hours as the keys name them: `20261127` and `2026112709`,
//! so byte order is time order.

use plateau_sdk::ApiError;

const DAY_MS: u64 = 86_400_000;

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day number.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// The day number of an instant in milliseconds.
pub fn of_millis(ms: u64) -> i64 {
    (ms / DAY_MS) as i64
}

/// The hour (0 to 23) of an instant.
pub fn hour_of(ms: u64) -> u32 {
    ((ms % DAY_MS) / 3_600_000) as u32
}

/// `20261127`.
pub fn key(day: i64) -> String {
    let (y, m, d) = civil_from_days(day);
    format!("{y:04}{m:02}{d:02}")
}

/// `2026-11-27`.
pub fn iso(day: i64) -> String {
    let (y, m, d) = civil_from_days(day);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `2026-11-27T09:00:00Z`.
pub fn iso_hour(day: i64, hour: u32) -> String {
    format!("{}T{hour:02}:00:00Z", iso(day))
}

/// Parses `2026-11-27` from the query parameter `field`; 400 naming it.
pub fn parse(field: &str, raw: &str) -> Result<i64, ApiError> {
    let bad = || {
        ApiError::bad_request(format!(
            "query parameter {field} has the invalid value {raw:?}: expected a date as YYYY-MM-DD"
        ))
    };
    let mut parts = raw.splitn(3, '-');
    let (Some(y), Some(m), Some(d)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let (y, m, d): (i64, u32, u32) = match (y.parse(), m.parse(), d.parse()) {
        (Ok(y), Ok(m), Ok(d)) => (y, m, d),
        _ => return Err(bad()),
    };
    let day = days_from_civil(y, m, d);
    if !(1..=12).contains(&m) || civil_from_days(day) != (y, m, d) {
        return Err(bad());
    }
    Ok(day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_round_trip_through_their_keys() {
        assert_eq!(key(0), "19700101");
        let day = parse("from", "2026-11-27").unwrap();
        assert_eq!(iso(day), "2026-11-27");
        assert_eq!(key(day + 4), "20261201");
        assert_eq!(
            of_millis(1_795_000_000_000),
            parse("x", "2026-11-18").unwrap()
        );
        assert_eq!(parse("x", "2024-02-29").map(iso).unwrap(), "2024-02-29");
    }

    #[test]
    fn a_bad_date_names_its_parameter() {
        for raw in ["2026-13-01", "2026-02-30", "yesterday", "2026-1-01"] {
            let err = parse("from", raw).unwrap_err();
            assert_eq!(err.status(), 400);
            assert!(err.detail().contains("from"), "{}", err.detail());
        }
    }
}
