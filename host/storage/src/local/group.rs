//! Group commit of object rows on SQLite.
//!
//! SQLite has one writer, and each PutObject would otherwise take its own
//! turn on it for a transaction of four round trips. Rows whose bytes are
//! written wait here instead, and whoever arrives while the writer is busy
//! goes into the next turn: one transaction for the group
//! ([`objects::put_group`], three round trips). Each caller learns its own
//! outcome (a refusal for quota is its alone) only after the commit, so a
//! row is as durable as one written alone; when the commit fails, every
//! caller of the group is told and deletes its bytes.

use plateau_store::group::next_group;
use plateau_store::storage::WriteError;
use plateau_store::storage::objects::{self, Put};
use plateau_store::storage::versions::Settled;
use plateau_store::{Db, Error};
use tokio::sync::{mpsc, oneshot};

/// At most this many rows share a transaction.
const MAX_GROUP: usize = 64;

type Outcome = Result<Settled, WriteError>;

struct Job {
    put: Put,
    done: oneshot::Sender<Outcome>,
}

/// The queue of rows waiting for the writer; its task ends when the last
/// handle is dropped.
#[derive(Clone)]
pub(crate) struct Commits {
    jobs: mpsc::UnboundedSender<Job>,
}

fn closed() -> WriteError {
    WriteError::Store(Error::Grouped(
        "the object writer has stopped; try again".to_owned(),
    ))
}

impl Commits {
    pub(crate) fn start(db: Db) -> Commits {
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(run(db, queue));
        Commits { jobs }
    }

    /// Records `put` as [`objects::put`] would; returns what it replaced.
    pub(crate) async fn put(&self, put: Put) -> Outcome {
        let (done, outcome) = oneshot::channel();
        self.jobs.send(Job { put, done }).map_err(|_| closed())?;
        outcome.await.map_err(|_| closed())?
    }
}

async fn run(db: Db, mut queue: mpsc::UnboundedReceiver<Job>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while let Some(tx) = next_group(&mut queue, &mut group, MAX_GROUP, || db.begin()).await {
        let puts: Vec<Put> = group.iter().map(|j| j.put.clone()).collect();
        let outcome = match tx {
            Ok(mut tx) => match objects::put_group(&mut tx, &puts).await {
                Ok(outcomes) => tx.commit().await.map(|()| outcomes),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        match outcome {
            Ok(outcomes) => {
                for (job, outcome) in group.drain(..).zip(outcomes) {
                    let _ = job.done.send(outcome);
                }
            }
            Err(e) => {
                let message = e.to_string();
                for job in group.drain(..) {
                    let failed = WriteError::Store(Error::Grouped(message.clone()));
                    let _ = job.done.send(Err(failed));
                }
            }
        }
    }
}
