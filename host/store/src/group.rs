//! Group commit on SQLite's one writer: requests that arrive while the
//! writer is busy wait in a queue and go together in its next turn, each
//! answered only after that turn commits. The idempotency reservations,
//! plugin `kv.claim`s and object-storage rows use it; each site says how
//! its group is written.

use std::future::Future;

use tokio::sync::mpsc;

/// Fills `group` with the next group of `queue`: waits for a first job,
/// then for `turn` (the writer's turn: a transaction or its connection),
/// and takes along whoever arrived meanwhile, up to `max` jobs. `None`
/// once every sender is gone.
pub async fn next_group<J, T, F>(
    queue: &mut mpsc::UnboundedReceiver<J>,
    group: &mut Vec<J>,
    max: usize,
    turn: impl FnOnce() -> F,
) -> Option<T>
where
    F: Future<Output = T>,
{
    if queue.recv_many(group, max).await == 0 {
        return None;
    }
    let turn = turn().await;
    while group.len() < max {
        match queue.try_recv() {
            Ok(job) => group.push(job),
            Err(_) => break,
        }
    }
    Some(turn)
}
