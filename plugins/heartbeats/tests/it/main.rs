//! Native tests of the heartbeats plugin: the pure core directly
//! (`schedule`, `state`), the plugin through the SDK's in-memory host
//! (`api`, `lifecycle`), its deadline and alert jobs run by a small
//! stand-in of the host's job runner (`host`).

mod api;
mod host;
mod lifecycle;
mod schedule;
mod state;

/// Milliseconds since the Unix epoch of an RFC 3339 time.
pub fn ms(rfc3339: &str) -> u64 {
    let t: jiff::Timestamp = rfc3339.parse().expect("an RFC 3339 time in a test");
    u64::try_from(t.as_millisecond()).expect("after 1970")
}

/// RFC 3339 UTC of milliseconds since the Unix epoch, as the plugin writes it.
pub fn rfc(ms: u64) -> String {
    plateau_sdk::clock::rfc3339(ms)
}
