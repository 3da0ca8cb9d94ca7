//! How a SQLite [`Tx`] merges its statements: what a caller sees must be
//! what separate statements would have shown.

use super::tx::renumber;
use super::{Db, Deferred, Tx};

async fn sqlite() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = Db::connect(&Db::sqlite_url(dir.path()))
        .await
        .expect("sqlite");
    (dir, db)
}

fn setting(key: &str, value: &str) -> Deferred {
    Deferred::new("INSERT INTO settings (key, value) VALUES ($1, $2)")
        .bind(key)
        .bind(value)
}

async fn value(db: &Db, key: &str) -> Option<String> {
    sqlx::query_scalar("SELECT value FROM settings WHERE key = $1")
        .bind(key)
        .fetch_optional(db.pool())
        .await
        .expect("read")
}

async fn count_in(tx: &mut Tx, prefix: &str) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM settings WHERE key LIKE $1")
        .bind(format!("{prefix}%"))
        .fetch_one(tx.conn())
        .await
        .expect("count")
}

#[test]
fn renumbers_placeholders_outside_quotes() {
    assert_eq!(
        renumber("INSERT INTO t (a, b) VALUES ($1, $12)", 3),
        "INSERT INTO t (a, b) VALUES ($4, $15)"
    );
    assert_eq!(
        renumber("SELECT '$1', \"$2\", $2 FROM t", 10),
        "SELECT '$1', \"$2\", $12 FROM t"
    );
    assert_eq!(renumber("SELECT $ FROM t", 1), "SELECT $ FROM t");
}

#[tokio::test]
async fn deferred_writes_are_seen_by_the_next_statement_and_committed() {
    let (_dir, db) = sqlite().await;
    let mut tx = db.begin().await.expect("begin");
    tx.defer(setting("t.a", "1")).await.expect("defer");
    tx.defer(setting("t.b", "2")).await.expect("defer");
    // The statement's own placeholders and result are its own: the two
    // rows written ahead of it (and the BEGIN) do not count as its changes.
    let changed = sqlx::query("UPDATE settings SET value = $1 WHERE key = $2")
        .bind("3")
        .bind("t.b")
        .execute(tx.conn())
        .await
        .expect("update");
    assert_eq!(changed.rows_affected(), 1);
    assert_eq!(count_in(&mut tx, "t.").await, 2);
    tx.defer(setting("t.c", "4")).await.expect("defer");
    tx.commit().await.expect("commit");
    assert_eq!(value(&db, "t.a").await.as_deref(), Some("1"));
    assert_eq!(value(&db, "t.b").await.as_deref(), Some("3"));
    assert_eq!(value(&db, "t.c").await.as_deref(), Some("4"));
}

#[tokio::test]
async fn a_dropped_transaction_leaves_nothing_and_frees_the_writer() {
    let (_dir, db) = sqlite().await;
    let mut tx = db.begin().await.expect("begin");
    sqlx::query("INSERT INTO settings (key, value) VALUES ('d.sent', 'x')")
        .execute(tx.conn())
        .await
        .expect("insert");
    tx.defer(setting("d.held", "y")).await.expect("defer");
    drop(tx);
    // The next transaction begins cleanly once the rollback has run.
    let mut tx = db.begin().await.expect("begin again");
    assert_eq!(count_in(&mut tx, "d.").await, 0);
    tx.defer(setting("d.after", "z")).await.expect("defer");
    tx.commit().await.expect("commit");
    assert_eq!(value(&db, "d.sent").await, None);
    assert_eq!(value(&db, "d.held").await, None);
    assert_eq!(value(&db, "d.after").await.as_deref(), Some("z"));
}

#[tokio::test]
async fn a_failed_deferred_write_fails_the_transaction_not_as_the_statements_own_error() {
    let (_dir, db) = sqlite().await;
    let mut tx = db.begin().await.expect("begin");
    tx.defer(setting("f.dup", "1")).await.expect("defer");
    tx.commit().await.expect("commit");

    let mut tx = db.begin().await.expect("begin");
    tx.defer(setting("f.dup", "2")).await.expect("defer");
    let err = sqlx::query("INSERT INTO settings (key, value) VALUES ('f.new', 'x')")
        .execute(tx.conn())
        .await
        .expect_err("the held duplicate fails the statement that carries it");
    let err = crate::Error::from(err);
    assert!(
        !err.is_unique_violation(),
        "the caller's statement violated nothing: {err}"
    );
    drop(tx);
    assert_eq!(value(&db, "f.dup").await.as_deref(), Some("1"));
    assert_eq!(value(&db, "f.new").await, None);
}

#[tokio::test]
async fn a_transaction_that_sent_nothing_commits_without_a_trip() {
    let (_dir, db) = sqlite().await;
    let tx = db.begin().await.expect("begin");
    tx.commit().await.expect("an empty commit");
    // The writer was never inside a transaction: a new one begins.
    let mut tx = db.begin().await.expect("begin");
    tx.defer(setting("e.x", "1")).await.expect("defer");
    tx.commit().await.expect("commit");
    assert_eq!(value(&db, "e.x").await.as_deref(), Some("1"));
}
