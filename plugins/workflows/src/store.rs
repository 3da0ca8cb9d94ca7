//! Changing stored runs: every change is a compare-and-swap on the run
//! that moves its ready index entry and list filter entries with it,
//! either buffered to the request's commit ([`swap`]) or committed at once
//! ([`claim`]).

use plateau_sdk::{ApiError, Bucket};

use crate::record::{Run, StepRecord};

/// A run as read, with the bytes a swap must find unchanged.
pub struct Loaded {
    pub raw: Vec<u8>,
    pub run: Run,
}

/// The run `id`, if there is one.
pub fn load(bucket: &Bucket, id: &str) -> Result<Option<Loaded>, ApiError> {
    let Some(raw) = bucket.get_raw(&Run::key(id))? else {
        return Ok(None);
    };
    let run = decode(&raw, id)?;
    Ok(Some(Loaded { raw, run }))
}

pub fn decode(raw: &[u8], id: &str) -> Result<Run, ApiError> {
    serde_json::from_slice(raw)
        .map_err(|e| ApiError::internal(format!("run {id} is not readable: {e}")))
}

fn encode(run: &Run) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(run)
        .map_err(|e| ApiError::internal(format!("run {} does not serialize: {e}", run.id)))
}

const MARK: &[u8] = b"1";

/// Replaces `loaded` by `next` if nobody changed it since it was read, and
/// moves its index entries. False on a lost race.
pub fn swap(bucket: &Bucket, loaded: &Loaded, next: &Run) -> Result<bool, ApiError> {
    let encoded = encode(next)?;
    if !bucket.compare_and_swap(&Run::key(&next.id), Some(&loaded.raw), Some(&encoded))? {
        return Ok(false);
    }
    for (key, value) in index_writes(loaded, next) {
        match value {
            Some(value) => bucket.set_raw(&key, &value)?,
            None => {
                bucket.delete(&key)?;
            }
        }
    }
    Ok(true)
}

/// [`swap`] committed at once, in a transaction of its own with the moves
/// of the index entries (kv@0.4.0 `claim`): a lost race costs the caller a
/// candidate, not its request. Not rolled back if the request fails later.
pub fn claim(bucket: &Bucket, loaded: &Loaded, next: &Run) -> Result<bool, ApiError> {
    let encoded = encode(next)?;
    Ok(bucket.claim(
        &Run::key(&next.id),
        Some(&loaded.raw),
        Some(&encoded),
        &index_writes(loaded, next),
    )?)
}

/// The index entries that change from `loaded` to `next`: a key and its
/// new value (`None` deletes).
fn index_writes(loaded: &Loaded, next: &Run) -> Vec<(String, Option<Vec<u8>>)> {
    let mut writes = Vec::new();
    let (old_ready, new_ready) = (loaded.run.ready_key(), next.ready_key());
    if old_ready != new_ready {
        if let Some(old) = old_ready {
            writes.push((old, None));
        }
        if let Some(new) = new_ready {
            writes.push((new, Some(next.workflow.as_bytes().to_vec())));
        }
    }
    if loaded.run.status != next.status {
        writes.extend(loaded.run.filter_keys().into_iter().map(|k| (k, None)));
        writes.extend(
            next.filter_keys()
                .into_iter()
                .map(|k| (k, Some(MARK.to_vec()))),
        );
    }
    writes
}

/// Stores a new run; false if its id is taken.
pub fn insert(bucket: &Bucket, run: &Run) -> Result<bool, ApiError> {
    if !bucket.compare_and_swap(&Run::key(&run.id), None, Some(&encode(run)?))? {
        return Ok(false);
    }
    if let Some(ready) = run.ready_key() {
        bucket.set_raw(&ready, run.workflow.as_bytes())?;
    }
    for key in run.filter_keys() {
        bucket.set_raw(&key, MARK)?;
    }
    bucket.set_raw(&run.workflow_key(), MARK)?;
    Ok(true)
}

/// Adds a finished step to the run's history.
pub fn record_step(bucket: &Bucket, run_id: &str, step: &StepRecord) -> Result<(), ApiError> {
    bucket.set(&StepRecord::key(run_id, step.seq), step)?;
    Ok(())
}
