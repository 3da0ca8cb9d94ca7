//! Where a request's flags live: the project and environment it addresses, the naming rules of
//! keys, and the key-value keys everything is stored under.
//!
//! Storage layout, all in the caller's organisation bucket (`:` never occurs inside a part, so
//! every prefix names exactly one project and environment):
//! - `flag:{project}:{environment}:{key}`: a [`super::store::FlagRecord`];
//! - `evaluator:{project}:{environment}:{name}`: a [`super::store::EvaluatorRecord`];
//! - `revision:{project}:{environment}`: a counter bumped by every change, the source of etags.

use plateau_sdk::{ApiError, Params, Request};

/// The environment used when a request names none.
pub const DEFAULT_ENVIRONMENT: &str = "production";

/// Flag keys that name other routes below `/flags` and so cannot be flags.
pub const RESERVED_KEYS: &[&str] = &["evaluators"];

/// The project and environment a request is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub project: String,
    pub environment: String,
}

/// Why a request's scope is unusable: a bad parameter (400) or a project the token may not
/// address (403). The OFREP routes answer the first one OFREP-shaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeError {
    Invalid {
        field: &'static str,
        message: String,
    },
    Refused(ApiError),
}

impl From<ScopeError> for ApiError {
    fn from(error: ScopeError) -> ApiError {
        match error {
            ScopeError::Invalid { field, message } => ApiError::validation(field, message),
            ScopeError::Refused(error) => error,
        }
    }
}

impl ScopeError {
    /// `field message`, as the problem's detail reads.
    pub fn details(&self) -> String {
        match self {
            ScopeError::Invalid { field, message } => format!("{field} {message}"),
            ScopeError::Refused(error) => error.detail().to_owned(),
        }
    }
}

impl Scope {
    /// The scope of `req`: the `project` query parameter or the caller's project, and the
    /// `environment` path parameter, the `environment` query parameter or `production`.
    ///
    /// The host fills the caller's project with the token's project when the token is bound to
    /// one; a `project` parameter naming another project is then refused, so a project token
    /// never reaches the flags of a sibling project.
    pub fn of(req: &Request, params: &Params) -> Result<Scope, ScopeError> {
        let query = req.query();
        let project = match (query.get("project"), req.caller.project_id.as_deref()) {
            (Some(asked), Some(caller)) if asked != caller => {
                return Err(ScopeError::Refused(ApiError::forbidden(format!(
                    "this token is bound to project {caller}: leave out project or pass {caller}"
                ))));
            }
            (Some(asked), _) => asked,
            (None, Some(caller)) => caller,
            (None, None) => {
                return Err(ScopeError::Invalid {
                    field: "project",
                    message: "is required: pass the project query parameter".to_owned(),
                });
            }
        };
        if !is_project_id(project) {
            return Err(ScopeError::Invalid {
                field: "project",
                message: "must be 1 to 64 of A-Z, a-z, 0-9, _ and -".to_owned(),
            });
        }
        let environment = match (params.get("environment"), query.get("environment")) {
            (Some(path), Some(asked)) if path != asked => {
                return Err(ScopeError::Invalid {
                    field: "environment",
                    message: format!(
                        "is {path} in the path and {asked} in the query: leave out the query parameter"
                    ),
                });
            }
            (Some(environment), _) | (None, Some(environment)) => environment,
            (None, None) => DEFAULT_ENVIRONMENT,
        };
        if !is_environment(environment) {
            return Err(ScopeError::Invalid {
                field: "environment",
                message: "must be 1 to 32 of a-z, 0-9 and -".to_owned(),
            });
        }
        Ok(Scope {
            project: project.to_owned(),
            environment: environment.to_owned(),
        })
    }

    /// `flag:{project}:{environment}:`, the prefix of every flag of this scope.
    pub fn flag_prefix(&self) -> String {
        self.key("flag:", "")
    }

    pub fn flag_key(&self, key: &str) -> String {
        self.key("flag:", key)
    }

    /// `evaluator:{project}:{environment}:`, the prefix of every shared evaluator.
    pub fn evaluator_prefix(&self) -> String {
        self.key("evaluator:", "")
    }

    pub fn evaluator_key(&self, name: &str) -> String {
        self.key("evaluator:", name)
    }

    /// `{kind}{project}:{environment}:{name}`, joined without `format!`, whose machinery
    /// costs a component more than the copy itself (every evaluation builds two keys).
    fn key(&self, kind: &str, name: &str) -> String {
        [kind, &self.project, ":", &self.environment, ":", name].concat()
    }

    /// The counter bumped by every change of this scope.
    pub fn revision_key(&self) -> String {
        format!("revision:{}:{}", self.project, self.environment)
    }
}

/// Flag keys and evaluator names: 1 to 128 of `A-Z a-z 0-9 _ . -`.
pub fn check_name(what: &'static str, name: &str) -> Result<(), ApiError> {
    let valid = (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if !valid {
        return Err(ApiError::validation(
            what,
            "must be 1 to 128 of A-Z, a-z, 0-9, _, . and -",
        ));
    }
    Ok(())
}

/// A flag key that can be created: [`check_name`] and not one of [`RESERVED_KEYS`].
pub fn check_new_flag_key(key: &str) -> Result<(), ApiError> {
    check_name("key", key)?;
    if RESERVED_KEYS.contains(&key) {
        return Err(ApiError::validation(
            "key",
            format!("{key} is reserved for the route /flags/{key}: choose another key"),
        ));
    }
    Ok(())
}

fn is_project_id(project: &str) -> bool {
    (1..=64).contains(&project.len())
        && project
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

fn is_environment(environment: &str) -> bool {
    (1..=32).contains(&environment.len())
        && environment
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}
