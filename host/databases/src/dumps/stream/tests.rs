//! The dump stream on an in-memory store: plain SQL and gzip (several
//! members) come out whole, a damaged gzip and SQL past the limit end in
//! an error, never in a shorter SQL that would commit.

use std::io::Write as _;

use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt as _};
use tokio::io::AsyncReadExt as _;

use super::open;
use crate::Error;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

async fn stored(data: Vec<u8>) -> (InMemory, ObjectPath) {
    let store = InMemory::new();
    let key = ObjectPath::from("db/dumps/k");
    store.put(&key, data.into()).await.unwrap();
    (store, key)
}

/// The SQL of `data` read to its end, limited to `max` bytes.
async fn read(data: Vec<u8>, max: u64) -> std::io::Result<Vec<u8>> {
    let (store, key) = stored(data).await;
    let no_pg_restore = || Err(Error::Internal("not a custom dump".into()));
    let (mut sql, ended) = open(&store as &dyn ObjectStore, &key, no_pg_restore, max)
        .await
        .unwrap();
    let mut out = Vec::new();
    let read = sql.read_to_end(&mut out).await;
    ended.check().await.unwrap();
    read.map(|_| out)
}

/// Lines of SQL adding up to about `n` bytes.
fn sql_of(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < n {
        out.extend_from_slice(format!("INSERT INTO t VALUES ({i}, 'row {i}');\n").as_bytes());
        i += 1;
    }
    out
}

#[tokio::test]
async fn plain_sql_comes_out_as_it_is() {
    let sql = sql_of(300_000);
    assert_eq!(read(sql.clone(), 1 << 30).await.unwrap(), sql);
    // Shorter than the magic of either format.
    assert_eq!(read(b"--".to_vec(), 1 << 30).await.unwrap(), b"--");
    assert_eq!(read(Vec::new(), 1 << 30).await.unwrap(), b"");
}

#[tokio::test]
async fn gzip_of_several_members_comes_out_whole() {
    let sql = sql_of(500_000);
    let (a, b) = sql.split_at(123_457);
    let mut data = gzip(a);
    data.extend(gzip(b));
    assert_eq!(read(data, 1 << 30).await.unwrap(), sql);
}

#[tokio::test]
async fn a_damaged_gzip_is_an_error_not_a_shorter_dump() {
    let mut data = gzip(&sql_of(400_000));
    let cut = data.len() / 2;
    data.truncate(cut);
    let e = read(data, 1 << 30).await.unwrap_err();
    assert!(e.to_string().contains("not a whole gzip file"), "{e}");
}

#[tokio::test]
async fn sql_past_the_limit_is_an_error() {
    // A small upload that expands far (a gzip bomb in miniature).
    let data = gzip(&vec![b' '; 8 * 1024 * 1024]);
    assert!(data.len() < 64 * 1024);
    let e = read(data, 1024 * 1024).await.unwrap_err();
    assert!(e.to_string().contains("more than 1048576 bytes"), "{e}");
    // At the limit exactly, it passes.
    assert_eq!(read(vec![b' '; 4096], 4096).await.unwrap().len(), 4096);
}

#[tokio::test]
async fn a_missing_dump_names_its_key() {
    let store = InMemory::new();
    let key = ObjectPath::from("db/dumps/none");
    let opened = open(&store as &dyn ObjectStore, &key, || unreachable!(), 1 << 20).await;
    let Err(Error::Missing(why)) = opened else {
        panic!("a missing dump must be Missing");
    };
    assert!(why.contains("db/dumps/none"), "{why}");
}
