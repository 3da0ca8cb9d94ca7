//! The real `plateau` binary, started for one test on a fresh store.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::client::Client;
use crate::postgres::PgCluster;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// How to start the server.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    pub backend: Backend,
    /// Extra `PLATEAU_*` (or other) environment variables.
    pub env: BTreeMap<String, String>,
    /// Join another server's database instead of a fresh one (several
    /// hosts on one PostgreSQL).
    pub database_url: Option<String>,
}

impl ServerOptions {
    pub fn new(backend: Backend) -> Self {
        ServerOptions {
            backend,
            env: BTreeMap::new(),
            database_url: None,
        }
    }

    /// Another host on `server`'s database, with its bootstrap token.
    pub fn joining(server: &Server) -> Self {
        let mut options = server.options.clone();
        options.database_url = server.database_url.clone();
        options
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.insert(key.to_owned(), value.to_owned());
        self
    }
}

/// A running server with its own data directory (and, on PostgreSQL, its
/// own database). Killed when dropped.
pub struct Server {
    bin: PathBuf,
    child: Option<Child>,
    pub url: String,
    /// The apps edge (`PLATEAU_EDGE_LISTEN`, a free port), `http://127.0.0.1:PORT`.
    pub edge_url: String,
    /// The S3 endpoint (`PLATEAU_STORAGE_LISTEN`, a free port), `http://127.0.0.1:PORT`.
    pub storage_url: String,
    /// The owner token of the first organisation (PLATEAU_BOOTSTRAP_TOKEN).
    pub token: String,
    /// The operator password (PLATEAU_ADMIN_PASSWORD).
    pub admin_password: String,
    pub data_dir: tempfile::TempDir,
    pub database_url: Option<String>,
    pub options: ServerOptions,
}

impl Server {
    /// Starts `bin` (the test's `env!("CARGO_BIN_EXE_plateau")`).
    pub async fn start(bin: &str, options: ServerOptions) -> Server {
        let database_url = match (&options.database_url, options.backend) {
            (Some(url), _) => Some(url.clone()),
            (None, Backend::Sqlite) => None,
            (None, Backend::Postgres) => Some(PgCluster::get().create_database()),
        };
        let mut server = Server {
            bin: PathBuf::from(bin),
            child: None,
            url: String::new(),
            edge_url: String::new(),
            storage_url: String::new(),
            token: options
                .env
                .get("PLATEAU_BOOTSTRAP_TOKEN")
                .cloned()
                .unwrap_or_else(crate::random_token),
            admin_password: "operator-password-for-tests".to_owned(),
            data_dir: tempfile::tempdir().expect("a temporary directory"),
            database_url,
            options,
        };
        server.spawn().await;
        server
    }

    async fn spawn(&mut self) {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("serve")
            .env("PLATEAU_LISTEN", "127.0.0.1:0")
            .env("PLATEAU_EDGE_LISTEN", "127.0.0.1:0")
            .env("PLATEAU_STORAGE_LISTEN", "127.0.0.1:0")
            .env("PLATEAU_DATA_DIR", self.data_dir.path())
            .env("PLATEAU_BOOTSTRAP_TOKEN", &self.token)
            .env("PLATEAU_ADMIN_PASSWORD", &self.admin_password)
            .env("PLATEAU_LOG", "warn")
            .env("PLATEAU_PLUGIN_CACHE_DIR", shared_plugin_cache(&self.bin))
            .envs(&self.options.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        if let Some(url) = &self.database_url {
            cmd.env("PLATEAU_DATABASE_URL", url);
        }
        let mut child = cmd.spawn().expect("the plateau binary starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut edge_url = String::new();
        let mut storage_url = String::new();
        let url = tokio::time::timeout(Duration::from_secs(60), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("edge listening on ") {
                    edge_url = url.to_owned();
                }
                if let Some(url) = line.strip_prefix("storage listening on ") {
                    storage_url = url.to_owned();
                }
                if let Some(url) = line.strip_prefix("listening on ") {
                    return url.to_owned();
                }
            }
            panic!("plateau exited before listening");
        })
        .await
        .expect("plateau listens within 60 s");
        // Keep draining stdout so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.url = url;
        self.edge_url = edge_url;
        self.storage_url = storage_url;
        self.child = Some(child);
    }

    /// A client for the API with the owner token.
    pub fn client(&self) -> Client {
        Client::new(&self.url).with_token(&self.token)
    }

    /// A client without credentials.
    pub fn anonymous(&self) -> Client {
        Client::new(&self.url)
    }

    /// Sends SIGTERM and waits for a clean exit; returns the exit code.
    pub async fn stop(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        if let Some(pid) = child.id() {
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .await;
        }
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("plateau stops within 30 s after SIGTERM")
            .expect("waiting for plateau");
        status.code()
    }

    /// Waits for the server to end on its own (a crash a test provoked);
    /// how it ended. Start it again with [`Server::restart`].
    pub async fn exited(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("the server was running");
        tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("plateau ends within 30 s")
            .expect("waiting for plateau")
    }

    /// Stops the server and starts it again on the same data.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.spawn().await;
    }

    /// Runs another `plateau` command against this server's store.
    pub async fn command(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args)
            .env("PLATEAU_DATA_DIR", self.data_dir.path())
            .env("PLATEAU_LOG", "warn");
        if let Some(url) = &self.database_url {
            cmd.env("PLATEAU_DATABASE_URL", url);
        }
        cmd.output().await.expect("the plateau command runs")
    }

    /// The process id, for signals.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }
}

impl Drop for Server {
    /// Kills the server first, so its supervisors start nothing again, then
    /// what it started under its data directory.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            for _ in 0..200 {
                if !matches!(child.try_wait(), Ok(None)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        crate::orphans::kill_under(self.data_dir.path());
    }
}

/// One compiled-component cache for every server a test run starts, beside
/// the binary: each built-in plugin is compiled once per build, not once per
/// server (which cost seconds of CPU at every start).
fn shared_plugin_cache(bin: &std::path::Path) -> PathBuf {
    bin.parent()
        .map(|dir| dir.join("plateau-plugin-cache"))
        .unwrap_or_else(|| std::env::temp_dir().join("plateau-plugin-cache"))
}
