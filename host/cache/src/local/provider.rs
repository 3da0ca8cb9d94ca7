//! [`CacheProvider`] for the local provider: the kernel's shape (apply,
//! observe, delete) over the operations of `ops` and `supervise`.

use async_trait::async_trait;
use bytes::Bytes;

use crate::spec::{ClusterSpec, Credentials, LogLine, Metrics, PlacedNode, Placement};
use crate::{CacheProvider, Result};

use super::LocalProvider;

impl LocalProvider {
    /// What a create of cluster `id` left on this host, found from its
    /// directory (the ports are not needed to stop its processes).
    fn leftovers(&self, id: &str) -> Placement {
        let mut placement = Placement {
            cluster: id.to_owned(),
            address: self.config.address.clone(),
            master_name: String::new(),
            tls: false,
            nodes: Vec::new(),
            sentinels: Vec::new(),
            endpoint: None,
        };
        let Ok(entries) = std::fs::read_dir(self.cluster_dir(id)) else {
            return placement;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let process = PlacedNode {
                name: name.clone(),
                port: 0,
            };
            if name == super::endpoint::DIR {
                placement.endpoint = Some(process);
            } else if name.starts_with("sentinel") {
                placement.sentinels.push(process);
            } else if name.starts_with("node") {
                placement.nodes.push(process);
            }
        }
        placement
    }
}

#[async_trait]
impl CacheProvider for LocalProvider {
    async fn apply(
        &self,
        spec: &ClusterSpec,
        placement: Option<&Placement>,
        credentials: &Credentials,
        seed: Option<Bytes>,
    ) -> Result<Placement> {
        match placement {
            None => {
                self.destroy(&self.leftovers(&spec.id)).await?;
                self.create(spec, credentials, seed).await
            }
            Some(placement) => {
                let next = self.update(spec, placement, credentials).await?;
                self.set_password(&next, credentials).await?;
                Ok(next)
            }
        }
    }

    async fn observe(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<bool> {
        self.supervise(spec, placement, credentials).await
    }

    async fn delete(&self, id: &str, placement: Option<&Placement>) -> Result<()> {
        match placement {
            Some(placement) => self.destroy(placement).await,
            None => self.destroy(&self.leftovers(id)).await,
        }
    }

    async fn set_password(&self, placement: &Placement, credentials: &Credentials) -> Result<()> {
        LocalProvider::set_password(self, placement, credentials).await
    }

    async fn leader(&self, placement: &Placement, credentials: &Credentials) -> Result<String> {
        LocalProvider::leader(self, placement, credentials).await
    }

    async fn metrics(&self, placement: &Placement, credentials: &Credentials) -> Result<Metrics> {
        LocalProvider::metrics(self, placement, credentials).await
    }

    async fn logs(&self, placement: &Placement, lines: usize) -> Result<Vec<LogLine>> {
        LocalProvider::logs(self, placement, lines).await
    }

    async fn snapshot(&self, placement: &Placement, credentials: &Credentials) -> Result<Bytes> {
        LocalProvider::snapshot(self, placement, credentials).await
    }

    async fn restore(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        rdb: Bytes,
    ) -> Result<()> {
        LocalProvider::restore(self, placement, credentials, rdb).await
    }

    fn ca_certificate(&self, placement: &Placement) -> Result<Option<String>> {
        LocalProvider::ca_certificate(self, placement)
    }
}
