//! Pagination cursors: the [`CursorCodec`] trait the host implements with an
//! HMAC, and [`PlainCursorCodec`], an unsigned one for tests.

use std::fmt::Write as _;

/// What a cursor is bound to besides its list name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorScope {
    pub plugin: String,
    /// The caller's organisation, if any.
    pub organization: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("the cursor is malformed or was edited")]
    Invalid,
    #[error("the cursor was issued for another list, plugin or organisation")]
    WrongList,
}

/// Encodes positions into opaque cursors and back.
///
/// `decode` must refuse a cursor issued for another scope or list, and the
/// host's implementation must also refuse an edited one (sign it).
pub trait CursorCodec: Send + Sync + 'static {
    fn encode(&self, scope: &CursorScope, list: &str, position: &str) -> String;
    fn decode(&self, scope: &CursorScope, list: &str, cursor: &str) -> Result<String, CursorError>;
}

/// Hex of the scope, list and position, unsigned: it detects a cursor used
/// for another list but not a forged one. For tests only.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainCursorCodec;

const SEPARATOR: char = '\u{1f}';

impl CursorCodec for PlainCursorCodec {
    fn encode(&self, scope: &CursorScope, list: &str, position: &str) -> String {
        let org = scope.organization.as_deref().unwrap_or_default();
        let plain = [scope.plugin.as_str(), org, list, position].join(&SEPARATOR.to_string());
        plain.bytes().fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
    }

    fn decode(&self, scope: &CursorScope, list: &str, cursor: &str) -> Result<String, CursorError> {
        if !cursor.len().is_multiple_of(2) {
            return Err(CursorError::Invalid);
        }
        let bytes = (0..cursor.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(cursor.get(i..i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()
            .ok_or(CursorError::Invalid)?;
        let plain = String::from_utf8(bytes).map_err(|_| CursorError::Invalid)?;
        let parts: Vec<&str> = plain.split(SEPARATOR).collect();
        let [plugin, org, cursor_list, position] = parts[..] else {
            return Err(CursorError::Invalid);
        };
        let expected_org = scope.organization.as_deref().unwrap_or_default();
        if plugin != scope.plugin || org != expected_org || cursor_list != list {
            return Err(CursorError::WrongList);
        }
        Ok(position.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(org: Option<&str>) -> CursorScope {
        CursorScope {
            plugin: "flags".into(),
            organization: org.map(Into::into),
        }
    }

    #[test]
    fn round_trips_and_refuses_other_lists() {
        let codec = PlainCursorCodec;
        let cursor = codec.encode(&scope(Some("org1")), "flags", "key/41");
        assert_eq!(
            codec
                .decode(&scope(Some("org1")), "flags", &cursor)
                .as_deref(),
            Ok("key/41")
        );
        assert_eq!(
            codec.decode(&scope(Some("org1")), "other", &cursor),
            Err(CursorError::WrongList)
        );
        assert_eq!(
            codec.decode(&scope(Some("org2")), "flags", &cursor),
            Err(CursorError::WrongList)
        );
        assert_eq!(
            codec.decode(&scope(None), "flags", "zz"),
            Err(CursorError::Invalid)
        );
    }
}
