//! The store's error type.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("unsupported database url {0:?}: use sqlite://PATH or postgres://...")]
    UnsupportedUrl(String),
    #[error("{0}")]
    Invalid(String),
    /// A write made together with others failed; each gets the message.
    #[error("database error: {0}")]
    Grouped(String),
}

impl Error {
    /// Whether the error is a violated unique constraint (a duplicate name).
    pub fn is_unique_violation(&self) -> bool {
        match self {
            Error::Database(sqlx::Error::Database(e)) => e.is_unique_violation(),
            _ => false,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
