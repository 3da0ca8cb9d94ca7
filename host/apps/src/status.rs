//! An app's status, as stored and answered: what the API asked for
//! (`paused`) or what the host's data plane observed (`starting`,
//! `resuming` until the replicas pass their health check, then `running`).

use std::fmt;

/// The status of an app outside the trash (in the trash it answers
/// `deleted`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppStatus {
    /// Never deployed.
    Created,
    /// Its first deployment is on its way.
    Deploying,
    /// Its live deployment serves.
    Running,
    /// Its live deployment is starting on the host (after the host
    /// started): requests wait, then answer 503 with `Retry-After`.
    Starting,
    /// Resumed: its live deployment is starting again.
    Resuming,
    /// Paused: nothing runs, the edge answers 503.
    Paused,
    /// Its first deployment failed.
    Failed,
}

impl AppStatus {
    pub const ALL: [AppStatus; 7] = [
        AppStatus::Created,
        AppStatus::Deploying,
        AppStatus::Running,
        AppStatus::Starting,
        AppStatus::Resuming,
        AppStatus::Paused,
        AppStatus::Failed,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            AppStatus::Created => "created",
            AppStatus::Deploying => "deploying",
            AppStatus::Running => "running",
            AppStatus::Starting => "starting",
            AppStatus::Resuming => "resuming",
            AppStatus::Paused => "paused",
            AppStatus::Failed => "failed",
        }
    }

    /// The status a stored text names, if any.
    pub fn parse(text: &str) -> Option<AppStatus> {
        AppStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether `stored` (an app's status column) is this status.
    pub fn is(self, stored: &str) -> bool {
        stored == self.as_str()
    }
}

/// An app's status as the API answers it: an [`AppStatus`], or `deleted`
/// for an app in the trash. It only describes the field in the OpenAPI
/// document (an enum of these words).
#[derive(utoipa::ToSchema)]
#[schema(as = AppStatus, rename_all = "lowercase")]
#[allow(dead_code)]
pub enum AppStatusName {
    Created,
    Deploying,
    Running,
    Starting,
    Resuming,
    Paused,
    Failed,
    Deleted,
}

impl fmt::Display for AppStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_from_its_text() {
        for status in AppStatus::ALL {
            assert_eq!(AppStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(AppStatus::parse("deleted"), None);
    }

    #[test]
    fn the_documented_enum_is_every_status_and_deleted() {
        let schema = serde_json::to_value(<AppStatusName as utoipa::PartialSchema>::schema())
            .expect("a schema serialises");
        let mut documented: Vec<String> = schema["enum"]
            .as_array()
            .expect("an enum of words")
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        let mut known: Vec<String> = AppStatus::ALL.iter().map(|s| s.to_string()).collect();
        known.push("deleted".to_owned());
        documented.sort();
        known.sort();
        assert_eq!(documented, known);
    }
}
