//! The scope model: what a token may do.
//!
//! A token carries a set of scope names (`projects:write`) or the wildcard
//! `*`, which means every scope, including scopes that plugins add later.
//! Only owner tokens made at bootstrap or by `plateau admin create-org` carry
//! the wildcard; a token minted from one may keep it.

use std::collections::BTreeSet;
use std::fmt;

/// A scope the platform knows, with the sentence the OpenAPI document shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeInfo {
    pub name: String,
    pub description: String,
}

/// The wildcard scope.
pub const ALL: &str = "*";

/// The scopes of the core API (spec section 5.3). Plugins add their own.
pub const CORE_SCOPES: &[(&str, &str)] = &[
    ("usage:read", "read the plan, its limits, usage and cost"),
    ("tokens:read", "list API tokens (masked)"),
    ("tokens:write", "mint and revoke API tokens"),
    ("notifications:read", "read notification preferences"),
    ("notifications:write", "change notification preferences"),
    ("connect:read", "list connect grants"),
    ("connect:write", "create, change and delete connect grants"),
    ("manifest:write", "apply multi-service manifests"),
    ("rewards:read", "read rewards, referral and redemption data"),
    ("rewards:write", "claim and redeem rewards"),
    (
        "members:read",
        "list the organisation's members and invitations",
    ),
    (
        "members:write",
        "invite, change the role of and remove members (owners and admins)",
    ),
    ("projects:read", "list projects"),
    ("projects:write", "create and delete projects"),
    ("apps:read", "read apps"),
    ("apps:write", "change apps"),
    ("apps:deploy", "deploy and roll back apps"),
    (
        "waf:read",
        "read firewall rules and the events they recorded",
    ),
    ("waf:write", "create, change and delete firewall rules"),
    (
        "bots:read",
        "read bot policies and the decisions they recorded",
    ),
    ("bots:write", "change bot policies"),
    ("databases:read", "read databases"),
    ("databases:write", "change databases"),
    (
        "cache:read",
        "read caches, their metrics, logs and snapshots",
    ),
    (
        "cache:write",
        "create, change, snapshot, restore and delete caches",
    ),
    (
        "observability:read",
        "read events, metrics, alarms and anomalies",
    ),
    ("observability:write", "change alarms and anomaly monitors"),
    (
        "spend:read",
        "read the month's spend, budgets and what they paused",
    ),
    (
        "spend:write",
        "set spend budgets and resume what they paused",
    ),
    ("registry:read", "pull from the container registry"),
    ("registry:write", "push to the container registry"),
    (
        "storage:read",
        "list object storage buckets and access keys",
    ),
    (
        "storage:write",
        "create and delete buckets and access keys, presign URLs",
    ),
    (
        "audit:read",
        "read and export the audit log (owners and admins)",
    ),
];

/// Whether `name` has the `area:verb` form of a scope.
pub fn is_well_formed(name: &str) -> bool {
    let Some((area, verb)) = name.split_once(':') else {
        return false;
    };
    let part = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    };
    part(area) && part(verb)
}

/// The scopes a token carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scopes {
    /// Every scope, present and future.
    All,
    Set(BTreeSet<String>),
}

impl Scopes {
    pub fn from_names<I, S>(names: I) -> Scopes
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let set: BTreeSet<String> = names.into_iter().map(Into::into).collect();
        if set.contains(ALL) {
            Scopes::All
        } else {
            Scopes::Set(set)
        }
    }

    /// Parses the stored form: names separated by spaces, or `*`.
    pub fn from_stored(stored: &str) -> Scopes {
        Scopes::from_names(stored.split_ascii_whitespace())
    }

    pub fn to_stored(&self) -> String {
        match self {
            Scopes::All => ALL.to_owned(),
            Scopes::Set(set) => set.iter().cloned().collect::<Vec<_>>().join(" "),
        }
    }

    pub fn names(&self) -> Vec<String> {
        match self {
            Scopes::All => vec![ALL.to_owned()],
            Scopes::Set(set) => set.iter().cloned().collect(),
        }
    }

    pub fn allows(&self, scope: &str) -> bool {
        match self {
            Scopes::All => true,
            Scopes::Set(set) => set.contains(scope),
        }
    }

    /// The first scope of `requested` that `self` does not carry, if any.
    pub fn first_missing<'a>(&self, requested: &'a Scopes) -> Option<&'a str> {
        match (self, requested) {
            (Scopes::All, _) => None,
            (Scopes::Set(_), Scopes::All) => Some(ALL),
            (Scopes::Set(mine), Scopes::Set(theirs)) => theirs
                .iter()
                .find(|s| !mine.contains(*s))
                .map(String::as_str),
        }
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, Scopes::Set(set) if set.is_empty())
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_stored())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subset_rules() {
        let owner = Scopes::All;
        let dev = Scopes::from_names(["projects:read", "projects:write"]);
        let read = Scopes::from_names(["projects:read"]);
        assert_eq!(owner.first_missing(&dev), None);
        assert_eq!(dev.first_missing(&read), None);
        assert_eq!(read.first_missing(&dev), Some("projects:write"));
        assert_eq!(dev.first_missing(&owner), Some("*"));
        assert_eq!(Scopes::from_stored(&dev.to_stored()), dev);
        assert_eq!(Scopes::from_stored("*"), Scopes::All);
    }

    #[test]
    fn scope_names_have_area_and_verb() {
        for (name, _) in CORE_SCOPES {
            assert!(is_well_formed(name), "{name}");
        }
        for bad in ["projects", ":read", "Projects:read", "a:b:c d", ""] {
            assert!(!is_well_formed(bad), "{bad}");
        }
    }
}
