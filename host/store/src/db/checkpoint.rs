//! The WAL checkpointer of a SQLite database.

use std::sync::Weak;
use std::time::Duration;

use sqlx::{AnyConnection, Connection};
use tokio::sync::Mutex;

/// How often the checkpointer looks at the WAL.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);
/// WAL frames beyond which the checkpointer makes the WAL start over.
const WAL_RESTART_FRAMES: i64 = 16384;

/// Copies the WAL into the database file beside the writer, on its own
/// connection, so that the writer's commits never wait for a checkpoint's
/// copying and fsyncs. A passive checkpoint runs alongside writes; but the
/// WAL only starts over when a checkpoint has caught up with the last
/// commit, which under steady writes it never quite does, so once the WAL
/// is longer than [`WAL_RESTART_FRAMES`] the checkpointer takes the
/// writer's turn for a last, short passive checkpoint (the pages written
/// since the previous one). Ends when the database is closed.
pub(super) async fn checkpointer(
    mut conn: AnyConnection,
    writer: Weak<Mutex<Option<AnyConnection>>>,
) {
    let mut tick = tokio::time::interval(CHECKPOINT_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let passive = sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(PASSIVE)");
        let (_, frames, _) = match passive.fetch_one(&mut conn).await {
            Ok(counts) => counts,
            Err(e) => {
                tracing::warn!(error = %e, "checkpointing the WAL");
                continue;
            }
        };
        let Some(writer) = writer.upgrade() else {
            break;
        };
        if frames > WAL_RESTART_FRAMES {
            let turn = writer.lock().await;
            if turn.is_none() {
                break;
            }
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&mut conn)
                .await
            {
                tracing::warn!(error = %e, "checkpointing the WAL");
            }
        } else if writer.try_lock().is_ok_and(|turn| turn.is_none()) {
            break;
        }
    }
    let _ = conn.close().await;
}
