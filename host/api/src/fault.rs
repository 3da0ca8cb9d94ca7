//! Crash points for the black-box tests, compiled only with the
//! `fault-injection` feature (the test build of `plateau` turns it on; a
//! release build has none of it).
//!
//! A server started with `PLATEAU_FAULT=<point>` kills itself with SIGKILL
//! when a request reaches that point: no destructor runs, no transaction is
//! committed or rolled back by the process, as after a power cut. Points:
//! - `idempotency-record`: a request under an `Idempotency-Key` has run and
//!   its response is about to be recorded.

/// The environment variable that arms a point.
#[cfg(feature = "fault-injection")]
pub const ENV: &str = "PLATEAU_FAULT";

/// Dies here if `PLATEAU_FAULT` names `point`.
#[cfg(feature = "fault-injection")]
pub async fn point(point: &str) {
    if std::env::var(ENV).ok().as_deref() != Some(point) {
        return;
    }
    tracing::warn!(point, "fault injection: killing this process");
    let pid = std::process::id().to_string();
    // `kill` returns once the signal is sent; this task never goes on.
    let _ = tokio::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .await;
    std::future::pending::<()>().await;
}

/// Without the feature, a point is nothing.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub async fn point(_point: &str) {}
