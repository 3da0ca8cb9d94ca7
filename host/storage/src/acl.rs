//! Access control lists of buckets and objects, as S3 has them: an owner
//! (an organisation id, S3's canonical user id) and grants of READ,
//! WRITE, READ_ACP, WRITE_ACP or FULL_CONTROL to an organisation, to
//! anyone (`AllUsers`) or to any signed request (`AuthenticatedUsers`).
//! A bucket's is its `acl` setting, an object's is in its headers; both
//! are absent for the default (private to the bucket's organisation).
//! The `public-read` kept by name before grants existed reads as its
//! grants.

use serde::{Deserialize, Serialize};

/// A stored ACL: grants, or a canned name kept by earlier versions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Acl {
    Canned(String),
    Grants(Grants),
}

/// An owner and what each grantee may do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grants {
    pub owner: String,
    pub grants: Vec<Grant>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub grantee: Grantee,
    pub permission: Permission,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grantee {
    /// An organisation, by id.
    User(String),
    AllUsers,
    AuthenticatedUsers,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Permission {
    Read,
    Write,
    ReadAcp,
    WriteAcp,
    FullControl,
}

impl Permission {
    pub const ALL: [Permission; 5] = [
        Permission::Read,
        Permission::Write,
        Permission::ReadAcp,
        Permission::WriteAcp,
        Permission::FullControl,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "READ",
            Permission::Write => "WRITE",
            Permission::ReadAcp => "READ_ACP",
            Permission::WriteAcp => "WRITE_ACP",
            Permission::FullControl => "FULL_CONTROL",
        }
    }

    pub fn parse(s: &str) -> Option<Permission> {
        Permission::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// Who asks: nobody (no signature) or a key of an organisation.
#[derive(Clone, Copy, Debug)]
pub enum Caller<'a> {
    Anonymous,
    Org(&'a str),
}

/// The canned ACLs Plateau gives grants to (`aws-exec-read` and
/// `log-delivery-write` name services Plateau has not).
pub const CANNED: [&str; 6] = [
    "private",
    "public-read",
    "public-read-write",
    "authenticated-read",
    "bucket-owner-read",
    "bucket-owner-full-control",
];

impl Acl {
    /// The owner and grants, `owner` where the ACL was kept by name.
    pub fn resolve(&self, owner: &str) -> Grants {
        match self {
            Acl::Grants(g) => g.clone(),
            Acl::Canned(name) => {
                Grants::canned(name, owner, owner).unwrap_or_else(|| Grants::private(owner))
            }
        }
    }
}

impl Grants {
    /// The owner's full control, and nothing else.
    pub fn private(owner: &str) -> Grants {
        Grants {
            owner: owner.to_owned(),
            grants: vec![Grant {
                grantee: Grantee::User(owner.to_owned()),
                permission: Permission::FullControl,
            }],
        }
    }

    /// The grants of the canned ACL `name` for a resource of `owner` in
    /// a bucket of `bucket_owner`; None for a name not in [`CANNED`].
    pub fn canned(name: &str, owner: &str, bucket_owner: &str) -> Option<Grants> {
        let mut acl = Grants::private(owner);
        let mut add = |grantee, permission| {
            acl.grants.push(Grant {
                grantee,
                permission,
            })
        };
        match name {
            "private" => {}
            "public-read" => add(Grantee::AllUsers, Permission::Read),
            "public-read-write" => {
                add(Grantee::AllUsers, Permission::Read);
                add(Grantee::AllUsers, Permission::Write);
            }
            "authenticated-read" => add(Grantee::AuthenticatedUsers, Permission::Read),
            "bucket-owner-read" if owner != bucket_owner => {
                add(Grantee::User(bucket_owner.to_owned()), Permission::Read);
            }
            "bucket-owner-full-control" if owner != bucket_owner => {
                add(
                    Grantee::User(bucket_owner.to_owned()),
                    Permission::FullControl,
                );
            }
            "bucket-owner-read" | "bucket-owner-full-control" => {}
            _ => return None,
        }
        Some(acl)
    }

    /// Whether `caller` has `permission` (or FULL_CONTROL), by a grant or,
    /// for READ_ACP and WRITE_ACP, as the owner; `public` false leaves
    /// out the grants to everyone and to any signed request
    /// (IgnorePublicAcls).
    pub fn allows(&self, caller: Caller<'_>, permission: Permission, public: bool) -> bool {
        if let Caller::Org(org) = caller
            && org == self.owner
            && matches!(permission, Permission::ReadAcp | Permission::WriteAcp)
        {
            return true;
        }
        self.grants.iter().any(|g| {
            let who = match (&g.grantee, caller) {
                (Grantee::User(id), Caller::Org(org)) => id == org,
                (Grantee::AllUsers, _) => public,
                (Grantee::AuthenticatedUsers, Caller::Org(_)) => public,
                _ => false,
            };
            who && (g.permission == permission || g.permission == Permission::FullControl)
        })
    }

    /// Whether a grant goes to everyone or to any signed request (what a
    /// public access block's BlockPublicAcls refuses).
    pub fn is_public(&self) -> bool {
        self.grants
            .iter()
            .any(|g| matches!(g.grantee, Grantee::AllUsers | Grantee::AuthenticatedUsers))
    }

    /// The ACL to keep: None for the default (private to `bucket_owner`).
    pub fn stored(self, bucket_owner: &str) -> Option<Acl> {
        (self != Grants::private(bucket_owner)).then_some(Acl::Grants(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_allow_their_grantees_only() {
        let acl = Grants::canned("public-read", "org_a", "org_a").unwrap();
        assert!(acl.allows(Caller::Anonymous, Permission::Read, true));
        assert!(!acl.allows(Caller::Anonymous, Permission::Read, false));
        assert!(!acl.allows(Caller::Anonymous, Permission::Write, true));
        assert!(acl.allows(Caller::Org("org_a"), Permission::Write, true));
        assert!(!acl.allows(Caller::Org("org_b"), Permission::ReadAcp, true));
        let auth = Grants::canned("authenticated-read", "org_a", "org_a").unwrap();
        assert!(auth.allows(Caller::Org("org_b"), Permission::Read, true));
        assert!(!auth.allows(Caller::Anonymous, Permission::Read, true));
        let mut only = Grants::private("org_a");
        only.grants[0].permission = Permission::Write;
        assert!(only.allows(Caller::Org("org_a"), Permission::ReadAcp, true));
        assert!(!only.allows(Caller::Org("org_a"), Permission::Read, true));
    }

    #[test]
    fn the_legacy_canned_name_reads_as_its_grants() {
        let acl: Acl = serde_json::from_str("\"public-read\"").unwrap();
        let grants = acl.resolve("org_a");
        assert_eq!(
            grants,
            Grants::canned("public-read", "org_a", "org_a").unwrap()
        );
        let stored = serde_json::to_string(&Acl::Grants(grants.clone())).unwrap();
        assert_eq!(
            serde_json::from_str::<Acl>(&stored).unwrap(),
            Acl::Grants(grants)
        );
        assert_eq!(Grants::private("org_a").stored("org_a"), None);
        let written = Grants::canned("bucket-owner-read", "org_b", "org_a").unwrap();
        assert!(written.allows(Caller::Org("org_a"), Permission::Read, true));
        assert!(Grants::canned("aws-exec-read", "a", "a").is_none());
    }
}
