//! The stored shapes and their keys in the organisation's bucket:
//!
//! | Key | Value |
//! |---|---|
//! | `p/{project}` | [`Project`] |
//! | `e/{project}/{env}` | [`Environment`]: its current version number |
//! | `v/{project}/{env}/{version:010}` | [`Version`]: every key of that version |
//! | `l/{app}` | [`Link`]: the environment an app is linked to |
//! | `la/{project}/{env}/{app}` | the links of an environment (empty) |
//!
//! A version holds the whole environment (config values in the clear,
//! secrets sealed by the host's `secrets`, hex), so reading or restoring
//! one is a single read. The newest [`KEEP_VERSIONS`] are kept.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How many versions of an environment are kept.
pub const KEEP_VERSIONS: u64 = 100;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub name: String,
    pub description: Option<String>,
    pub created_at: String,
}

impl Project {
    pub fn key(name: &str) -> String {
        format!("p/{name}")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Environment {
    pub project: String,
    pub name: String,
    /// 0 until the first change.
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
}

impl Environment {
    pub fn key(project: &str, name: &str) -> String {
        format!("e/{project}/{name}")
    }

    pub fn prefix(project: &str) -> String {
        format!("e/{project}/")
    }

    /// What the apps' timeline names as the source of a sync.
    pub fn source(&self) -> String {
        format!("config:{}/{}", self.project, self.name)
    }
}

/// One key of a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub secret: bool,
    /// A config value, in the clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// A secret, sealed by the host, in hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
    /// The keys its value refers to, kept so the graph is checked without
    /// opening secrets.
    #[serde(default)]
    pub refs: Vec<String>,
    /// The version that last set it.
    pub since: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    pub version: u64,
    pub entries: BTreeMap<String, Entry>,
    /// Names set and removed by the change that made it.
    pub set: Vec<String>,
    pub removed: Vec<String>,
    /// The version a rollback restored.
    pub rollback_of: Option<u64>,
    pub actor: Option<String>,
    pub created_at: String,
}

impl Version {
    pub fn key(project: &str, env: &str, version: u64) -> String {
        format!("v/{project}/{env}/{version:010}")
    }

    pub fn prefix(project: &str, env: &str) -> String {
        format!("v/{project}/{env}/")
    }

    /// Version 0: no keys.
    pub fn empty() -> Version {
        Version {
            version: 0,
            entries: BTreeMap::new(),
            set: Vec::new(),
            removed: Vec::new(),
            rollback_of: None,
            actor: None,
            created_at: String::new(),
        }
    }

    /// Key → the keys it refers to.
    pub fn graph(&self) -> BTreeMap<String, Vec<String>> {
        self.entries
            .iter()
            .map(|(k, e)| (k.clone(), e.refs.clone()))
            .collect()
    }
}

/// The environment an app is linked to; kept after an unlink (with no
/// environment) so `seq` keeps growing.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    pub app_id: String,
    pub app_name: String,
    pub project: Option<String>,
    pub environment: Option<String>,
    /// Grows with every link and unlink: the high half of a sync's revision.
    pub seq: u64,
    pub linked_at: String,
    /// The environment version the app has, once synced.
    pub synced_version: Option<u64>,
    pub synced_at: Option<String>,
    /// The redeployment the last sync started.
    pub deployment: Option<String>,
    pub last_error: Option<String>,
}

impl Link {
    pub fn key(app: &str) -> String {
        format!("l/{app}")
    }

    pub fn index(project: &str, env: &str, app: &str) -> String {
        format!("la/{project}/{env}/{app}")
    }

    pub fn index_prefix(project: &str, env: &str) -> String {
        format!("la/{project}/{env}/")
    }

    /// The revision of a sync at environment `version`: it grows with
    /// every version and with every link and unlink.
    pub fn revision(&self, version: u64) -> u64 {
        (self.seq << 32) | (version & 0xffff_ffff)
    }
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let bytes = [0u8, 1, 171, 255];
        assert_eq!(hex(&bytes), "0001abff");
        assert_eq!(unhex("0001abff").unwrap(), bytes);
        assert!(unhex("abc").is_none() && unhex("zz").is_none());
    }

    #[test]
    fn revisions_grow_with_links_and_versions() {
        let mut link = Link {
            app_id: "app_1".into(),
            app_name: "web".into(),
            project: None,
            environment: None,
            seq: 1,
            linked_at: String::new(),
            synced_version: None,
            synced_at: None,
            deployment: None,
            last_error: None,
        };
        let first = link.revision(7);
        assert!(link.revision(8) > first);
        link.seq = 2;
        assert!(link.revision(0) > first);
    }
}
