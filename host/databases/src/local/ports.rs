//! The ports of this host's clusters: every port a cluster holds (its
//! members', its pooler's, its write endpoint's) is claimed in
//! `<root>/.ports` through the kernel's [`plateau_kernel::Ports`], so the API process
//! (which creates and scales clusters) and the agent (which supervises
//! them) never hand out the same port, nor the port of a member that is
//! down for a moment. Supervision claims the ports of the clusters it
//! adopts; destroying a cluster or removing a member gives them back.

use super::LocalProvider;
use crate::spec::Placement;
use crate::{Error, Result};

impl LocalProvider {
    /// Claims the ports of a known cluster (adoption after a restart).
    pub fn reserve(&self, placement: &Placement) {
        self.ports.reserve(&placement.cluster, ports_of(placement));
    }

    /// Gives back every port of a cluster that is gone.
    pub(super) fn release(&self, placement: &Placement) {
        for port in ports_of(placement) {
            self.ports.release(port);
        }
    }

    /// A free port that no cluster of this host holds, claimed for
    /// `cluster`.
    pub(super) fn allocate_port(&self, cluster: &str) -> Result<u16> {
        self.ports
            .allocate(cluster)
            .map_err(|e| Error::Unavailable(format!("no port for a database process: {e}")))
    }
}

/// Every port `placement` holds.
fn ports_of(placement: &Placement) -> Vec<u16> {
    let mut ports = vec![placement.pooler_port];
    ports.extend(placement.router_port);
    ports.extend(placement.nodes().into_iter().map(|n| n.port));
    ports
}
