//! Desired state, driven: the API records what the user asked for (a
//! row in `creating`, or a new generation in `updating` or `deleting`)
//! and answers at once; [`reconcile`] drives one resource's provider
//! toward it and records what it observed. Every change of status, with
//! its event and audit entry, is recorded here and nowhere else.
//!
//! | status       | the reconciler                                        |
//! |--------------|-------------------------------------------------------|
//! | `creating`   | applies the spec (placing it; what a killed earlier try left is removed first); `running`, or `failed` with the reason |
//! | `updating`   | applies the new spec to the placed resource; `running` or `failed` |
//! | `deleting`   | removes everything the provider made, then the row      |
//! | `running`, `degraded` | observes (restarting what died, failing over); `running` or `degraded` |
//! | `failed`     | observes a placed resource (its processes stay up), keeps `failed` until the user asks again |

use std::time::Duration;

use async_trait::async_trait;
use plateau_core::time;
use plateau_store::Db;
use plateau_store::events::{Actor, NewEvent};
use plateau_store::managed::{self, State, Table, Transition};
use serde_json::json;

use crate::lock::ResourceLocks;
use crate::status::Status;

/// Why a provider call failed; its words go to the resource's details.
pub type Failure = Box<dyn std::error::Error + Send + Sync>;

/// One kind of managed resource, as its service gives it to the kernel:
/// the provider's operations in the shape Kubernetes operators expose
/// (apply a spec, observe, delete). The kernel decides when each runs.
#[async_trait]
pub trait Resources: Send + Sync + 'static {
    /// The word of events and logs: `cache`, `database`.
    fn kind(&self) -> &'static str;

    fn table(&self) -> Table;

    fn db(&self) -> &Db;

    /// The locks of this kind's resources, held while one is reconciled.
    fn locks(&self) -> &ResourceLocks;

    /// This host's identity: only its resources are reconciled here.
    fn host_id(&self) -> &str;

    /// How often a resource that asks for nothing is observed.
    fn every(&self, state: &State) -> Duration;

    /// Drives the provider toward the resource's recorded spec, placing it
    /// when its placement is empty; the placement (JSON) to keep.
    async fn apply(&self, state: &State) -> Result<String, Failure>;

    /// Observes a placed resource, restarting what died (the service
    /// records what it changed, a failover, itself): whether every process
    /// answers.
    async fn observe(&self, state: &State) -> Result<bool, Failure>;

    /// Removes everything the provider made for the resource, placed or
    /// not, and what the service keeps beside its row (snapshots...).
    async fn delete(&self, state: &State) -> Result<(), Failure>;
}

/// One round over resource `id`; the caller holds its lock.
pub async fn reconcile(r: &dyn Resources, id: &str) {
    let state = match managed::state(r.db(), r.table(), id).await {
        Ok(Some(state)) => state,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(kind = r.kind(), id, error = %e, "reading a resource's state");
            return;
        }
    };
    let status = Status::read(&state.status);
    let outcome = match status {
        Status::Deleting => match r.delete(&state).await {
            Ok(()) => remove(r, &state).await,
            Err(reason) => {
                // Stays `deleting`: the next round tries again.
                tracing::warn!(kind = r.kind(), id, error = %reason, "deleting a resource");
                Ok(())
            }
        },
        Status::Creating | Status::Updating => match r.apply(&state).await {
            Ok(placement) => {
                settle(
                    r,
                    &state,
                    Some(&placement),
                    status,
                    Status::Running,
                    None,
                    Some(state.generation),
                )
                .await
            }
            Err(reason) => {
                let reason = reason.to_string();
                tracing::warn!(kind = r.kind(), id, error = %reason, "applying a resource's spec");
                settle(
                    r,
                    &state,
                    None,
                    status,
                    Status::Failed,
                    Some(&reason),
                    Some(state.generation),
                )
                .await
            }
        },
        Status::Running | Status::Degraded | Status::Failed if !state.placement.is_empty() => {
            let healthy = match r.observe(&state).await {
                Ok(healthy) => healthy,
                Err(reason) => {
                    tracing::warn!(kind = r.kind(), id, error = %reason, "observing a resource");
                    false
                }
            };
            let to = match (status, healthy) {
                (Status::Failed, _) => Status::Failed,
                (_, true) => Status::Running,
                (_, false) => Status::Degraded,
            };
            if to == status {
                Ok(())
            } else {
                settle(r, &state, None, status, to, None, None).await
            }
        }
        _ => Ok(()),
    };
    if let Err(e) = outcome {
        tracing::warn!(kind = r.kind(), id, error = %e, "recording a resource's state");
    }
}

/// Records the move of `state`'s resource from `from` to `to` (with the
/// placement the provider made, kept whatever the status), and its event
/// (`<kind>.<to>`, by the system, audited).
async fn settle(
    r: &dyn Resources,
    state: &State,
    placement: Option<&str>,
    from: Status,
    to: Status,
    detail: Option<&str>,
    generation: Option<i64>,
) -> plateau_store::Result<()> {
    let event = NewEvent::audited(
        &state.org_id,
        &format!("{}.{}", r.kind(), to),
        "resources",
        "update",
        &Actor::system(),
    )
    .resource(r.kind(), &state.id)
    .data(json!({ "from": from, "to": to, "reason": detail }));
    let now = time::now_ms();
    let mut tx = r.db().begin().await?;
    if let Some(placement) = placement {
        managed::set_placement(&mut tx, r.table(), &state.id, placement).await?;
    }
    let change = Transition {
        from: from.as_str(),
        to: to.as_str(),
        detail,
        generation,
    };
    let moved = managed::transition(&mut tx, r.table(), &state.id, change, &event, now).await?;
    tx.commit().await?;
    if moved && from != to {
        tracing::info!(kind = r.kind(), id = %state.id, %from, %to, reason = detail, "resource status");
    }
    Ok(())
}

/// Removes the row of a resource whose provider removed everything.
async fn remove(r: &dyn Resources, state: &State) -> plateau_store::Result<()> {
    let event = NewEvent::audited(
        &state.org_id,
        &format!("{}.removed", r.kind()),
        "resources",
        "delete",
        &Actor::system(),
    )
    .resource(r.kind(), &state.id);
    let mut tx = r.db().begin().await?;
    managed::remove(&mut tx, r.table(), &state.id, &event, time::now_ms()).await?;
    tx.commit().await?;
    tracing::info!(kind = r.kind(), id = %state.id, "resource removed");
    Ok(())
}
