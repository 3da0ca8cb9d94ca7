//! Storage accounting: an organisation's blobs and manifests count against
//! its plan's `storage_gb` (1 GB = 10^9 bytes).

use plateau_store::registry::account;

use crate::Registry;
use crate::error::{Error, Result};

/// How much an organisation may still store.
pub struct Allowance {
    pub remaining: u64,
    plan: String,
    limit_gb: i64,
}

impl Allowance {
    pub async fn of(reg: &Registry, org_id: &str) -> Result<Allowance> {
        let (plan, limit_gb) = account::storage_limit(reg.db(), org_id).await?;
        let used = account::usage_bytes(reg.db(), org_id).await?;
        let limit = limit_gb.max(0) as u64 * 1_000_000_000;
        Ok(Allowance {
            remaining: limit.saturating_sub(used.max(0) as u64),
            plan,
            limit_gb,
        })
    }

    pub fn message(&self) -> String {
        format!(
            "storage limit reached: the {} plan allows {} GB; delete images and let GC run, \
             or move to a larger plan",
            self.plan, self.limit_gb
        )
    }

    /// Refuses adding `bytes`.
    pub fn check(&self, bytes: u64) -> Result<()> {
        if bytes > self.remaining {
            Err(Error::Denied(self.message()))
        } else {
            Ok(())
        }
    }
}
