//! What the routes answer, as types: the handlers serialize these, and the
//! router declares them, so the OpenAPI document shows the answers the
//! plugin really gives. A secret's value appears only in [`KeyRead`] and
//! [`Values`], which need `config:secrets`.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::record::{Environment, Link, Project, Version};
use crate::resolve;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectView {
    pub name: String,
    pub description: Option<String>,
    /// RFC 3339.
    pub created_at: String,
}

impl From<&Project> for ProjectView {
    fn from(p: &Project) -> ProjectView {
        ProjectView {
            name: p.name.clone(),
            description: p.description.clone(),
            created_at: p.created_at.clone(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentView {
    pub project: String,
    pub name: String,
    /// The current version; 0 before the first change.
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&Environment> for EnvironmentView {
    fn from(e: &Environment) -> EnvironmentView {
        EnvironmentView {
            project: e.project.clone(),
            name: e.name.clone(),
            version: e.version,
            created_at: e.created_at.clone(),
            updated_at: e.updated_at.clone(),
        }
    }
}

/// A key as lists show it: a secret's value never.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    pub key: String,
    pub secret: bool,
    /// The value as written, `${REFERENCES}` unexpanded; null for a secret.
    pub value: Option<String>,
    /// The value with references expanded; null when it would contain a
    /// secret's (read it with `config:secrets`).
    pub computed: Option<String>,
    /// The keys the value refers to.
    pub references: Vec<String>,
    /// The version that last set it.
    pub version: u64,
}

impl KeyView {
    pub fn of(version: &Version, key: &str) -> Option<KeyView> {
        let entry = version.entries.get(key)?;
        Some(KeyView {
            key: key.to_owned(),
            secret: entry.secret,
            value: if entry.secret {
                None
            } else {
                entry.value.clone()
            },
            computed: resolve::config_only(version, key),
            references: entry.refs.clone(),
            version: entry.since,
        })
    }

    pub fn all(version: &Version) -> Vec<KeyView> {
        version
            .entries
            .keys()
            .filter_map(|k| KeyView::of(version, k))
            .collect()
    }
}

/// One key read with its value (audited when it holds a secret's).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyRead {
    pub key: String,
    pub secret: bool,
    /// As written.
    pub value: String,
    /// With references expanded.
    pub computed: String,
    pub references: Vec<String>,
    /// The environment's version read.
    pub environment_version: u64,
}

/// Every key's resolved value: what a linked app gets.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Values {
    pub project: String,
    pub environment: String,
    pub version: u64,
    pub values: BTreeMap<String, String>,
}

/// A version: what its change did, never values.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionView {
    pub version: u64,
    /// Keys set by the change.
    pub set: Vec<String>,
    /// Keys removed by the change.
    pub removed: Vec<String>,
    /// The version a rollback restored.
    pub rollback_of: Option<u64>,
    /// `user:<id>` or `token:<id>`.
    pub actor: Option<String>,
    pub created_at: String,
}

impl From<&Version> for VersionView {
    fn from(v: &Version) -> VersionView {
        VersionView {
            version: v.version,
            set: v.set.clone(),
            removed: v.removed.clone(),
            rollback_of: v.rollback_of,
            actor: v.actor.clone(),
            created_at: v.created_at.clone(),
        }
    }
}

/// A version with its keys as lists show them.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionDetail {
    pub version: u64,
    pub set: Vec<String>,
    pub removed: Vec<String>,
    pub rollback_of: Option<u64>,
    pub actor: Option<String>,
    pub created_at: String,
    pub keys: Vec<KeyView>,
}

impl From<&Version> for VersionDetail {
    fn from(v: &Version) -> VersionDetail {
        VersionDetail {
            version: v.version,
            set: v.set.clone(),
            removed: v.removed.clone(),
            rollback_of: v.rollback_of,
            actor: v.actor.clone(),
            created_at: v.created_at.clone(),
            keys: KeyView::all(v),
        }
    }
}

/// An app linked to an environment, and how its sync went.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkView {
    pub app_id: String,
    pub app_name: String,
    pub project: String,
    pub environment: String,
    pub linked_at: String,
    /// The environment version the app has; null until the first sync.
    pub synced_version: Option<u64>,
    pub synced_at: Option<String>,
    /// The redeployment the last sync started.
    pub deployment: Option<String>,
    /// Why the last sync failed.
    pub last_error: Option<String>,
}

impl LinkView {
    pub fn of(link: &Link) -> Option<LinkView> {
        Some(LinkView {
            app_id: link.app_id.clone(),
            app_name: link.app_name.clone(),
            project: link.project.clone()?,
            environment: link.environment.clone()?,
            linked_at: link.linked_at.clone(),
            synced_version: link.synced_version,
            synced_at: link.synced_at.clone(),
            deployment: link.deployment.clone(),
            last_error: link.last_error.clone(),
        })
    }
}
