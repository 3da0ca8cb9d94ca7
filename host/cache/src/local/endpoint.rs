//! The stable endpoint of a cluster with replicas: one HAProxy (TCP mode)
//! on a port of its own that always leads to the current leader, so a
//! client that keeps the cluster's `uri` writes again after any number of
//! failovers, as with hosted Redis services.
//!
//! HAProxy checks every data node twice a second over TLS (verifying the
//! cluster's CA), as the host's admin user: `AUTH`, then `INFO
//! replication` must say `role:master`. Only a node that passes takes
//! connections (`balance first`: one leader even while a deposed one still
//! says master); a node that fails twice has its sessions cut, so clients
//! reconnect to the new leader. TLS passes through: clients speak TLS with
//! redis-server itself, whose certificate names the same address.
//!
//! It runs like the cluster's other processes: as the cluster's user, a
//! daemon in its own process group (it outlives `plateau serve`), started,
//! adopted and restarted by `supervise`. Its configuration holds the admin
//! password, so it is mode 0600 in the cluster's 0700 directory.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

use crate::spec::{ADMIN_USER, ClusterSpec, Credentials, Placement};
use crate::{Error, Result};

use super::tls::{CA_FILE, write_private};
use super::{LocalProvider, user};

/// The endpoint's directory inside the cluster's.
pub const DIR: &str = "endpoint";
pub const CONF_FILE: &str = "haproxy.cfg";
pub const PID_FILE: &str = "haproxy.pid";

/// Milliseconds between two checks of a node; a node that fails `FALL`
/// checks in a row is out (its sessions cut), one that passes is in.
const CHECK_EVERY_MS: u64 = 500;
const FALL: u32 = 2;

/// How long a started endpoint has to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// `haproxy.cfg` of the cluster: the frontend on `port`, the data nodes
/// with the leader first.
pub fn config(
    placement: &Placement,
    port: u16,
    leader: Option<u16>,
    dir: &Path,
    tls_dir: &Path,
    credentials: &Credentials,
) -> String {
    let address = &placement.address;
    let mut out = String::new();
    let _ = writeln!(out, "global\n    daemon\n    maxconn 4000");
    let _ = writeln!(out, "    pidfile {}/{PID_FILE}", dir.display());
    let _ = writeln!(
        out,
        "defaults\n    mode tcp\n    option clitcpka\n    option srvtcpka\n    timeout connect 3s\n    \
         timeout client 24h\n    timeout server 24h\n    timeout check 2s"
    );
    let _ = writeln!(
        out,
        "frontend leader\n    bind {address}:{port}\n    default_backend nodes"
    );
    let _ = writeln!(
        out,
        "backend nodes\n    balance first\n    option tcp-check"
    );
    let _ = writeln!(
        out,
        "    tcp-check send \"AUTH {ADMIN_USER} {}\\r\\n\"",
        credentials.admin_password
    );
    let _ = writeln!(out, "    tcp-check expect string +OK");
    let _ = writeln!(out, "    tcp-check send \"INFO replication\\r\\n\"");
    let _ = writeln!(out, "    tcp-check expect string role:master");
    let _ = writeln!(out, "    tcp-check send \"QUIT\\r\\n\"");
    let _ = writeln!(out, "    tcp-check expect string +OK");
    let mut server = format!(
        "    default-server check inter {CHECK_EVERY_MS}ms fall {FALL} rise 1 \
         on-marked-down shutdown-sessions"
    );
    if placement.tls {
        let _ = write!(
            server,
            " check-ssl verify required ca-file {}/{CA_FILE} verifyhost localhost",
            tls_dir.display()
        );
    }
    let _ = writeln!(out, "{server}");
    let mut nodes: Vec<_> = placement.nodes.iter().collect();
    // The leader first: `balance first` sends everything to the first
    // node that is in, and before their first check every node is.
    nodes.sort_by_key(|n| Some(n.port) != leader);
    for node in nodes {
        let _ = writeln!(out, "    server {} {address}:{}", node.name, node.port);
    }
    out
}

impl LocalProvider {
    fn endpoint_dir(&self, placement: &Placement) -> PathBuf {
        self.process_dir(placement, DIR)
    }

    /// Writes the endpoint's configuration (mode 0600) with the current
    /// leader first; `None` for a cluster without an endpoint.
    async fn write_endpoint_conf(
        &self,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<Option<PathBuf>> {
        let Some(endpoint) = &placement.endpoint else {
            return Ok(None);
        };
        let leader = self.current_leader(placement, credentials).await;
        let dir = self.endpoint_dir(placement);
        std::fs::create_dir_all(&dir)?;
        let text = config(
            placement,
            endpoint.port,
            leader.map(|(_, port)| port),
            &dir,
            &self.tls_dir(&placement.cluster),
            credentials,
        );
        let path = dir.join(CONF_FILE);
        write_private(&path, text.as_bytes())?;
        Ok(Some(path))
    }

    /// Starts the endpoint (taking over from a running one, whose open
    /// sessions go on until they end, if `replace`), as the cluster's user
    /// in its own process group, and waits until it accepts connections.
    pub async fn start_endpoint(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        replace: bool,
    ) -> Result<()> {
        let Some(conf) = self.write_endpoint_conf(placement, credentials).await? else {
            return Ok(());
        };
        let dir = self.endpoint_dir(placement);
        let old = replace.then(|| running_pid(&dir)).flatten();
        let user = self.process_user(&placement.cluster).await?;
        user::own(&self.cluster_dir(&placement.cluster), user.as_ref())?;
        let mut cmd = Command::new(&self.config.haproxy);
        cmd.arg("-q").arg("-f").arg(&conf);
        if let Some(pid) = old {
            cmd.arg("-sf").arg(pid.to_string());
        }
        super::supervise::daemon(cmd, user.as_ref(), "haproxy", &dir).await?;
        let port = placement.endpoint.as_ref().map_or(0, |e| e.port);
        let deadline = tokio::time::Instant::now() + READY_WITHIN;
        while !accepts(&placement.address, port).await {
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Unavailable(format!(
                    "the endpoint of cache {} on port {port} did not accept connections",
                    placement.cluster
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// Stops the endpoint, if it runs.
    pub async fn stop_endpoint(&self, placement: &Placement, grace: Duration) {
        let dir = self.endpoint_dir(placement);
        super::supervise::stop_pid(&dir.join(PID_FILE), "haproxy", grace).await;
    }
}

/// The endpoint's pid, if it lives.
fn running_pid(dir: &Path) -> Option<i32> {
    super::supervise::live_pid(&dir.join(PID_FILE), "haproxy")
}

/// Whether something accepts TCP connections on `address:port`.
async fn accepts(address: &str, port: u16) -> bool {
    let connect = tokio::net::TcpStream::connect((address, port));
    matches!(
        tokio::time::timeout(Duration::from_secs(1), connect).await,
        Ok(Ok(_))
    )
}

/// One round over the endpoint of a cluster: adopted if it accepts
/// connections, left be if its process lives, else started again.
/// Whether it accepts connections.
pub async fn supervise(
    provider: &LocalProvider,
    spec: &ClusterSpec,
    placement: &Placement,
    credentials: &Credentials,
) -> Result<bool> {
    let Some(endpoint) = &placement.endpoint else {
        return Ok(true);
    };
    if accepts(&placement.address, endpoint.port).await {
        return Ok(true);
    }
    if running_pid(&provider.endpoint_dir(placement)).is_some() {
        return Ok(false);
    }
    tracing::warn!(cache = %spec.id, "restarting a cache's endpoint");
    if let Err(e) = provider.start_endpoint(placement, credentials, false).await {
        tracing::warn!(cache = %spec.id, error = %e, "restarting a cache's endpoint");
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::PlacedNode;

    #[test]
    fn checks_the_role_over_tls_as_the_admin_with_the_leader_first() {
        let node = |name: &str, port| PlacedNode {
            name: name.into(),
            port,
        };
        let placement = Placement {
            cluster: "cch_1".into(),
            address: "127.0.0.1".into(),
            master_name: "plateau-cch_1".into(),
            tls: true,
            nodes: vec![node("node0", 7000), node("node1", 7001)],
            sentinels: vec![],
            endpoint: Some(node(DIR, 7100)),
        };
        let credentials = Credentials {
            password: "p".into(),
            admin_password: "a".into(),
        };
        let text = config(
            &placement,
            7100,
            Some(7001),
            Path::new("/d/endpoint"),
            Path::new("/d/tls"),
            &credentials,
        );
        for line in [
            "    bind 127.0.0.1:7100",
            "    balance first",
            "    tcp-check send \"AUTH plateau-admin a\\r\\n\"",
            "    tcp-check expect string role:master",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in {text}");
        }
        assert!(text.contains("check-ssl verify required ca-file /d/tls/ca.crt"));
        assert!(text.contains("on-marked-down shutdown-sessions"));
        let first = text.find("server node1").unwrap();
        assert!(first < text.find("server node0").unwrap(), "{text}");
        assert!(
            !text.contains(" p\\r"),
            "the customer's password is not in it"
        );
    }
}
