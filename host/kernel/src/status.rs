//! [`Status`]: what is true of a managed resource, one word the API shows,
//! the store keeps (as today's lowercase strings) and the OpenAPI document
//! lists as an enum. No string literal of a status outside this file.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The status of a managed resource (a cache, a database, an app).
///
/// `creating` and `updating` answer a change the user asked for that the
/// host's reconciler has not finished; `running` means every process
/// answers; `degraded` that one does not (the reconciler restarts it);
/// `failed` that the last change could not be made (the resource's
/// `statusDetail` says why; delete it, or ask for another change).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Creating,
    Running,
    Updating,
    Degraded,
    Paused,
    Deleting,
    Failed,
}

impl Status {
    pub const ALL: [Status; 7] = [
        Status::Creating,
        Status::Running,
        Status::Updating,
        Status::Degraded,
        Status::Paused,
        Status::Deleting,
        Status::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Creating => "creating",
            Status::Running => "running",
            Status::Updating => "updating",
            Status::Degraded => "degraded",
            Status::Paused => "paused",
            Status::Deleting => "deleting",
            Status::Failed => "failed",
        }
    }

    /// A change the user asked for waits for the reconciler.
    pub fn pending(self) -> bool {
        matches!(self, Status::Creating | Status::Updating | Status::Deleting)
    }

    /// Placed and asked nothing more of: supervision keeps it running.
    pub fn settled(self) -> bool {
        matches!(self, Status::Running | Status::Degraded)
    }

    /// The stored word as a status; a word this version does not know
    /// reads as `failed`, so nothing acts on it blindly.
    pub fn read(stored: &str) -> Status {
        stored.parse().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "reading a stored status");
            Status::Failed
        })
    }
}

impl FromStr for Status {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Status::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Status::ALL.iter().map(|v| v.as_str()).collect();
                format!("status must be one of {}", names.join(", "))
            })
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_words_are_todays() {
        for status in Status::ALL {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
            assert_eq!(status.as_str().parse::<Status>().unwrap(), status);
        }
        assert_eq!(Status::read("running"), Status::Running);
        assert_eq!(Status::read("sideways"), Status::Failed);
        assert!("sideways".parse::<Status>().unwrap_err().contains("creating"));
    }

    #[test]
    fn only_asked_changes_are_pending() {
        let pending: Vec<Status> = Status::ALL.into_iter().filter(|s| s.pending()).collect();
        assert_eq!(
            pending,
            [Status::Creating, Status::Updating, Status::Deleting]
        );
        assert!(Status::Degraded.settled() && !Status::Failed.settled());
    }
}
