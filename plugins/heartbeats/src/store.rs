//! Reading and changing stored heartbeats, and keeping each one's deadline
//! job (`hb:{id}`) in step with its state.
//!
//! Every change of a heartbeat goes through [`modify`]: a compare-and-swap
//! on its record, so a ping and a deadline job that race cannot both
//! decide a change of state (the host fails the later commit with 409, and
//! a job is retried).

use plateau_sdk::jobs::{self, NewJob};
use plateau_sdk::{ApiError, Bucket, Namespace};

use crate::record::Heartbeat;

/// The key of a heartbeat's deadline job.
pub fn deadline_job_key(id: &str) -> String {
    format!("hb:{id}")
}

pub fn bucket(org: &str) -> Result<Bucket, ApiError> {
    Ok(Bucket::organization(org)?)
}

pub fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "heartbeat {id} does not exist: list them with GET /heartbeats"
    ))
}

/// The heartbeat `id`, or 404.
pub fn load(bucket: &Bucket, id: &str) -> Result<Heartbeat, ApiError> {
    if !crate::record::is_id_shaped(id) {
        return Err(not_found(id));
    }
    bucket
        .get(&Heartbeat::key(id))?
        .ok_or_else(|| not_found(id))
}

/// Reads heartbeat `id`, lets `change` edit it, and writes it back if it
/// changed, with compare-and-swap (read again on a lost race). `None` when
/// there is no such heartbeat.
pub fn modify<T>(
    bucket: &Bucket,
    id: &str,
    mut change: impl FnMut(&mut Heartbeat) -> Result<T, ApiError>,
) -> Result<Option<(Heartbeat, T)>, ApiError> {
    let key = Heartbeat::key(id);
    for _ in 0..8 {
        let Some(raw) = bucket.get_raw(&key)? else {
            return Ok(None);
        };
        let before: Heartbeat = serde_json::from_slice(&raw)
            .map_err(|e| ApiError::internal(format!("heartbeat {id} is not readable: {e}")))?;
        let mut after = before.clone();
        let outcome = change(&mut after)?;
        if after == before {
            return Ok(Some((after, outcome)));
        }
        let encoded = serde_json::to_vec(&after)
            .map_err(|e| ApiError::internal(format!("heartbeat {id} does not serialize: {e}")))?;
        if bucket.compare_and_swap(&key, Some(&raw), Some(&encoded))? {
            return Ok(Some((after, outcome)));
        }
    }
    Err(ApiError::conflict(format!(
        "heartbeat {id} is being changed concurrently: retry the request"
    )))
}

/// Schedules the heartbeat's deadline job at its next check, or cancels it
/// when the clock can no longer change its state (new, down, paused).
/// Scheduling replaces the job, so there is one per heartbeat.
pub fn sync_deadline(org: &str, heartbeat: &Heartbeat) -> Result<(), ApiError> {
    let namespace = Namespace::Organization(org.to_owned());
    let key = deadline_job_key(&heartbeat.id);
    let next = heartbeat
        .rules()
        .ok()
        .and_then(|rules| rules.next_check(&heartbeat.status));
    match next {
        Some(at) => jobs::schedule(
            NewJob::at(key, at)
                .namespace(namespace)
                .payload(heartbeat.id.clone()),
        )?,
        None => jobs::cancel(namespace, &key)?,
    }
    Ok(())
}
