//! [`Status`] (caches, databases): what is true of a resource, one word
//! the API shows, the store keeps (as today's lowercase strings) and the
//! OpenAPI document lists as an enum. No string literal of a status
//! outside this file. `statuses!` declares such an enum (apps keep theirs,
//! `AppStatus`, in plateau-apps).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Declares a status enum stored and shown as lowercase words: its `ALL`,
/// `as_str`, `read` (a stored word; one this version does not know reads
/// as `$unknown`, so nothing acts on it blindly), `FromStr` and `Display`.
macro_rules! statuses {
    ($(#[$meta:meta])* $name:ident, unknown = $unknown:ident, { $($(#[$vmeta:meta])* $variant:ident = $word:literal,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
        #[serde(rename_all = "lowercase")]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)*
                }
            }

            /// The stored word as a status.
            pub fn read(stored: &str) -> $name {
                stored.parse().unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "reading a stored status");
                    $name::$unknown
                })
            }
        }

        impl FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| {
                        let names: Vec<&str> = $name::ALL.iter().map(|v| v.as_str()).collect();
                        format!("status must be one of {}", names.join(", "))
                    })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

statuses!(
    /// The status of a managed service's resource (a cache, a database).
    ///
    /// `creating` and `updating` answer a change the user asked for that
    /// the host's reconciler has not finished; `running` means every
    /// process answers; `degraded` that one does not (the reconciler
    /// restarts it); `failed` that the last change could not be made (the
    /// resource's `statusDetail` says why; delete it, or ask for another
    /// change).
    Status, unknown = Failed, {
        Creating = "creating",
        Running = "running",
        Updating = "updating",
        Degraded = "degraded",
        Paused = "paused",
        Deleting = "deleting",
        Failed = "failed",
    }
);

impl Status {
    /// A change the user asked for waits for the reconciler.
    pub fn pending(self) -> bool {
        matches!(self, Status::Creating | Status::Updating | Status::Deleting)
    }

    /// Placed and asked nothing more of: supervision keeps it running.
    pub fn settled(self) -> bool {
        matches!(self, Status::Running | Status::Degraded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_words_are_todays() {
        for &status in Status::ALL {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
            assert_eq!(status.as_str().parse::<Status>().unwrap(), status);
        }
        assert_eq!(Status::read("running"), Status::Running);
        assert_eq!(Status::read("sideways"), Status::Failed);
        assert!(
            "sideways"
                .parse::<Status>()
                .unwrap_err()
                .contains("creating")
        );
    }

    #[test]
    fn only_asked_changes_are_pending() {
        let pending: Vec<Status> = Status::ALL
            .iter()
            .copied()
            .filter(|s| s.pending())
            .collect();
        assert_eq!(
            pending,
            [Status::Creating, Status::Updating, Status::Deleting]
        );
        assert!(Status::Degraded.settled() && !Status::Failed.settled());
    }
}
