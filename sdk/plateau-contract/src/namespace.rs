//! Whose data a plugin's key-value bucket or job belongs to.

/// Whose data a bucket holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// The caller's organisation.
    Caller,
    /// A named organisation; allowed only where the caller has none (public
    /// routes, ticks, events) or names the caller's own.
    Organization(String),
    /// The plugin's data shared across organisations (indexes such as
    /// ping-token to organisation).
    Global,
}
