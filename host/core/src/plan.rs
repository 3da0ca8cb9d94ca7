//! The four flat-rate plans. Their limits (spec section 8) are data in the
//! store's `plans` table; this is only the name.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Free,
    Starter,
    Pro,
    Scale,
}

impl Plan {
    pub const ALL: [Plan; 4] = [Plan::Free, Plan::Starter, Plan::Pro, Plan::Scale];

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Starter => "starter",
            Plan::Pro => "pro",
            Plan::Scale => "scale",
        }
    }

    pub fn is_paid(self) -> bool {
        self != Plan::Free
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown plan {0:?}: use free, starter, pro or scale")]
pub struct UnknownPlan(pub String);

impl FromStr for Plan {
    type Err = UnknownPlan;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Plan::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownPlan(s.to_owned()))
    }
}
