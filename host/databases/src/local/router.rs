//! The write endpoint of a local cluster (`writeUri`): an HAProxy per
//! cluster ([`conf::router`]), run as the cluster's own user on a port the
//! provider allocates, whose only server is the leader. A failover or a
//! switchover rewrites its configuration and reloads it (SIGUSR2 to its
//! master: the listener stays open) in the same step that points pgbouncer
//! at the new leader, so a client that keeps `writeUri` reaches the new
//! leader at its next connection, never a standby. Like pgbouncer it is
//! started, adopted and restarted by the provider's supervision, and it
//! needs neither the API process nor the agent to pass traffic.

use std::path::PathBuf;

use nix::sys::signal::Signal;

use super::members::signal;
use super::{LocalProvider, conf, supervise};
use crate::Result;
use crate::spec::Placement;

impl LocalProvider {
    /// `<cluster>/router`: the endpoint's configuration and pid file.
    pub(super) fn router_dir(&self, cluster: &str) -> PathBuf {
        self.cluster_dir(cluster).join("router")
    }

    /// Writes the endpoint's configuration for the leader of `placement`;
    /// a running endpoint reloads when it changes. Nothing for a placement
    /// without an endpoint yet.
    pub(super) fn write_router_conf(&self, placement: &Placement) -> Result<()> {
        let Some(port) = placement.router_port else {
            return Ok(());
        };
        let dir = self.router_dir(&placement.cluster);
        if !dir.exists() {
            self.mkdir(&dir)?;
        }
        let text = conf::router(
            &dir,
            &placement.address,
            port,
            (&placement.leader, placement.port),
        );
        if self.write_if_changed(&dir.join(conf::ROUTER_CONF), &text)?
            && let Some(pid) = supervise::router_pid(&dir)
        {
            signal(pid, Signal::SIGUSR2);
        }
        Ok(())
    }

    /// Points the endpoint at the leader and starts it unless it runs (a
    /// running one is adopted as it is); whether it started it.
    pub(super) async fn ensure_router(
        &self,
        placement: &Placement,
        user: Option<&str>,
    ) -> Result<bool> {
        let Some(port) = placement.router_port else {
            return Ok(false);
        };
        self.write_router_conf(placement)?;
        let dir = self.router_dir(&placement.cluster);
        if supervise::router_pid(&dir).is_some() {
            return Ok(false);
        }
        supervise::start_router(user, &self.config.haproxy, &dir, &placement.address, port).await?;
        Ok(true)
    }

    /// Stops the endpoint (its master stops its workers).
    pub(super) async fn stop_router(&self, cluster: &str) {
        if let Some(pid) = supervise::router_pid(&self.router_dir(cluster)) {
            supervise::stop_pid(pid, Signal::SIGTERM).await;
        }
    }
}
