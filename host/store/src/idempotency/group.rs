//! Group commit of idempotency reservations on SQLite.
//!
//! SQLite has one writer, and a fresh idempotent request would otherwise
//! take a turn on it twice: once to reserve its key, once for its change.
//! Reservations that arrive while the writer is busy wait here instead and
//! are written together, as one multi-row `INSERT … ON CONFLICT DO NOTHING
//! RETURNING` in the next turn: one statement, one commit, one round trip
//! to SQLite for all of them. Each caller still learns whether its own key
//! was inserted, and only after the commit, so a reservation is as durable
//! and as visible as one written alone.

use std::collections::HashSet;

use tokio::sync::{mpsc, oneshot};

use crate::db::Writer;
use crate::group::next_group;
use crate::{Error, Result};

/// At most this many reservations share a statement (8 values each).
const MAX_GROUP: usize = 64;

/// A reservation to insert, owned so it can wait in the queue.
pub(super) struct NewKey {
    pub scope: String,
    pub method: String,
    pub path: String,
    pub key: String,
    pub fingerprint: String,
    pub locked_until: i64,
    pub created_at: i64,
    pub expires_at: i64,
}

impl NewKey {
    fn id(&self) -> (&str, &str, &str, &str) {
        (&self.scope, &self.method, &self.path, &self.key)
    }
}

struct Job {
    key: NewKey,
    /// Whether this key was inserted (false: a record was already there).
    done: oneshot::Sender<Result<bool>>,
}

/// The queue of reservations waiting for the writer; its task ends when the
/// last handle is dropped.
#[derive(Clone)]
pub(crate) struct Reservations {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Reservations {
    pub(crate) fn start(writer: Writer) -> Reservations {
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(run(writer, queue));
        Reservations { jobs }
    }

    /// Inserts `key` unless a record for it exists; true if inserted.
    pub(super) async fn insert(&self, key: NewKey) -> Result<bool> {
        let (done, outcome) = oneshot::channel();
        self.jobs
            .send(Job { key, done })
            .map_err(|_| Error::Database(sqlx::Error::PoolClosed))?;
        outcome
            .await
            .map_err(|_| Error::Database(sqlx::Error::PoolClosed))?
    }
}

async fn run(writer: Writer, mut queue: mpsc::UnboundedReceiver<Job>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while let Some(conn) = next_group(&mut queue, &mut group, MAX_GROUP, || writer.acquire()).await
    {
        let outcome = match conn {
            Ok(mut conn) => insert_all(&mut conn, &group).await,
            Err(e) => Err(e),
        };
        match outcome {
            Ok(inserted) => {
                for (job, inserted) in group.drain(..).zip(inserted) {
                    let _ = job.done.send(Ok(inserted));
                }
            }
            Err(e) => {
                let message = e.to_string();
                for job in group.drain(..) {
                    let _ = job.done.send(Err(Error::Grouped(message.clone())));
                }
            }
        }
    }
}

/// Inserts the group in one statement; for each job, whether its key was
/// inserted. A key twice in one group is inserted for the first job only.
async fn insert_all(conn: &mut sqlx::AnyConnection, group: &[Job]) -> Result<Vec<bool>> {
    let mut seen = HashSet::new();
    let first: Vec<bool> = group.iter().map(|job| seen.insert(job.key.id())).collect();
    let mut sql = String::from(
        "INSERT INTO idempotency_keys (scope, method, path, key, fingerprint, state, status, \
         content_type, body, locked_until, created_at, expires_at) VALUES ",
    );
    let mut n = 0;
    for _ in first.iter().filter(|first| **first) {
        if n > 0 {
            sql.push_str(", ");
        }
        let p: Vec<String> = (n + 1..=n + 8).map(|i| format!("${i}")).collect();
        sql.push_str(&format!(
            "({}, {}, {}, {}, {}, 'running', NULL, NULL, NULL, {}, {}, {})",
            p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]
        ));
        n += 8;
    }
    sql.push_str(
        " ON CONFLICT (scope, method, path, key) DO NOTHING RETURNING scope, method, path, key",
    );
    let mut query = sqlx::query_as::<_, (String, String, String, String)>(&sql);
    for job in group.iter().zip(&first).filter(|(_, first)| **first) {
        let k = &job.0.key;
        query = query
            .bind(&k.scope)
            .bind(&k.method)
            .bind(&k.path)
            .bind(&k.key)
            .bind(&k.fingerprint)
            .bind(k.locked_until)
            .bind(k.created_at)
            .bind(k.expires_at);
    }
    let inserted: HashSet<(String, String, String, String)> =
        query.fetch_all(conn).await?.into_iter().collect();
    Ok(group
        .iter()
        .zip(first)
        .map(|(job, first)| {
            let (s, m, p, k) = job.key.id();
            first && inserted.contains(&(s.to_owned(), m.to_owned(), p.to_owned(), k.to_owned()))
        })
        .collect())
}
