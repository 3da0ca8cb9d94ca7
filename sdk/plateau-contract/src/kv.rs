//! The limits of the key-value capability, which the host enforces on every
//! write and the SDK's in-memory host enforces in native tests.

/// The longest key (and list prefix), in bytes of UTF-8.
pub const MAX_KEY_BYTES: usize = 512;
/// The largest value, in bytes.
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// The most entries one `list` returns.
pub const MAX_LIST_LIMIT: u32 = crate::page::MAX_LIMIT;

/// A key or value outside the limits; each side turns it into its own
/// error (the WIT `kv-error`, the SDK's `KvError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvRuleError {
    /// The key or prefix is empty, too long or holds control characters.
    InvalidKey(String),
    /// The value is over [`MAX_VALUE_BYTES`].
    TooLarge(String),
}

/// A key: 1 to [`MAX_KEY_BYTES`] bytes without control characters.
pub fn check_key(key: &str) -> Result<(), KvRuleError> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Err(KvRuleError::InvalidKey(format!(
            "a key is 1 to {MAX_KEY_BYTES} bytes, not {}",
            key.len()
        )));
    }
    check_text(key)
}

/// A list or wait prefix: at most [`MAX_KEY_BYTES`] bytes without control
/// characters (empty lists everything).
pub fn check_prefix(prefix: &str) -> Result<(), KvRuleError> {
    if prefix.len() > MAX_KEY_BYTES {
        return Err(KvRuleError::InvalidKey(format!(
            "a prefix is at most {MAX_KEY_BYTES} bytes"
        )));
    }
    check_text(prefix)
}

fn check_text(text: &str) -> Result<(), KvRuleError> {
    if text.chars().any(char::is_control) {
        return Err(KvRuleError::InvalidKey(
            "keys may not contain control characters".into(),
        ));
    }
    Ok(())
}

/// A value: at most [`MAX_VALUE_BYTES`].
pub fn check_value(value: &[u8]) -> Result<(), KvRuleError> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(KvRuleError::TooLarge(format!(
            "a value is at most {MAX_VALUE_BYTES} bytes, not {}",
            value.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_within_the_limits() {
        assert!(check_key("a").is_ok());
        assert!(check_key(&"k".repeat(MAX_KEY_BYTES)).is_ok());
        assert!(matches!(check_key(""), Err(KvRuleError::InvalidKey(_))));
        assert!(check_key(&"k".repeat(MAX_KEY_BYTES + 1)).is_err());
        assert!(check_key("a\nb").is_err());
        assert!(check_prefix("").is_ok());
        assert!(check_prefix("a\u{7f}").is_err());
        assert!(check_value(&vec![0; MAX_VALUE_BYTES]).is_ok());
        assert!(matches!(
            check_value(&vec![0; MAX_VALUE_BYTES + 1]),
            Err(KvRuleError::TooLarge(_))
        ));
    }
}
