//! A throwaway PostgreSQL server for one test process: `initdb` into a
//! temporary directory and `pg_ctl start` on a free port, once, on first
//! use. A watchdog process stops the server and deletes its files when the
//! test process exits, however it exits. Each test gets its own database.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct PgCluster {
    port: u16,
    bin: PathBuf,
    as_postgres: bool,
}

static CLUSTER: OnceLock<Result<PgCluster, String>> = OnceLock::new();
static NEXT_DB: AtomicU32 = AtomicU32::new(0);

impl PgCluster {
    /// The process's cluster, started on first use.
    pub fn get() -> &'static PgCluster {
        match CLUSTER.get_or_init(PgCluster::start) {
            Ok(cluster) => cluster,
            Err(e) => panic!("cannot start a throwaway PostgreSQL server: {e}"),
        }
    }

    fn start() -> Result<PgCluster, String> {
        let bin =
            find_bin_dir().ok_or("initdb and pg_ctl not found: install the postgresql package")?;
        let as_postgres = is_root();
        let dir = tempfile::Builder::new()
            .prefix("plateau-pg-")
            .tempdir()
            .map_err(|e| e.to_string())?
            .keep();
        let data = dir.join("data");
        if as_postgres {
            run(Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir))?;
        }
        let port = free_port();
        let mut cluster = PgCluster {
            port,
            bin,
            as_postgres,
        };
        run(cluster.command("initdb").arg("-D").arg(&data).args([
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        ]))?;
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400",
            dir.display()
        );
        run(cluster
            .command("pg_ctl")
            .arg("-D")
            .arg(&data)
            .args(["-o", &options, "-l"])
            .arg(dir.join("log"))
            .args(["-w", "start"]))?;
        cluster.watch(&dir, &data);
        cluster.port = port;
        Ok(cluster)
    }

    fn command(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        cmd
    }

    /// Starts a process that waits for this one to exit, then stops the
    /// server and removes its directory.
    fn watch(&self, dir: &Path, data: &Path) {
        let pg_ctl = self.bin.join("pg_ctl");
        let stop = if self.as_postgres {
            format!(
                "runuser -u postgres -- {} -D {} -m immediate stop",
                pg_ctl.display(),
                data.display()
            )
        } else {
            format!(
                "{} -D {} -m immediate stop",
                pg_ctl.display(),
                data.display()
            )
        };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; {stop} >/dev/null 2>&1; rm -rf {dir}",
            pid = std::process::id(),
            dir = dir.display()
        );
        let _ = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
    }

    /// A new, empty database; returns its URL.
    pub fn create_database(&self) -> String {
        let name = format!(
            "plateau_test_{}_{}",
            std::process::id(),
            NEXT_DB.fetch_add(1, Ordering::SeqCst)
        );
        let psql = self.bin.join("psql");
        let psql = if psql.exists() {
            psql
        } else {
            PathBuf::from("psql")
        };
        let status = Command::new(psql)
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-q",
                "-c",
            ])
            .arg(format!("CREATE DATABASE {name}"))
            .stdout(Stdio::null())
            .status()
            .expect("psql runs");
        assert!(status.success(), "creating database {name}");
        self.url(&name)
    }

    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn find_bin_dir() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .collect();
    candidates.sort();
    candidates.reverse();
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path));
    }
    candidates
        .into_iter()
        .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
