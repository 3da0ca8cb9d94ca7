//! The old pooler for `bench databases`: Debian 12's pgbouncer 1.18
//! (`/usr/sbin/pgbouncer`) started beside a managed database's own
//! pgbouncer 1.24, on the same settings (its `pgbouncer.ini` with another
//! port, log and pid file and the same TLS certificate), as the cluster's
//! OS user. It knows the one role the bench logs in as, with its password
//! in its own users file (1.18 does not log in to the server with the
//! keys of a client verified through `auth_query`). 1.18 has no
//! `max_prepared_statements`: in transaction mode a protocol-level
//! prepared statement fails once a server connection is shared, so it
//! serves the owner's database in transaction mode (for `-M simple`) and
//! again as `<database>_session` in session mode (for `-M prepared`, the
//! way 1.18 can carry it), with `DISCARD ALL` when a session ends so the
//! next client's statements do not collide.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Debian's pgbouncer.
const OLD_PGBOUNCER: &str = "/usr/sbin/pgbouncer";

pub struct OldPooler {
    dir: PathBuf,
    pub port: u16,
}

impl OldPooler {
    /// Starts 1.18 for cluster `id` under the server's data directory,
    /// serving `database` (the owner's) and `<database>_session` to
    /// `(user, password)`.
    pub async fn start(
        data: &Path,
        id: &str,
        database: &str,
        (user, password): (&str, &str),
    ) -> anyhow::Result<OldPooler> {
        if !Path::new(OLD_PGBOUNCER).exists() {
            bail!("{OLD_PGBOUNCER} not found: install Debian's pgbouncer");
        }
        let cluster = data.join("databases").join(id);
        let ini = std::fs::read_to_string(cluster.join("pooler/pgbouncer.ini"))
            .context("reading the cluster's pgbouncer.ini")?;
        let owner = std::fs::metadata(cluster.join("pooler"))?;
        let dir = cluster.join("pooler-1.18");
        std::fs::create_dir_all(&dir)?;
        std::os::unix::fs::chown(&dir, Some(owner.uid()), Some(owner.gid()))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let named = format!("{database} = ");
        let mut out = String::new();
        for line in ini.lines() {
            let key = line.split('=').next().unwrap_or_default().trim();
            match key {
                "max_prepared_statements" | "auth_user" | "auth_query" => continue,
                "auth_file" => out.push_str(&format!(
                    "auth_file = {}\n",
                    dir.join("users.txt").display()
                )),
                "listen_port" => out.push_str(&format!("listen_port = {port}\n")),
                "logfile" => out.push_str(&format!(
                    "logfile = {}\n",
                    dir.join("pgbouncer.log").display()
                )),
                "pidfile" => out.push_str(&format!(
                    "pidfile = {}\n",
                    dir.join("pgbouncer.pid").display()
                )),
                "server_reset_query" => out.push_str("server_reset_query = DISCARD ALL\n"),
                _ if line.starts_with(&named) => {
                    let target = &line[named.len()..];
                    out.push_str(&format!("{line}\n"));
                    out.push_str(&format!(
                        "{database}_session = {target} dbname={database} pool_mode=session\n"
                    ));
                }
                _ => out.push_str(&format!("{line}\n")),
            }
        }
        let users = dir.join("users.txt");
        std::fs::write(
            &users,
            format!(
                "\"{}\" \"{}\"\n",
                user.replace('"', "\"\""),
                password.replace('"', "\"\"")
            ),
        )?;
        let conf = dir.join("pgbouncer.ini");
        std::fs::write(&conf, out)?;
        for file in [&conf, &users] {
            std::os::unix::fs::chown(file, Some(owner.uid()), Some(owner.gid()))?;
        }
        let os_user = std::process::Command::new("id")
            .args(["-nu", &owner.uid().to_string()])
            .output()?;
        let os_user = String::from_utf8_lossy(&os_user.stdout).trim().to_owned();
        let mut cmd = if os_user == "root" || os_user.is_empty() {
            std::process::Command::new(OLD_PGBOUNCER)
        } else {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", &os_user, "--", OLD_PGBOUNCER]);
            c
        };
        let status = cmd.arg("-d").arg(&conf).status()?;
        if !status.success() {
            let log = std::fs::read_to_string(dir.join("pgbouncer.log")).unwrap_or_default();
            bail!("pgbouncer 1.18 did not start: {log}");
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if Instant::now() > deadline {
                bail!("pgbouncer 1.18 does not listen on {port}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(OldPooler { dir, port })
    }

    /// The end of its log, for an error.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(8)..].join("\n")
    }

    /// Stops it (SIGTERM to the pid it wrote).
    pub fn stop(self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("pgbouncer.pid")) {
            let _ = std::process::Command::new("kill").arg(pid.trim()).status();
        }
    }
}
