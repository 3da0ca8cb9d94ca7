//! The request bodies and their rules (pure): project and environment
//! names, key names (an app's variable names, since keys become env
//! vars), and the limits of an environment.

use plateau_sdk::ApiError;
use serde::Deserialize;
use utoipa::ToSchema;

/// Most keys in one environment.
pub const MAX_KEYS: usize = 200;
/// The longest value, in bytes (an app's variable's limit).
pub const MAX_VALUE: usize = 32 * 1024;
/// Most bytes of all values of one environment.
pub const MAX_TOTAL: usize = 256 * 1024;
/// Most projects per organisation, environments per project.
pub const MAX_PROJECTS: u64 = 100;
pub const MAX_ENVIRONMENTS: u64 = 20;
/// The environments every project starts with.
pub const DEFAULT_ENVIRONMENTS: [&str; 3] = ["development", "preview", "production"];

/// `[A-Za-z_][A-Za-z0-9_]*`, at most 128 bytes: a name an app's
/// environment takes.
pub fn is_key_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && name.len() <= 128
}

/// A project's or an environment's name: lowercase letters, digits and
/// `-`, starting with a letter or digit, at most 63.
pub fn is_slug(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

fn slug(field: &str, name: &str) -> Result<(), ApiError> {
    if is_slug(name) {
        Ok(())
    } else {
        Err(ApiError::validation(
            field,
            "use 1 to 63 lowercase letters, digits and -, starting with a letter or digit",
        ))
    }
}

/// `POST /config/projects`
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewProject {
    /// Lowercase letters, digits and `-`; the project's id in paths.
    pub name: String,
    pub description: Option<String>,
}

impl NewProject {
    pub fn check(&self) -> Result<(), ApiError> {
        slug("name", &self.name)?;
        if self.description.as_ref().is_some_and(|d| d.len() > 1000) {
            return Err(ApiError::validation("description", "at most 1000 bytes"));
        }
        Ok(())
    }
}

/// `POST /config/projects/{project}/environments`
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewEnvironment {
    /// Lowercase letters, digits and `-` (`staging`, `qa-2`).
    pub name: String,
}

impl NewEnvironment {
    pub fn check(&self) -> Result<(), ApiError> {
        slug("name", &self.name)
    }
}

/// One key to set.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetKey {
    /// `[A-Za-z_][A-Za-z0-9_]*`: it becomes an app's variable.
    pub key: String,
    /// May refer to other keys of the environment as `${OTHER_KEY}`.
    pub value: String,
    /// Sealed, never listed, read only with `config:secrets`. Default: the
    /// key's kind so far, else false.
    pub secret: Option<bool>,
}

/// `PATCH .../keys`: a change of several keys, one new version.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeysChange {
    #[serde(default)]
    pub set: Vec<SetKey>,
    /// Names to remove.
    #[serde(default)]
    pub remove: Vec<String>,
}

/// `PUT .../keys/{key}`
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyValue {
    pub value: String,
    pub secret: Option<bool>,
}

impl KeysChange {
    pub fn check(&self) -> Result<(), ApiError> {
        if self.set.is_empty() && self.remove.is_empty() {
            return Err(ApiError::validation("set", "send keys to set or to remove"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, s) in self.set.iter().enumerate() {
            if !is_key_name(&s.key) {
                return Err(ApiError::validation(
                    format!("set[{i}].key"),
                    format!(
                        "{:?} is not a key name: use letters, digits and _, not starting with a digit, at most 128",
                        s.key
                    ),
                ));
            }
            if s.value.len() > MAX_VALUE || s.value.contains('\0') {
                return Err(ApiError::validation(
                    format!("set[{i}].value"),
                    format!(
                        "the value of {} is at most {MAX_VALUE} bytes without NUL",
                        s.key
                    ),
                ));
            }
            if !seen.insert(s.key.as_str()) {
                return Err(ApiError::validation(
                    format!("set[{i}].key"),
                    format!("{} is set twice", s.key),
                ));
            }
        }
        for (i, name) in self.remove.iter().enumerate() {
            if !seen.insert(name.as_str()) {
                return Err(ApiError::validation(
                    format!("remove[{i}]"),
                    format!("{name} is both set and removed, or removed twice"),
                ));
            }
        }
        Ok(())
    }
}

/// `POST .../rollback`
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rollback {
    /// The version whose keys become the environment's again, as a new
    /// version.
    pub version: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_key_name("DATABASE_URL") && is_key_name("_x1"));
        assert!(!is_key_name("1X") && !is_key_name("A-B") && !is_key_name(""));
        assert!(is_slug("production") && is_slug("qa-2"));
        assert!(!is_slug("Prod") && !is_slug("-x") && !is_slug(""));
    }

    #[test]
    fn a_change_names_the_bad_field() {
        let change = KeysChange {
            set: vec![SetKey {
                key: "9X".into(),
                value: "v".into(),
                secret: None,
            }],
            remove: vec![],
        };
        let err = change.check().unwrap_err();
        assert_eq!(err.errors()[0].field, "set[0].key");
    }
}
