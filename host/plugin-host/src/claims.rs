//! Group commit of `kv.claim` on SQLite.
//!
//! A claim is committed at once, in a transaction of its own, before the
//! call goes on (kv@0.4.0). On SQLite's one writer a transaction per claim
//! makes the commit the cost of a claim, so the claims that arrive while
//! the writer is busy wait together and are committed in one transaction:
//! each runs in arrival order, sees the claims before it, and is answered
//! only once the transaction holding it has committed. To its caller a
//! grouped claim is what a claim alone is: true when its compare-and-swap
//! held and its writes are durable, false when the key held another value
//! and nothing was written. A claim whose writes cannot apply (an increment
//! of a key that is not a counter) is rolled back to its savepoint alone; a
//! database error fails the whole group, none of whose writes then stay.
//!
//! PostgreSQL runs many writers at once, and keeps a transaction per claim.

use plateau_plugin_runtime::{Claim, KvWrite, StorageError};
use plateau_store::group::next_group;
use plateau_store::plugins::{self as kv, Savepoint};
use plateau_store::{Db, Tx};
use tokio::sync::{mpsc, oneshot};

use crate::storage::{apply_write, swap_claimed, unavailable};

/// The most claims one transaction commits.
const MAX_GROUP: usize = 256;

struct Job {
    claim: Claim,
    done: oneshot::Sender<Result<bool, StorageError>>,
}

/// The queue of claims waiting for the writer; one task commits them.
pub struct ClaimGroups {
    jobs: mpsc::UnboundedSender<Job>,
}

impl ClaimGroups {
    /// Starts the committing task (inside a tokio runtime).
    pub fn start(db: Db) -> ClaimGroups {
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(run(db, queue));
        ClaimGroups { jobs }
    }

    /// Claims with the claims that wait with it; answers after the commit.
    pub async fn claim(&self, claim: Claim) -> Result<bool, StorageError> {
        let (done, outcome) = oneshot::channel();
        let stopped = || StorageError::Unavailable("the database is closing".to_owned());
        self.jobs.send(Job { claim, done }).map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }
}

async fn run(db: Db, mut queue: mpsc::UnboundedReceiver<Job>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while let Some(tx) = next_group(&mut queue, &mut group, MAX_GROUP, || db.begin()).await {
        let outcome = match tx {
            Ok(tx) => commit_group(tx, &group).await,
            Err(e) => Err(unavailable(e)),
        };
        match outcome {
            Ok(answers) => {
                for (job, answer) in group.drain(..).zip(answers) {
                    let _ = job.done.send(answer);
                }
            }
            Err(e) => {
                for job in group.drain(..) {
                    let _ = job.done.send(Err(e.clone()));
                }
            }
        }
    }
}

/// Runs every claim of `group` in `tx` and commits; each claim's answer,
/// or the error that failed them all.
async fn commit_group(
    mut tx: Tx,
    group: &[Job],
) -> Result<Vec<Result<bool, StorageError>>, StorageError> {
    let mut answers = Vec::with_capacity(group.len());
    for job in group {
        answers.push(claim_in(&mut tx, &job.claim).await?);
    }
    tx.commit().await.map_err(unavailable)?;
    Ok(answers)
}

/// One claim inside the group's transaction: the outer error is a database
/// error (the group fails), the inner one this claim's own.
async fn claim_in(tx: &mut Tx, claim: &Claim) -> Result<Result<bool, StorageError>, StorageError> {
    // Only an increment can fail on its own; a claim with one gets a
    // savepoint to roll back to.
    let guarded = claim
        .then
        .iter()
        .any(|w| matches!(w, KvWrite::Increment { .. }));
    if guarded {
        savepoint(tx, Savepoint::Begin).await?;
    }
    let swapped = swap_claimed(tx, claim).await?;
    let mut answer = Ok(swapped);
    if swapped {
        for write in &claim.then {
            match apply_write(tx, write, true).await {
                Ok(()) => {}
                Err(e @ StorageError::NotACounter { .. }) => {
                    answer = Err(e);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    if guarded {
        if answer.is_err() {
            savepoint(tx, Savepoint::RollBack).await?;
        }
        savepoint(tx, Savepoint::Release).await?;
    }
    Ok(answer)
}

async fn savepoint(tx: &mut Tx, step: Savepoint) -> Result<(), StorageError> {
    kv::kv_savepoint(tx, step).await.map_err(unavailable)
}

#[cfg(test)]
mod tests {
    use plateau_plugin_runtime::{BucketId, Claim, KvWrite, Namespace, Storage};
    use plateau_store::Db;

    use crate::storage::SqlStorage;

    fn bucket() -> BucketId {
        BucketId {
            plugin: "echo".to_owned(),
            namespace: Namespace::Global,
        }
    }

    fn claim(key: &str, expected: Option<&[u8]>, new: &[u8], then: Vec<KvWrite>) -> Claim {
        Claim {
            bucket: bucket(),
            key: key.to_owned(),
            expected: expected.map(<[u8]>::to_vec),
            new: Some(new.to_vec()),
            then,
        }
    }

    async fn stored(db: &Db, key: &str) -> Option<Vec<u8>> {
        plateau_store::plugins::kv_get(db, "echo", "", key)
            .await
            .unwrap()
    }

    /// Many claims of one key at once, grouped: exactly one wins, and only
    /// its writes are kept; a claim whose increment cannot apply fails
    /// alone, with nothing of it kept, while the claims grouped with it
    /// stand.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn grouped_claims_answer_as_claims_alone() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(&Db::sqlite_url(dir.path())).await.unwrap();
        let storage = std::sync::Arc::new(SqlStorage::new(db.clone()));
        let mut racers = Vec::new();
        for i in 0..64 {
            let storage = storage.clone();
            racers.push(tokio::spawn(async move {
                let then = vec![KvWrite::Set {
                    bucket: bucket(),
                    key: format!("won/{i}"),
                    value: b"1".to_vec(),
                }];
                let won = storage
                    .claim(claim("lease", None, format!("{i}").as_bytes(), then))
                    .await
                    .unwrap();
                (i, won)
            }));
        }
        let mut winners = Vec::new();
        for racer in racers {
            let (i, won) = racer.await.unwrap();
            if won {
                winners.push(i);
            } else {
                assert_eq!(stored(&db, &format!("won/{i}")).await, None);
            }
        }
        assert_eq!(winners.len(), 1, "{winners:?}");
        let winner = winners[0];
        assert_eq!(
            stored(&db, "lease").await,
            Some(format!("{winner}").into_bytes())
        );
        assert_eq!(
            stored(&db, &format!("won/{winner}")).await.as_deref(),
            Some(&b"1"[..])
        );

        // A text value is not a counter.
        let text = claim("text", None, b"text", Vec::new());
        assert!(storage.claim(text).await.unwrap());
        let bad = claim(
            "bad",
            None,
            b"x",
            vec![KvWrite::Increment {
                bucket: bucket(),
                key: "text".to_owned(),
                delta: 1,
            }],
        );
        let good = claim(
            "good",
            None,
            b"y",
            vec![KvWrite::Increment {
                bucket: bucket(),
                key: "count".to_owned(),
                delta: 2,
            }],
        );
        let (bad, good) = tokio::join!(storage.claim(bad), storage.claim(good));
        assert!(bad.is_err(), "{bad:?}");
        assert!(good.unwrap());
        assert_eq!(stored(&db, "bad").await, None);
        assert_eq!(stored(&db, "good").await.as_deref(), Some(&b"y"[..]));
        assert_eq!(stored(&db, "count").await.as_deref(), Some(&b"2"[..]));
    }
}
