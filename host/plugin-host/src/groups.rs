//! Group commit of plugin writes on SQLite: `kv.claim`s and the write
//! sets of committed calls.
//!
//! On SQLite's one writer a transaction per claim or per call makes the
//! commit the cost of the operation, so those that arrive while the writer
//! is busy wait together and are committed in one transaction: each runs
//! in arrival order, sees the ones before it, and is answered only once the
//! transaction holding it has committed. To its caller a grouped operation
//! is what it is alone:
//! - a claim is true when its compare-and-swap held and its writes are
//!   durable, false when the key held another value and nothing was
//!   written;
//! - a write set is committed whole (its key-value writes, events and
//!   jobs), or fails with `Conflict` when one of its expectations no longer
//!   holds, and then nothing of it is written.
//!
//! One whose writes cannot apply (an increment of a key that is not a
//! counter) is rolled back to its savepoint alone; a database error fails
//! the whole group, none of whose writes then stay.
//!
//! A call under an `Idempotency-Key` is not grouped: its transaction is
//! held open for the request's idempotency record (`Tx::commit_last`).
//! PostgreSQL runs many writers at once, and keeps a transaction per
//! operation.

use plateau_plugin_runtime::{Claim, KvWrite, StorageError, WriteSet};
use plateau_store::group::next_group;
use plateau_store::plugins::{self as kv, Savepoint};
use plateau_store::{Db, Tx};
use tokio::sync::{mpsc, oneshot};

use crate::storage::{claim_in, commit_in, unavailable};

/// The most operations one transaction commits.
const MAX_GROUP: usize = 256;

/// One operation waiting for the writer, and where its answer goes.
enum Job {
    Claim(Claim, oneshot::Sender<Result<bool, StorageError>>),
    Commit(WriteSet, oneshot::Sender<Result<(), StorageError>>),
}

/// What one operation of a group comes to.
enum Answer {
    Claim(Result<bool, StorageError>),
    Commit(Result<(), StorageError>),
}

/// The queue of operations waiting for the writer; one task commits them.
pub struct WriteGroups {
    jobs: mpsc::UnboundedSender<Job>,
}

fn stopped() -> StorageError {
    StorageError::Unavailable("the database is closing".to_owned())
}

impl WriteGroups {
    /// Starts the committing task (inside a tokio runtime).
    pub fn start(db: Db) -> WriteGroups {
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(run(db, queue));
        WriteGroups { jobs }
    }

    /// Claims with the operations that wait with it; answers after the
    /// commit.
    pub async fn claim(&self, claim: Claim) -> Result<bool, StorageError> {
        let (done, outcome) = oneshot::channel();
        self.jobs
            .send(Job::Claim(claim, done))
            .map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }

    /// Commits `set` with the operations that wait with it; answers after
    /// the commit.
    pub async fn commit(&self, set: WriteSet) -> Result<(), StorageError> {
        let (done, outcome) = oneshot::channel();
        self.jobs
            .send(Job::Commit(set, done))
            .map_err(|_| stopped())?;
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
        let answers = match outcome {
            Ok(answers) => answers,
            Err(e) => group.iter().map(|job| job.failed(&e)).collect(),
        };
        for (job, answer) in group.drain(..).zip(answers) {
            job.answer(answer);
        }
    }
}

impl Answer {
    fn failed(&self) -> bool {
        match self {
            Answer::Claim(answer) => answer.is_err(),
            Answer::Commit(answer) => answer.is_err(),
        }
    }
}

impl Job {
    /// The key-value writes of this operation.
    fn writes(&self) -> &[KvWrite] {
        match self {
            Job::Claim(claim, _) => &claim.then,
            Job::Commit(set, _) => &set.writes,
        }
    }

    /// This job's answer when its whole group failed with `e`.
    fn failed(&self, e: &StorageError) -> Answer {
        match self {
            Job::Claim(..) => Answer::Claim(Err(e.clone())),
            Job::Commit(..) => Answer::Commit(Err(e.clone())),
        }
    }

    fn answer(self, answer: Answer) {
        match (self, answer) {
            (Job::Claim(_, done), Answer::Claim(answer)) => {
                let _ = done.send(answer);
            }
            (Job::Commit(_, done), Answer::Commit(answer)) => {
                let _ = done.send(answer);
            }
            _ => unreachable!("answers are in the order of the group"),
        }
    }
}

/// Runs every operation of `group` in `tx` and commits; each one's answer,
/// or the error that failed them all.
async fn commit_group(mut tx: Tx, group: &[Job]) -> Result<Vec<Answer>, StorageError> {
    let mut answers = Vec::with_capacity(group.len());
    for job in group {
        // Only an increment can fail on its own once writing began: an
        // operation with one gets a savepoint to roll back to, so that
        // nothing of it stays while the rest of the group does.
        let guarded = job
            .writes()
            .iter()
            .any(|w| matches!(w, KvWrite::Increment { .. }));
        if guarded {
            savepoint(&mut tx, Savepoint::Begin).await?;
        }
        let answer = match job {
            Job::Claim(claim, _) => Answer::Claim(claim_in(&mut tx, claim).await?),
            Job::Commit(set, _) => Answer::Commit(commit_in(&mut tx, set).await?),
        };
        if guarded {
            if answer.failed() {
                savepoint(&mut tx, Savepoint::RollBack).await?;
            }
            savepoint(&mut tx, Savepoint::Release).await?;
        }
        answers.push(answer);
    }
    tx.commit().await.map_err(unavailable)?;
    Ok(answers)
}

async fn savepoint(tx: &mut Tx, step: Savepoint) -> Result<(), StorageError> {
    kv::kv_savepoint(tx, step).await.map_err(unavailable)
}

#[cfg(test)]
mod tests {
    use plateau_plugin_runtime::{
        BucketId, Claim, Expectation, KvWrite, Namespace, Storage, StorageError, WriteSet,
    };
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

    /// A SQLite database in a fresh directory (kept while the first is),
    /// and its storage.
    async fn sqlite_storage() -> (tempfile::TempDir, Db, std::sync::Arc<SqlStorage>) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(&Db::sqlite_url(dir.path())).await.unwrap();
        let storage = std::sync::Arc::new(SqlStorage::new(db.clone()));
        (dir, db, storage)
    }

    /// Many claims of one key at once, grouped: exactly one wins, and only
    /// its writes are kept; a claim whose increment cannot apply fails
    /// alone, with nothing of it kept, while the claims grouped with it
    /// stand.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn grouped_claims_answer_as_claims_alone() {
        let (_dir, db, storage) = sqlite_storage().await;
        let mut racers = Vec::new();
        for i in 0..64 {
            let storage = storage.clone();
            racers.push(tokio::spawn(async move {
                let then = vec![set(&format!("won/{i}"), b"1")];
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

    fn set(key: &str, value: &[u8]) -> KvWrite {
        KvWrite::Set {
            bucket: bucket(),
            key: key.to_owned(),
            value: value.to_vec(),
        }
    }

    /// Read-modify-write calls racing on one key, grouped: each commit
    /// whose expectation still holds is kept whole, each other one is a
    /// conflict with nothing of it kept; a set whose increment cannot apply
    /// fails alone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn grouped_commits_answer_as_commits_alone() {
        let (_dir, db, storage) = sqlite_storage().await;
        let mut racers = Vec::new();
        for i in 0..64 {
            let storage = storage.clone();
            racers.push(tokio::spawn(async move {
                let set = WriteSet {
                    plugin: "echo".to_owned(),
                    expectations: vec![Expectation {
                        bucket: bucket(),
                        key: "owner".to_owned(),
                        value: None,
                    }],
                    writes: vec![
                        set("owner", format!("{i}").as_bytes()),
                        set(&format!("by/{i}"), b"1"),
                    ],
                    ..WriteSet::default()
                };
                (i, storage.commit(set).await)
            }));
        }
        let mut winners = Vec::new();
        for racer in racers {
            let (i, outcome) = racer.await.unwrap();
            match outcome {
                Ok(()) => winners.push(i),
                Err(StorageError::Conflict { key }) => {
                    assert_eq!(key, "owner");
                    assert_eq!(stored(&db, &format!("by/{i}")).await, None);
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(winners.len(), 1, "{winners:?}");
        let winner = winners[0];
        assert_eq!(
            stored(&db, "owner").await,
            Some(format!("{winner}").into_bytes())
        );

        let increment = |key: &str| KvWrite::Increment {
            bucket: bucket(),
            key: key.to_owned(),
            delta: 1,
        };
        // A text value is not a counter.
        storage
            .commit(WriteSet {
                plugin: "echo".to_owned(),
                writes: vec![set("text", b"text")],
                ..WriteSet::default()
            })
            .await
            .unwrap();
        let bad = WriteSet {
            plugin: "echo".to_owned(),
            writes: vec![set("before-bad", b"1"), increment("text")],
            ..WriteSet::default()
        };
        let good = WriteSet {
            plugin: "echo".to_owned(),
            writes: vec![set("before-good", b"1"), increment("counter")],
            ..WriteSet::default()
        };
        let (bad, good) = tokio::join!(storage.commit(bad), storage.commit(good));
        assert!(
            matches!(bad, Err(StorageError::NotACounter { .. })),
            "{bad:?}"
        );
        good.unwrap();
        assert_eq!(stored(&db, "before-bad").await, None);
        assert_eq!(stored(&db, "before-good").await.as_deref(), Some(&b"1"[..]));
        assert_eq!(stored(&db, "counter").await.as_deref(), Some(&b"1"[..]));
    }
}
