//! Writing a job: its record `j/{id}` and its copy in the due index move
//! together, and a run is recorded in one claim on the record.
//!
//! Every write of a record expects the bytes it read: the API's writes
//! with a compare-and-swap at the request's commit (a lost race is a 409),
//! a run's with a claim committed at once. So a run never undoes a change
//! made through the API while it ran, and the index copy is always the
//! record's bytes.

use plateau_sdk::{ApiError, Bucket, Entry, clock};

use crate::record::{self, CronJob, Run};
use crate::run;

/// A job as read, with the bytes it is stored as.
pub struct Stored {
    pub job: CronJob,
    pub bytes: Vec<u8>,
}

impl Stored {
    /// The job `id` of `bucket`, if there is one.
    pub fn load(bucket: &Bucket, id: &str) -> Result<Option<Stored>, ApiError> {
        let Some(bytes) = bucket.get_raw(&CronJob::key(id))? else {
            return Ok(None);
        };
        Ok(Some(Stored::parse(bytes)?))
    }

    /// An entry of the due index.
    pub fn from_entry(entry: Entry) -> Result<Stored, ApiError> {
        Stored::parse(entry.value)
    }

    fn parse(bytes: Vec<u8>) -> Result<Stored, ApiError> {
        let job = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::internal(format!("a stored cron job does not parse: {e}")))?;
        Ok(Stored { job, bytes })
    }
}

pub fn encode(job: &CronJob) -> Vec<u8> {
    serde_json::to_vec(job).expect("a cron job serializes")
}

/// Whether the job waits in the due index: an http job that is not paused.
pub fn indexed(job: &CronJob) -> bool {
    job.kind != "container" && !job.paused && job.next_run_at.is_some()
}

/// The writes of the due index that go with replacing the record `old`
/// (none: a new job) by `new` (none: deleted) encoded as `bytes`.
pub fn index_writes(
    old: Option<&CronJob>,
    new: Option<(&CronJob, &[u8])>,
) -> Vec<(String, Option<Vec<u8>>)> {
    let mut writes = Vec::new();
    if let Some(old) = old.filter(|job| indexed(job))
        && let Some(at) = old.next_run_at
    {
        writes.push((record::due_key(at, &old.id), None));
    }
    if let Some((job, bytes)) = new.filter(|(job, _)| indexed(job))
        && let Some(at) = job.next_run_at
    {
        writes.push((record::due_key(at, &job.id), Some(bytes.to_vec())));
    }
    writes
}

/// Replaces `old` by `job` through the API: a compare-and-swap at the
/// request's commit, with the index writes.
pub fn save(bucket: &Bucket, old: &Stored, job: &CronJob) -> Result<(), ApiError> {
    let bytes = encode(job);
    if !bucket.compare_and_swap(&CronJob::key(&job.id), Some(&old.bytes), Some(&bytes))? {
        return Err(changed(&job.id));
    }
    apply(bucket, index_writes(Some(&old.job), Some((job, &bytes))))
}

/// Stores a new job; false when its id is taken.
pub fn insert(bucket: &Bucket, job: &CronJob) -> Result<bool, ApiError> {
    let bytes = encode(job);
    if !bucket.compare_and_swap(&CronJob::key(&job.id), None, Some(&bytes))? {
        return Ok(false);
    }
    apply(bucket, index_writes(None, Some((job, &bytes))))?;
    Ok(true)
}

/// Deletes `old` through the API, with its index entry.
pub fn remove(bucket: &Bucket, old: &Stored) -> Result<(), ApiError> {
    if !bucket.compare_and_swap(&CronJob::key(&old.job.id), Some(&old.bytes), None)? {
        return Err(changed(&old.job.id));
    }
    apply(bucket, index_writes(Some(&old.job), None))
}

fn apply(bucket: &Bucket, writes: Vec<(String, Option<Vec<u8>>)>) -> Result<(), ApiError> {
    for (key, value) in writes {
        match value {
            Some(value) => bucket.set_raw(&key, &value)?,
            None => {
                bucket.delete(&key)?;
            }
        }
    }
    Ok(())
}

fn changed(id: &str) -> ApiError {
    ApiError::conflict(format!(
        "cron job {id} changed while this request ran (a run ended): retry the request"
    ))
}

/// How many times a run's claim is tried before the job is left as it is.
const TRIES: usize = 8;

/// Records `run` as the job's next run number, in one claim on its record
/// (committed at once). A scheduled run names the time it was `due`: the
/// record moves on to its next time after it, unless a change read since
/// (the record is read again after a lost race) left it due at another
/// time. Answers the job as written (its run numbered in `run`), or none
/// when the job was deleted meanwhile (the run is not recorded).
pub fn record_run(
    bucket: &Bucket,
    stored: Stored,
    run: &mut Run,
    due: Option<u64>,
) -> Result<Option<CronJob>, ApiError> {
    record_runs(bucket, stored, std::slice::from_mut(run), due)
}

/// [`record_run`] of several runs in one claim, numbered in order (the
/// missed times of a late delivery, then the run it made).
pub fn record_runs(
    bucket: &Bucket,
    mut stored: Stored,
    runs: &mut [Run],
    due: Option<u64>,
) -> Result<Option<CronJob>, ApiError> {
    for _ in 0..TRIES {
        let mut job = stored.job.clone();
        let mut last = match job.last_run {
            Some(last) => last,
            None => legacy_count(bucket, &job.id)?,
        };
        for run in runs.iter_mut() {
            last += 1;
            run.number = last;
        }
        job.last_run = Some(last);
        if let Some(due) = due
            && job.next_run_at == Some(due)
        {
            run::advance(&mut job, clock::now_millis().max(due))?;
        }
        let bytes = encode(&job);
        let mut then = index_writes(Some(&stored.job), Some((&job, &bytes)));
        for run in runs.iter() {
            then.push((
                record::run_key(&job.id, run.number),
                Some(serde_json::to_vec(run).expect("a run serializes")),
            ));
            if run.number > record::KEPT_RUNS {
                then.push((
                    record::run_key(&job.id, run.number - record::KEPT_RUNS),
                    None,
                ));
            }
        }
        if bucket.claim(
            &CronJob::key(&job.id),
            Some(&stored.bytes),
            Some(&bytes),
            &then,
        )? {
            return Ok(Some(job));
        }
        match Stored::load(bucket, &job.id)? {
            Some(again) => stored = again,
            None => return Ok(None),
        }
    }
    Err(ApiError::conflict(format!(
        "cron job {} kept changing while its run was recorded",
        stored.job.id
    )))
}

/// The run count of a job stored before [`CronJob::last_run`] existed.
fn legacy_count(bucket: &Bucket, id: &str) -> Result<i64, ApiError> {
    Ok(bucket
        .get_raw(&record::run_counter_key(id))?
        .and_then(|digits| String::from_utf8(digits).ok()?.parse().ok())
        .unwrap_or(0))
}
