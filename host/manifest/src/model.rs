//! What a manifest asks for, once parsed: a project, its databases,
//! caches (`redis`) and apps, each named, and the keys that name them in
//! references (`databases.main`) and in the plan.

use std::collections::BTreeMap;
use std::fmt;

use crate::refs::Template;

/// The three kinds of item, as a manifest spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Database,
    Redis,
    App,
}

impl Kind {
    /// The manifest's key for the kind: `databases`, `redis`, `apps`.
    pub fn section(self) -> &'static str {
        match self {
            Kind::Database => "databases",
            Kind::Redis => "redis",
            Kind::App => "apps",
        }
    }

    pub fn from_section(s: &str) -> Option<Kind> {
        match s {
            "databases" => Some(Kind::Database),
            "redis" => Some(Kind::Redis),
            "apps" => Some(Kind::App),
            _ => None,
        }
    }

    /// What a plan calls one item of the kind: `database`, `redis`, `app`.
    pub fn singular(self) -> &'static str {
        match self {
            Kind::Database => "database",
            Kind::Redis => "redis",
            Kind::App => "app",
        }
    }

    /// The attributes a reference may read from an item of the kind.
    pub fn attributes(self) -> &'static [&'static str] {
        match self {
            Kind::Database => &[
                "uri", "writeUri", "host", "port", "database", "username", "password", "id",
            ],
            Kind::Redis => &["uri", "host", "port", "username", "password", "id"],
            Kind::App => &["url", "id"],
        }
    }
}

/// One item: its kind and name (`databases.main`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub kind: Kind,
    pub name: String,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.kind.section(), self.name)
    }
}

/// A managed PostgreSQL database; absent settings are the service's
/// defaults on creation and left as they are afterwards.
#[derive(Clone, Debug, Default)]
pub struct DatabaseSpec {
    pub name: String,
    pub version: Option<String>,
    pub replicas: Option<i64>,
    pub memory_mb: Option<i64>,
    pub cpus: Option<i64>,
    pub disk_gb: Option<i64>,
    pub backup_retention_days: Option<i64>,
}

/// A managed Redis cache; absent settings as for databases.
#[derive(Clone, Debug, Default)]
pub struct RedisSpec {
    pub name: String,
    pub memory_mb: Option<i64>,
    pub eviction_policy: Option<String>,
    pub replicas: Option<i64>,
    pub persistence: Option<String>,
    pub tls: Option<bool>,
}

/// An app deployed from an image, with its environment.
#[derive(Clone, Debug, Default)]
pub struct AppSpec {
    pub name: String,
    pub image: String,
    pub port: Option<i64>,
    pub health_check_path: Option<String>,
    /// Variables the manifest owns; the app's other variables are left
    /// alone.
    pub env: BTreeMap<String, Template>,
}

/// A whole manifest.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    /// The project's name: found, or created.
    pub project: String,
    /// Whether apply deletes what the plan lists as `delete-if-pruned`.
    pub prune: bool,
    pub databases: Vec<DatabaseSpec>,
    pub redis: Vec<RedisSpec>,
    pub apps: Vec<AppSpec>,
}

impl Manifest {
    /// Every item's key with its index in its section, in document order.
    pub fn keys(&self) -> Vec<(Key, usize)> {
        let named = |kind: Kind, names: Vec<&String>| {
            names
                .into_iter()
                .enumerate()
                .map(move |(i, n)| {
                    (
                        Key {
                            kind,
                            name: n.clone(),
                        },
                        i,
                    )
                })
                .collect::<Vec<_>>()
        };
        let mut all = named(
            Kind::Database,
            self.databases.iter().map(|d| &d.name).collect(),
        );
        all.extend(named(
            Kind::Redis,
            self.redis.iter().map(|r| &r.name).collect(),
        ));
        all.extend(named(
            Kind::App,
            self.apps.iter().map(|a| &a.name).collect(),
        ));
        all
    }

    /// The items `key` refers to, in the order its fields name them.
    pub fn dependencies(&self, key: &Key) -> Vec<Key> {
        match key.kind {
            Kind::App => self
                .apps
                .iter()
                .find(|a| a.name == key.name)
                .map(|a| {
                    a.env
                        .values()
                        .flat_map(|t| t.refs())
                        .map(|r| r.key.clone())
                        .collect()
                })
                .unwrap_or_default(),
            Kind::Database | Kind::Redis => Vec::new(),
        }
    }
}
