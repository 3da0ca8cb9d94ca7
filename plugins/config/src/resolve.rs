//! Values of a version as readers get them: secrets opened through the
//! host's `secrets` (never with a key the plugin holds), then references
//! expanded by [`crate::refs`].

use std::collections::BTreeMap;

use plateau_sdk::{ApiError, Namespace, secrets};

use crate::record::{Entry, Version, hex, unhex};
use crate::refs;

/// A secret sealed for the organisation `ns`, in hex.
pub fn seal(ns: &Namespace, value: &str) -> Result<String, ApiError> {
    Ok(hex(&secrets::seal_str(ns, value)?))
}

/// The raw value of an entry, opening a secret.
pub fn raw(ns: &Namespace, key: &str, entry: &Entry) -> Result<String, ApiError> {
    match (&entry.value, &entry.sealed) {
        (Some(value), _) => Ok(value.clone()),
        (None, Some(sealed)) => {
            let bytes = unhex(sealed)
                .ok_or_else(|| ApiError::internal(format!("{key}: the sealed value is not hex")))?;
            Ok(secrets::open_str(ns, &bytes)?)
        }
        (None, None) => Err(ApiError::internal(format!("{key} has no value"))),
    }
}

/// Whether `key`'s resolved value contains a secret's (it is one, or
/// refers to one, directly or not).
pub fn touches_secret(version: &Version, key: &str) -> bool {
    refs::closure(&version.graph(), key)
        .iter()
        .any(|k| version.entries.get(k).is_some_and(|e| e.secret))
}

/// The secrets `key`'s resolved value contains, by name.
pub fn secrets_of(version: &Version, key: &str) -> Vec<String> {
    refs::closure(&version.graph(), key)
        .into_iter()
        .filter(|k| version.entries.get(k).is_some_and(|e| e.secret))
        .collect()
}

fn resolve_error(e: refs::RefError) -> ApiError {
    ApiError::validation(e.key(), e.message())
}

/// `key`'s raw value and resolved value.
pub fn one(ns: &Namespace, version: &Version, key: &str) -> Result<(String, String), ApiError> {
    let mut raws = BTreeMap::new();
    for k in refs::closure(&version.graph(), key) {
        if let Some(entry) = version.entries.get(&k) {
            raws.insert(k.clone(), raw(ns, &k, entry)?);
        }
    }
    let resolved = refs::resolve(&raws, key).map_err(resolve_error)?;
    let own = raws.remove(key).unwrap_or_default();
    Ok((own, resolved))
}

/// Every key's resolved value.
pub fn all(ns: &Namespace, version: &Version) -> Result<BTreeMap<String, String>, ApiError> {
    let mut raws = BTreeMap::new();
    for (k, entry) in &version.entries {
        raws.insert(k.clone(), raw(ns, k, entry)?);
    }
    refs::resolve_all(&raws).map_err(resolve_error)
}

/// The resolved value of a key that touches no secret (none opened).
pub fn config_only(version: &Version, key: &str) -> Option<String> {
    if touches_secret(version, key) {
        return None;
    }
    let mut raws = BTreeMap::new();
    for k in refs::closure(&version.graph(), key) {
        raws.insert(k.clone(), version.entries.get(&k)?.value.clone()?);
    }
    refs::resolve(&raws, key).ok()
}
