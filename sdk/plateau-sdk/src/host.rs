//! Small host capabilities: configuration, clock, logging and signed cursors.
//!
//! In a component these call the host's imports; in a native build they use
//! the stand-ins of `crate::testing`.

/// Configuration values the operator set for the plugin.
pub mod config {
    use crate::error::ApiError;
    use crate::sys;

    /// The value of `key`, if the operator set one.
    pub fn get(key: &str) -> Option<String> {
        sys::config_get(key)
    }

    /// Every configured key and value.
    pub fn get_all() -> Vec<(String, String)> {
        sys::config_get_all()
    }

    /// The value of `key`, or a 500 problem telling the operator to set it
    /// (a 500 rolls the request back).
    pub fn require(key: &str) -> Result<String, ApiError> {
        get(key).ok_or_else(|| {
            ApiError::internal(format!(
                "the plugin is not configured: set {key} in its configuration"
            ))
        })
    }

    /// The plugin configuration key of the API's public base URL.
    pub const PUBLIC_BASE_URL: &str = "publicBaseUrl";

    /// The API base URL (`…/api/v1`) that URLs handed to users start with
    /// (ping URLs, DSNs): the [`PUBLIC_BASE_URL`] setting (`/api/v1` added
    /// unless it ends with it), else what the request says:
    /// `x-forwarded-proto` (default `http`), then `x-forwarded-host` or
    /// `host` (a name of host characters only, else `localhost`).
    pub fn public_base_url(req: &crate::Request) -> String {
        if let Some(base) = get(PUBLIC_BASE_URL).filter(|b| !b.trim().is_empty()) {
            let base = base.trim().trim_end_matches('/');
            return if base.ends_with("/api/v1") {
                base.to_owned()
            } else {
                format!("{base}/api/v1")
            };
        }
        let first = |name: &str| {
            req.header(name)
                .and_then(|v| v.split(',').next())
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let proto = match first("x-forwarded-proto") {
            Some("https") => "https",
            _ => "http",
        };
        let host = first("x-forwarded-host")
            .or_else(|| first("host"))
            .filter(|h| {
                h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
            })
            .unwrap_or("localhost");
        format!("{proto}://{host}/api/v1")
    }
}

/// The host's clock.
pub mod clock {
    use crate::sys;

    /// Milliseconds since the Unix epoch, as the host sees it.
    pub fn now_millis() -> u64 {
        sys::now_millis()
    }

    /// The current time as RFC 3339 UTC with milliseconds:
    /// `2025-01-31T09:05:00.250Z`.
    pub fn now_rfc3339() -> String {
        rfc3339(now_millis())
    }

    /// Formats milliseconds since the Unix epoch as RFC 3339 UTC.
    pub fn rfc3339(millis: u64) -> String {
        let secs = millis / 1000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (year, month, day) = civil_from_days(days as i64);
        format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60,
            millis % 1000
        )
    }

    /// Days since 1970-01-01 to a proleptic Gregorian date.
    fn civil_from_days(days: i64) -> (i64, u32, u32) {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        (year, month, day)
    }
}

/// Logging into the host's log, tagged with the plugin.
pub mod log {
    use crate::sys;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    pub enum Level {
        Trace,
        Debug,
        Info,
        Warn,
        Error,
    }

    pub fn log(level: Level, message: &str) {
        sys::log(level, message);
    }

    pub fn trace(message: &str) {
        log(Level::Trace, message);
    }

    pub fn debug(message: &str) {
        log(Level::Debug, message);
    }

    pub fn info(message: &str) {
        log(Level::Info, message);
    }

    pub fn warn(message: &str) {
        log(Level::Warn, message);
    }

    pub fn error(message: &str) {
        log(Level::Error, message);
    }
}

/// Tamper-evident pagination cursors, signed by the host and bound to the
/// plugin, the organisation and a list name. [`crate::paginate_sorted`]
/// uses them; call them directly only for a pagination of your own.
pub mod cursors {
    use crate::error::ApiError;
    use crate::sys;

    /// A cursor for `position` in `list`.
    pub fn encode(list: &str, position: &str) -> String {
        sys::cursor_encode(list, position)
    }

    /// The position of a cursor issued for `list`, or 400 `invalid_cursor`
    /// for an edited cursor or one of another list.
    pub fn decode(list: &str, cursor: &str) -> Result<String, ApiError> {
        sys::cursor_decode(list, cursor).map_err(|_| ApiError::invalid_cursor())
    }
}
