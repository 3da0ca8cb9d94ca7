//! Settings shared by the commands, from flags or `PLATEAU_*` variables.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use plateau_store::Db;

/// Where the data lives.
#[derive(Args, Clone, Debug)]
pub struct StoreArgs {
    /// Directory for the embedded database and other local state.
    #[arg(long, env = "PLATEAU_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// `sqlite://PATH` or `postgres://...`; default: a SQLite file in the data directory.
    #[arg(long, env = "PLATEAU_DATABASE_URL")]
    pub database_url: Option<String>,
}

impl StoreArgs {
    /// Opens (creating and migrating as needed) the configured database.
    pub async fn open(&self) -> anyhow::Result<Db> {
        std::fs::create_dir_all(&self.data_dir)
            .with_context(|| format!("creating the data directory {}", self.data_dir.display()))?;
        let url = match &self.database_url {
            Some(url) => url.clone(),
            None => Db::sqlite_url(&self.data_dir),
        };
        Db::connect(&url)
            .await
            .with_context(|| format!("opening {}", plateau_store::db::redact(&url)))
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}
