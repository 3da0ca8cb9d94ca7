//! [`DatabaseProvider`] for the local provider: the kernel's shape
//! (apply, observe, delete) over the operations of this module.

use async_trait::async_trait;
use sqlx::postgres::PgConnection;

use crate::spec::{BaseBackup, ClusterSpec, Credentials, Member, Node, Placement, RestoreFrom};
use crate::{DatabaseProvider, Error, Result, Supervised, bins};

use super::LocalProvider;

impl LocalProvider {
    /// What a create of cluster `id` left on this host, found from its
    /// directory (the ports are not needed to stop its processes).
    fn leftovers(&self, id: &str, version: &str) -> Placement {
        let mut members = Vec::new();
        if let Ok(entries) = std::fs::read_dir(self.cluster_dir(id)) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("node") {
                    members.push(Node { name, port: 0 });
                }
            }
        }
        Placement {
            cluster: id.to_owned(),
            version: version.to_owned(),
            address: self.config.address.clone(),
            port: 0,
            pooler_port: 0,
            router_port: None,
            owner: String::new(),
            database: String::new(),
            leader: members
                .first()
                .map_or_else(|| "node0".to_owned(), |n| n.name.clone()),
            members,
        }
    }
}

#[async_trait]
impl DatabaseProvider for LocalProvider {
    fn admit(&self, spec: &ClusterSpec) -> Result<()> {
        self.bin(&spec.version)?;
        if !self.config.pgbouncer.exists() {
            return Err(Error::Refused {
                code: "pooler_not_installed",
                detail: format!(
                    "pgbouncer is not installed on this host ({}); install it with `plateau install postgres`",
                    self.config.pgbouncer.display()
                ),
            });
        }
        Ok(())
    }

    async fn apply(
        &self,
        spec: &ClusterSpec,
        placement: Option<&Placement>,
        credentials: &Credentials,
    ) -> Result<Placement> {
        match placement {
            None => {
                self.destroy(&self.leftovers(&spec.id, &spec.version))
                    .await?;
                self.create(spec, credentials).await
            }
            Some(placement) if !self.strays(placement).is_empty() => {
                // What an interrupted branch reset left.
                self.finish_reset(spec, placement, credentials).await?;
                self.apply(spec, Some(placement), credentials).await
            }
            Some(placement) if placement.standbys().len() != spec.replicas as usize => {
                self.scale(spec, placement, credentials, spec.replicas)
                    .await
            }
            Some(placement) => Ok(placement.clone()),
        }
    }

    async fn observe(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<Supervised> {
        self.supervise(spec, placement, credentials).await
    }

    async fn delete(&self, id: &str, placement: Option<&Placement>) -> Result<()> {
        match placement {
            Some(placement) => self.destroy(placement).await,
            None => self.destroy(&self.leftovers(id, "")).await,
        }
    }

    async fn connect(
        &self,
        placement: &Placement,
        user: &str,
        password: &str,
        database: &str,
    ) -> Result<PgConnection> {
        LocalProvider::connect(self, placement, user, password, database).await
    }

    async fn members(&self, placement: &Placement, credentials: &Credentials) -> Vec<Member> {
        LocalProvider::members(self, placement, credentials).await
    }

    async fn logs(&self, placement: &Placement, lines: usize) -> Result<Vec<String>> {
        LocalProvider::logs(self, placement, lines).await
    }

    async fn available_extensions(&self, placement: &Placement) -> Result<Vec<String>> {
        LocalProvider::available_extensions(self, placement).await
    }

    fn ca_certificate(&self, placement: &Placement) -> Option<String> {
        LocalProvider::ca_certificate(self, &placement.cluster)
    }

    async fn switchover(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        to: &str,
    ) -> Result<Placement> {
        LocalProvider::switchover(self, spec, placement, credentials, to).await
    }

    async fn recreate_member(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        member: &str,
    ) -> Result<()> {
        LocalProvider::recreate_member(self, spec, placement, credentials, member).await
    }

    async fn ship_wal(&self, placement: &Placement) -> Result<u64> {
        self.ship(&placement.cluster).await
    }

    async fn flush_wal(
        &self,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<(String, u64)> {
        self.flush(placement, credentials).await
    }

    async fn base_backup(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        id: &str,
    ) -> Result<BaseBackup> {
        self.take_base_backup(placement, credentials, id).await
    }

    async fn restore(
        &self,
        spec: &ClusterSpec,
        credentials: &Credentials,
        from: &RestoreFrom,
    ) -> Result<Placement> {
        self.destroy(&self.leftovers(&spec.id, &spec.version))
            .await?;
        self.restore_cluster(spec, credentials, from).await
    }

    async fn prepare_reset(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
        from: &RestoreFrom,
    ) -> Result<Placement> {
        LocalProvider::prepare_reset(self, spec, placement, credentials, from).await
    }

    async fn finish_reset(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<()> {
        LocalProvider::finish_reset(self, spec, placement, credentials).await
    }

    fn dump_store(&self) -> plateau_object_store::Opened {
        self.config.backups.clone()
    }

    async fn slot_on_standbys(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        slot: &str,
    ) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for node in placement.standbys() {
            let kept = super::conf::failover_slots(&placement.version)
                && self.synced_slot(placement, credentials, &node, slot).await;
            out.push((node.name, kept));
        }
        out
    }

    fn pg_restore(&self, version: &str) -> Result<std::path::PathBuf> {
        bins::client_tool(&self.config.binaries, version, "pg_restore").ok_or_else(|| {
            Error::Unavailable(format!(
                "pg_restore {version} is not installed on this host; install it with `plateau install postgres`"
            ))
        })
    }

    async fn prune_backups(
        &self,
        cluster: &str,
        ids: &[String],
        wal_before: Option<&str>,
    ) -> Result<()> {
        self.prune(cluster, ids, wal_before).await
    }

    async fn drop_backups(&self, cluster: &str) -> Result<()> {
        self.drop_all_backups(cluster).await
    }
}
