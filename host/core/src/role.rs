//! Membership roles within an organisation, and the scopes each role
//! allows: a token acts with the scopes it carries that its user's role
//! allows, so changing a member's role changes what every one of their
//! tokens may do at once.
//!
//! | Role | Scopes |
//! |---|---|
//! | owner | every scope; the only role that may make or unmake owners |
//! | admin | every scope |
//! | member | every scope but `members:write` and `audit:read` |
//! | billing | `usage:read`, `spend:read`, `spend:write`, `rewards:read`, `rewards:write`, `members:read`, `notifications:read`, `notifications:write`, `tokens:read`, `tokens:write` |
//! | viewer | every scope whose verb is `read` but `audit:read`, plus `tokens:read` and `tokens:write` (a viewer mints read-only tokens) |

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::scope::Scopes;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Owner,
    Admin,
    Member,
    Billing,
    Viewer,
}

/// Scopes a member (not an owner or admin) never has.
const MEMBER_DENIED: &[&str] = &["members:write", "audit:read"];

/// The billing role's scopes.
const BILLING_SCOPES: &[&str] = &[
    "usage:read",
    "spend:read",
    "spend:write",
    "rewards:read",
    "rewards:write",
    "members:read",
    "notifications:read",
    "notifications:write",
    "tokens:read",
    "tokens:write",
];

impl Role {
    pub const ALL: [Role; 5] = [
        Role::Owner,
        Role::Admin,
        Role::Member,
        Role::Billing,
        Role::Viewer,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Member => "member",
            Role::Billing => "billing",
            Role::Viewer => "viewer",
        }
    }

    /// Owners and admins manage the organisation and read its audit log.
    pub fn is_manager(self) -> bool {
        matches!(self, Role::Owner | Role::Admin)
    }

    /// Whether the role allows `scope` (the table in this module's doc).
    pub fn allows(self, scope: &str) -> bool {
        match self {
            Role::Owner | Role::Admin => true,
            Role::Member => !MEMBER_DENIED.contains(&scope),
            Role::Billing => BILLING_SCOPES.contains(&scope),
            Role::Viewer => {
                scope != "audit:read" && (scope.ends_with(":read") || scope == "tokens:write")
            }
        }
    }

    /// What a token carrying `scopes` may do for a user of this role, out
    /// of the `known` scopes (the core's and the loaded plugins').
    pub fn restrict<'a>(self, scopes: &Scopes, known: impl IntoIterator<Item = &'a str>) -> Scopes {
        if matches!(self, Role::Owner | Role::Admin) {
            return scopes.clone();
        }
        let set: BTreeSet<String> = match scopes {
            Scopes::All => known
                .into_iter()
                .filter(|s| self.allows(s))
                .map(str::to_owned)
                .collect(),
            Scopes::Set(set) => set.iter().filter(|s| self.allows(s)).cloned().collect(),
        };
        Scopes::Set(set)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown role {0:?}: use owner, admin, member, billing or viewer")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_narrow_a_wildcard_token_to_their_table() {
        let known = [
            "apps:read",
            "apps:write",
            "members:read",
            "members:write",
            "audit:read",
            "usage:read",
            "tokens:write",
        ];
        let names = |r: Role| Role::restrict(r, &Scopes::All, known).names();
        assert_eq!(Role::Owner.restrict(&Scopes::All, known), Scopes::All);
        assert_eq!(Role::Admin.restrict(&Scopes::All, known), Scopes::All);
        assert_eq!(
            names(Role::Member),
            [
                "apps:read",
                "apps:write",
                "members:read",
                "tokens:write",
                "usage:read"
            ]
        );
        assert_eq!(
            names(Role::Billing),
            ["members:read", "tokens:write", "usage:read"]
        );
        assert_eq!(
            names(Role::Viewer),
            ["apps:read", "members:read", "tokens:write", "usage:read"]
        );
        let narrow = Scopes::from_names(["apps:write", "usage:read"]);
        assert_eq!(
            Role::Viewer.restrict(&narrow, known).names(),
            ["usage:read"]
        );
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>().unwrap(), role);
        }
    }
}
