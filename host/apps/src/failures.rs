//! Live deployments that failed to start on this host: when and why. The
//! plane leaves such a deployment alone for [`RETRY_AFTER`] (no launch
//! loop), a migration to this host ends failed with the reason, and a new
//! migration asked after the failure tries again at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use plateau_core::time;

/// How long a deployment that failed to start on this host is left alone.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);

/// One app's last failure to start here.
struct Failure {
    deployment_id: String,
    at: Instant,
    /// Wall-clock milliseconds, compared with a migration's start.
    at_ms: i64,
    reason: String,
}

/// The failures of this host's plane, by app id.
#[derive(Default)]
pub struct Failures {
    by_app: Mutex<HashMap<String, Failure>>,
}

impl Failures {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Failure>) -> T) -> T {
        f(&mut self.by_app.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether `deployment_id` of the app failed here within [`RETRY_AFTER`].
    pub fn recent(&self, app_id: &str, deployment_id: &str) -> bool {
        self.with(|m| {
            m.get(app_id)
                .is_some_and(|f| f.deployment_id == deployment_id && f.at.elapsed() < RETRY_AFTER)
        })
    }

    /// Notes a failure; true when it is news (not the same deployment
    /// failing again after its pause), so it is recorded once.
    pub fn note(&self, app_id: &str, deployment_id: &str, reason: &str) -> bool {
        self.with(|m| {
            let again = m
                .get(app_id)
                .is_some_and(|f| f.deployment_id == deployment_id && f.reason == reason);
            m.insert(
                app_id.to_owned(),
                Failure {
                    deployment_id: deployment_id.to_owned(),
                    at: Instant::now(),
                    at_ms: time::now_ms(),
                    reason: reason.to_owned(),
                },
            );
            !again
        })
    }

    /// Why the app last failed to start here, if it did.
    pub fn reason(&self, app_id: &str) -> Option<String> {
        self.with(|m| m.get(app_id).map(|f| f.reason.clone()))
    }

    pub fn forget(&self, app_id: &str) {
        self.with(|m| m.remove(app_id));
    }

    /// Forgets a failure older than `since_ms` (a migration asked after
    /// it tries again).
    pub fn forget_before(&self, app_id: &str, since_ms: i64) {
        self.with(|m| {
            if m.get(app_id).is_some_and(|f| f.at_ms < since_ms) {
                m.remove(app_id);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_news_once_and_a_later_migration_forgets_it() {
        let f = Failures::default();
        assert!(f.note("app_1", "dpl_1", "cannot fetch"));
        assert!(f.recent("app_1", "dpl_1"));
        assert!(!f.recent("app_1", "dpl_2"));
        assert!(
            !f.note("app_1", "dpl_1", "cannot fetch"),
            "the same failure again"
        );
        assert!(f.note("app_1", "dpl_1", "another reason"));
        assert_eq!(f.reason("app_1").as_deref(), Some("another reason"));
        f.forget_before("app_1", 0);
        assert!(
            f.recent("app_1", "dpl_1"),
            "a migration older than the failure"
        );
        f.forget_before("app_1", time::now_ms() + 1);
        assert!(!f.recent("app_1", "dpl_1"));
        assert!(f.note("app_1", "dpl_1", "another reason"));
    }
}
