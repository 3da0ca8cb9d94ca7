//! The local provider: each cluster is a real PostgreSQL leader, its
//! streaming standbys (`members`), a pgbouncer and the write endpoint
//! (`router`) on this host, on ports the host allocates, with their files
//! under `<data dir>/databases/<cluster id>/`: `nodeN/data` (a member's
//! data directory, its log beside it), `pooler/` and `router/`. When the
//! host runs as root, each cluster's processes run as a user of its own
//! (`users`). Every connection as the host's superuser carries
//! [`crate::host_session::SETTINGS`]. The ports are claimed in files
//! (`ports`), so the API process and the agent never hand out one twice.

mod archive;
pub use archive::segment_of;
mod conf;
pub use conf::{failover_slots, read_database};
mod failover;
mod members;
mod ports;
mod provider;
mod reset;
mod restore;
mod router;
pub mod supervise;
mod tls;
pub mod users;

use std::collections::HashMap;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nix::sys::signal::Signal;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};

use crate::Supervised;
use crate::scram;
use crate::spec::{ADMIN_ROLE, ClusterSpec, Credentials, Member, Node, Placement};
use crate::{Error, Result, bins};

/// Settings of the local provider.
#[derive(Clone, Debug)]
pub struct LocalConfig {
    /// `<data dir>/databases`.
    pub root: PathBuf,
    /// The address servers listen on and clients connect to.
    pub address: String,
    /// Where versions not from Debian are unpacked ([`bins::default_root`]).
    pub binaries: PathBuf,
    /// The `pgbouncer` binary.
    pub pgbouncer: PathBuf,
    /// The `haproxy` binary of the write endpoints.
    pub haproxy: PathBuf,
    /// Where base backups and archived WAL go (`archive`).
    pub backups: plateau_object_store::Opened,
}

pub struct LocalProvider {
    config: LocalConfig,
    /// Whether the host runs as root: then each cluster runs as its own
    /// user ([`users`]).
    root: bool,
    /// The ports of the clusters ([`ports`]).
    ports: plateau_kernel::Ports,
    /// One template made at a time.
    templates: tokio::sync::Mutex<()>,
    /// Since when each cluster's leader has not accepted connections
    /// while its process lives.
    unreachable: Mutex<HashMap<String, std::time::Instant>>,
}

impl LocalProvider {
    /// Prepares `root` so the clusters' users can reach their own
    /// directories in it, and only those.
    pub fn new(config: LocalConfig) -> Result<Self> {
        std::fs::create_dir_all(&config.root)?;
        let root = nix::unistd::geteuid().is_root();
        if root {
            // The clusters' users must pass through every directory above
            // their own (search permission only, never listing).
            for dir in config.root.ancestors().skip(1) {
                let Ok(meta) = std::fs::metadata(dir) else {
                    continue;
                };
                let mode = meta.permissions().mode();
                if mode & 0o001 == 0 {
                    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o001))?;
                }
            }
            // The root's, which they may cross but not list (it belonged to
            // `postgres` before clusters had users of their own).
            std::os::unix::fs::chown(&config.root, Some(0), Some(0))?;
            std::fs::set_permissions(&config.root, std::fs::Permissions::from_mode(0o711))?;
        }
        Ok(LocalProvider {
            ports: plateau_kernel::Ports::new(config.root.join(".ports"), &config.address),
            config,
            root,
            templates: tokio::sync::Mutex::new(()),
            unreachable: Mutex::new(HashMap::new()),
        })
    }

    /// The user cluster `cluster`'s processes run as: the owner of its
    /// directory (its own user, or `postgres` for a cluster not moved yet);
    /// none when the host is not root.
    fn user_of(&self, cluster: &str) -> Option<String> {
        self.root.then(|| {
            users::owner_of(&self.cluster_dir(cluster))
                .map_or_else(|| users::TEMPLATES.to_owned(), |o| o.name)
        })
    }

    /// The user the templates are made as.
    fn template_user(&self) -> Option<&str> {
        self.root.then_some(users::TEMPLATES)
    }

    fn cluster_dir(&self, cluster: &str) -> PathBuf {
        self.config.root.join(cluster)
    }

    /// The data directory of member `node`.
    fn data_dir(&self, cluster: &str, node: &str) -> PathBuf {
        self.cluster_dir(cluster).join(node).join("data")
    }

    fn pooler_dir(&self, cluster: &str) -> PathBuf {
        self.cluster_dir(cluster).join("pooler")
    }

    fn bin(&self, version: &str) -> Result<PathBuf> {
        bins::bin_dir(&self.config.binaries, version)
            .ok_or_else(|| Error::VersionMissing(version.to_owned()))
    }

    /// Whether the binaries of `version` are installed.
    pub fn has_version(&self, version: &str) -> bool {
        self.bin(version).is_ok()
    }

    /// Writes a file only the owner of its directory reads.
    fn write_private(&self, path: &Path, text: &str) -> Result<()> {
        std::fs::write(path, text)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        self.give_to_parents_owner(path)
    }

    /// Makes a directory (mode 0700) owned by the owner of its parent.
    fn mkdir(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        self.give_to_parents_owner(dir)
    }

    /// Makes a directory (mode 0700) owned by `owner` (when root).
    fn mkdir_owned(&self, dir: &Path, owner: Option<&users::Owner>) -> Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        if let Some(owner) = owner {
            std::os::unix::fs::chown(dir, Some(owner.uid), Some(owner.gid))?;
        }
        Ok(())
    }

    fn give_to_parents_owner(&self, path: &Path) -> Result<()> {
        if self.root
            && let Some(owner) = path.parent().and_then(users::owner_of)
        {
            std::os::unix::fs::lchown(path, Some(owner.uid), Some(owner.gid))?;
        }
        Ok(())
    }

    /// The user of a new cluster, made now (when root).
    fn new_cluster_owner(&self, cluster: &str) -> Result<Option<users::Owner>> {
        if !self.root {
            return Ok(None);
        }
        users::ensure(&users::cluster_user(cluster)).map(Some)
    }

    async fn init(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        creds: &Credentials,
    ) -> Result<()> {
        let bin = self.bin(&spec.version)?;
        let (template, template_password) = self.template(&spec.version, &bin).await?;
        let cluster = self.cluster_dir(&spec.id);
        let owner = self.new_cluster_owner(&spec.id)?;
        self.mkdir_owned(&cluster, owner.as_ref())?;
        self.mkdir(&cluster.join(&placement.leader))?;
        let data = self.data_dir(&spec.id, &placement.leader);
        // A copy of the version's template (initdb and the owner's database
        // done once), much faster than initdb and CREATE DATABASE.
        let copy = tokio::process::Command::new("cp")
            .arg("-a")
            .arg(&template)
            .arg(&data)
            .output()
            .await?;
        if !copy.status.success() {
            return Err(Error::Unavailable(format!(
                "copying the PostgreSQL {} template: {}",
                spec.version,
                String::from_utf8_lossy(&copy.stderr).trim()
            )));
        }
        if let Some(owner) = &owner {
            users::chown_tree(&data, owner)?;
        }
        self.ensure_tls(&spec.id, &self.config.address, &data)?;
        self.write_private(
            &data.join(conf::PG_CONF),
            &conf::postgres(spec, &self.config.address, placement.port),
        )?;
        let user = self.user_of(&spec.id);
        supervise::start_postgres(user.as_deref(), &bin, &data).await?;

        // The host's own password, the owner role, its database: SCRAM
        // verifiers, never the passwords.
        let mut admin = self
            .connect(placement, ADMIN_ROLE, &template_password, "postgres")
            .await?;
        let owner = quote_ident(&placement.owner);
        let database = quote_ident(&placement.database);
        for sql in [
            format!(
                "ALTER ROLE {ADMIN_ROLE} PASSWORD {}",
                quote_literal(&scram::verifier(&creds.admin_password))
            ),
            format!(
                "CREATE ROLE {owner} LOGIN CREATEDB NOSUPERUSER NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD {}",
                quote_literal(&scram::verifier(&creds.owner_password))
            ),
            format!("ALTER DATABASE {database} OWNER TO {owner}"),
        ] {
            sqlx::Executor::execute(&mut admin, sqlx::raw_sql(&sql)).await?;
        }
        admin.close().await?;
        self.complete_cluster(spec, placement, creds).await
    }

    /// What a new cluster gets once its leader runs with its passwords:
    /// the WAL spool, the standbys, synchronous commit, the pooler and the
    /// write endpoint.
    async fn complete_cluster(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        creds: &Credentials,
    ) -> Result<()> {
        self.ensure_spool(&spec.id)?;
        let user = self.user_of(&spec.id);
        // The standbys, one after the other, then synchronous commit.
        for node in placement.standbys() {
            self.make_standby(spec, placement, creds, &node).await?;
        }
        self.configure_leader(spec, placement)?;

        let pooler = self.pooler_dir(&spec.id);
        self.mkdir(&pooler)?;
        self.write_private(
            &pooler.join(conf::POOLER_USERS),
            &conf::pooler_users(&creds.admin_password),
        )?;
        self.write_pooler_conf(spec, placement)?;
        supervise::start_pooler(
            user.as_deref(),
            &self.config.pgbouncer,
            &pooler,
            &self.config.address,
            placement.pooler_port,
        )
        .await?;
        self.ensure_router(placement, user.as_deref()).await?;
        Ok(())
    }

    /// The data directory every new cluster of `version` starts as, made
    /// once: initdb, the settings files, and the owner's database (owned by
    /// the host's role until a copy gives it away). Its own random admin
    /// password, which each copy replaces at once.
    async fn template(&self, version: &str, bin: &Path) -> Result<(PathBuf, String)> {
        let _once = self.templates.lock().await;
        let dir = self.config.root.join(".templates").join(version);
        let data = dir.join("data");
        let password_file = dir.join("admin.pw");
        if let Ok(password) = std::fs::read_to_string(&password_file)
            && data.join("PG_VERSION").exists()
        {
            return Ok((data, password));
        }
        let _ = std::fs::remove_dir_all(&dir);
        let owner = match self.template_user() {
            Some(name) => Some(users::find(name)?.ok_or_else(|| {
                Error::Unavailable(
                    "no postgres user on this host; install the postgresql package".to_owned(),
                )
            })?),
            None => None,
        };
        self.mkdir_owned(&self.config.root.join(".templates"), owner.as_ref())?;
        self.mkdir(&dir)?;
        let password = crate::service::DatabaseService::generate_password();
        let pwfile = dir.join("initdb.pw");
        self.write_private(&pwfile, &password)?;
        let mut cmd = supervise::command(self.template_user(), &bin.join("initdb"));
        cmd.arg("-D")
            .arg(&data)
            .args([
                "-U",
                ADMIN_ROLE,
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
            ])
            .arg(format!("--pwfile={}", pwfile.display()));
        let initdb = supervise::run(cmd, "initdb").await;
        let _ = std::fs::remove_file(&pwfile);
        initdb?;
        let mut main_conf = std::fs::read_to_string(data.join("postgresql.conf"))?;
        main_conf.push_str(&format!("\ninclude_if_exists = '{}'\n", conf::PG_CONF));
        self.write_private(&data.join("postgresql.conf"), &main_conf)?;
        self.write_private(&data.join("pg_hba.conf"), &conf::hba())?;
        // Started once on a free port to make the owner's database.
        let port = TcpListener::bind((self.config.address.as_str(), 0))?
            .local_addr()?
            .port();
        let spec = ClusterSpec {
            id: String::new(),
            version: version.to_owned(),
            memory_mb: 256,
            cpus: 1,
            disk_gb: 1,
            replicas: 0,
        };
        self.write_private(
            &data.join(conf::PG_CONF),
            &conf::postgres(&spec, &self.config.address, port),
        )?;
        supervise::start_postgres(self.template_user(), bin, &data).await?;
        let options = PgConnectOptions::new()
            .host(&self.config.address)
            .port(port)
            .username(ADMIN_ROLE)
            .password(&password)
            .database("postgres");
        let made = async {
            let mut admin = PgConnection::connect_with(&options).await?;
            for sql in [
                "CREATE DATABASE app",
                "REVOKE ALL ON DATABASE app FROM PUBLIC",
            ] {
                sqlx::Executor::execute(&mut admin, sqlx::raw_sql(sql)).await?;
            }
            admin.close().await
        }
        .await;
        let mut stop = supervise::command(self.template_user(), &bin.join("pg_ctl"));
        stop.arg("-D").arg(&data).args(["-m", "fast", "-w", "stop"]);
        supervise::run(stop, "pg_ctl stop").await?;
        made?;
        std::fs::write(&password_file, &password)?;
        std::fs::set_permissions(&password_file, std::fs::Permissions::from_mode(0o600))?;
        Ok((data, password))
    }

    async fn stop_all(&self, placement: &Placement) {
        self.stop_router(&placement.cluster).await;
        if let Some(pid) = supervise::pooler_pid(&self.pooler_dir(&placement.cluster)) {
            supervise::stop_pid(pid, Signal::SIGINT).await;
        }
        let members = placement
            .nodes()
            .into_iter()
            .map(|n| self.data_dir(&placement.cluster, &n.name));
        let strays = self
            .strays(placement)
            .into_iter()
            .map(|(d, _)| d.join("data"));
        for data in members.chain(strays) {
            if let Some(pid) = supervise::postgres_pid(&data) {
                // Immediate shutdown: the data goes next.
                supervise::stop_pid(pid, Signal::SIGQUIT).await;
            }
        }
    }
}

/// A generated owner role: `app_` and eight lowercase letters.
fn owner_name() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    let tail: String = (0..8)
        .map(|_| rng.random_range(b'a'..=b'z') as char)
        .collect();
    format!("app_{tail}")
}

/// `"name"`, with inner quotes doubled.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `'text'`, with inner quotes doubled (standard_conforming_strings is on).
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The operations [`crate::DatabaseProvider`] is made of (`provider`).
impl LocalProvider {
    pub async fn create(&self, spec: &ClusterSpec, credentials: &Credentials) -> Result<Placement> {
        let placement = self.place(spec)?;
        if let Err(e) = self.init(spec, &placement, credentials).await {
            let _ = self.destroy(&placement).await;
            return Err(e);
        }
        Ok(placement)
    }

    /// The placement of a new cluster: its ports claimed, a new owner role.
    fn place(&self, spec: &ClusterSpec) -> Result<Placement> {
        // Refuse a missing version before taking anything.
        self.bin(&spec.version)?;
        let mut ports = Vec::new();
        for _ in 0..spec.replicas + 3 {
            match self.allocate_port(&spec.id) {
                Ok(port) => ports.push(port),
                Err(e) => {
                    ports.into_iter().for_each(|p| self.ports.release(p));
                    return Err(e);
                }
            }
        }
        let members = (0..=spec.replicas)
            .map(|i| Node {
                name: format!("node{i}"),
                port: ports[i as usize],
            })
            .collect();
        let n = ports.len();
        Ok(Placement {
            cluster: spec.id.clone(),
            version: spec.version.clone(),
            address: self.config.address.clone(),
            port: ports[0],
            pooler_port: ports[n - 2],
            router_port: Some(ports[n - 1]),
            owner: owner_name(),
            database: "app".to_owned(),
            members,
            leader: "node0".to_owned(),
        })
    }

    pub async fn destroy(&self, placement: &Placement) -> Result<()> {
        self.stop_all(placement).await;
        let dir = self.cluster_dir(&placement.cluster);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        if self.root {
            users::remove(&users::cluster_user(&placement.cluster));
        }
        self.release(placement);
        self.ports.release_owner(&placement.cluster);
        Ok(())
    }

    pub async fn connect(
        &self,
        placement: &Placement,
        user: &str,
        password: &str,
        database: &str,
    ) -> Result<PgConnection> {
        let mut options = PgConnectOptions::new()
            .host(&placement.address)
            .port(placement.port)
            .username(user)
            .password(password)
            .database(database)
            .application_name("plateau");
        if user == ADMIN_ROLE {
            options = crate::host_session::pin(options);
        }
        Ok(PgConnection::connect_with(&options).await?)
    }

    pub async fn members(&self, placement: &Placement, credentials: &Credentials) -> Vec<Member> {
        self.member_states(placement, credentials).await
    }

    pub async fn logs(&self, placement: &Placement, lines: usize) -> Result<Vec<String>> {
        let path = self
            .cluster_dir(&placement.cluster)
            .join(&placement.leader)
            .join(conf::LOG_FILE);
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        let from = all.len().saturating_sub(lines);
        Ok(all[from..].iter().map(|l| (*l).to_owned()).collect())
    }

    pub async fn available_extensions(&self, placement: &Placement) -> Result<Vec<String>> {
        let dir = bins::share_dir(&self.config.binaries, &placement.version)
            .ok_or_else(|| Error::VersionMissing(placement.version.clone()))?
            .join("extension");
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(ext) = name.strip_suffix(".control") {
                names.push(ext.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    pub async fn supervise(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<Supervised> {
        self.reserve(placement);
        self.supervise_members(spec, placement, credentials).await
    }

    pub async fn scale(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        replicas: u32,
    ) -> Result<Placement> {
        self.scale_members(spec, placement, credentials, replicas)
            .await
    }

    pub async fn switchover(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        to: &str,
    ) -> Result<Placement> {
        self.switch_leader(spec, placement, credentials, Some(to))
            .await
    }

    pub async fn recreate_member(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        member: &str,
    ) -> Result<()> {
        self.rebuild_standby(spec, placement, credentials, member)
            .await
    }
}
