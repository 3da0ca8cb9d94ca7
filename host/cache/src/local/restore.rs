//! A restore into a running cluster: a scratch `redis-server` (as the
//! cluster's user, reachable only on a unix socket in the cluster's 0700
//! directory, no TCP port, no persistence) loads the snapshot's RDB; the
//! leader is emptied (`FLUSHALL`) and given every key with `DUMP` and
//! `RESTORE ... REPLACE` (with its time to live), through the replication
//! stream, so the replicas follow and nothing stops. Clients see the data
//! set change while it runs; the scratch server is killed when it ends.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use redis::aio::MultiplexedConnection;
use tokio::process::Command;

use crate::client;
use crate::spec::Placement;
use crate::{Error, Result};

use super::{LocalProvider, user};

/// The scratch server's directory inside the cluster's.
const DIR: &str = "restore";
const SOCKET: &str = "restore.sock";
const SEED: &str = "seed.rdb";
/// Keys copied per round trip.
const BATCH: usize = 500;
/// How long the scratch server may take to load the RDB.
const LOAD_WITHIN: Duration = Duration::from_secs(120);

fn scratch_conf(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "port 0\nunixsocket {d}/{SOCKET}\nunixsocketperm 700\ndir {d}\ndbfilename {SEED}\n\
         save \"\"\nappendonly no\ndaemonize no\nlogfile {d}/redis.log\nprotected-mode no\n"
    )
}

/// Replaces the data set of the leader behind `leader` (an admin
/// connection) with the keys of `rdb`.
pub async fn replace(
    provider: &LocalProvider,
    placement: &Placement,
    mut leader: MultiplexedConnection,
    rdb: Bytes,
) -> Result<()> {
    let dir = provider.process_dir(placement, DIR);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(SEED), &rdb)?;
    super::tls::write_private(&dir.join("redis.conf"), scratch_conf(&dir).as_bytes())?;
    let os_user = provider.process_user(&placement.cluster).await?;
    user::own(&provider.cluster_dir(&placement.cluster), os_user.as_ref())?;
    let mut cmd = Command::new(provider.bin());
    if let Some(u) = os_user {
        cmd.uid(u.uid).gid(u.gid);
    }
    cmd.arg(dir.join("redis.conf"))
        .process_group(0)
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut scratch = cmd
        .spawn()
        .map_err(|e| Error::Unavailable(format!("cannot run {}: {e}", provider.bin().display())))?;
    let copied = async {
        let mut source = loaded(&dir.join(SOCKET)).await?;
        copy(&mut source, &mut leader).await
    }
    .await;
    let _ = scratch.kill().await;
    let _ = std::fs::remove_dir_all(&dir);
    let keys = copied?;
    tracing::info!(cache = %placement.cluster, keys, "restored a snapshot into a running cache");
    Ok(())
}

/// A connection to the scratch server once it has loaded its RDB.
async fn loaded(socket: &Path) -> Result<MultiplexedConnection> {
    let url = format!("unix://{}", socket.display());
    let deadline = tokio::time::Instant::now() + LOAD_WITHIN;
    loop {
        let attempt = async {
            let mut conn = redis::Client::open(url.as_str())?
                .get_multiplexed_async_connection()
                .await?;
            let _: String = redis::cmd("PING").query_async(&mut conn).await?;
            Ok::<_, redis::RedisError>(conn)
        };
        match attempt.await {
            Ok(conn) => return Ok(conn),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(Error::Unavailable(format!(
                    "the snapshot did not load within {} s: {e}",
                    LOAD_WITHIN.as_secs()
                )));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Empties `target` and copies every key of every database of `source`
/// into it; how many keys.
async fn copy(
    source: &mut MultiplexedConnection,
    target: &mut MultiplexedConnection,
) -> Result<u64> {
    let keyspace = client::info(source, "keyspace").await?;
    let () = redis::cmd("FLUSHALL")
        .arg("SYNC")
        .query_async(target)
        .await?;
    let mut copied = 0;
    for db in keyspace
        .keys()
        .filter_map(|k| k.strip_prefix("db")?.parse::<u32>().ok())
    {
        let () = redis::cmd("SELECT").arg(db).query_async(source).await?;
        let () = redis::cmd("SELECT").arg(db).query_async(target).await?;
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("COUNT")
                .arg(BATCH)
                .query_async(source)
                .await?;
            copied += copy_keys(source, target, &keys).await?;
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    let () = redis::cmd("SELECT").arg(0).query_async(target).await?;
    Ok(copied)
}

async fn copy_keys(
    source: &mut MultiplexedConnection,
    target: &mut MultiplexedConnection,
    keys: &[Vec<u8>],
) -> Result<u64> {
    if keys.is_empty() {
        return Ok(0);
    }
    let mut read = redis::pipe();
    for key in keys {
        read.cmd("PTTL").arg(key).cmd("DUMP").arg(key);
    }
    let values: Vec<(i64, Option<Vec<u8>>)> = read.query_async(source).await?;
    let mut write = redis::pipe();
    let mut n = 0;
    for (key, (ttl, dump)) in keys.iter().zip(values) {
        // Gone meanwhile (expired): nothing to copy.
        let Some(dump) = dump else { continue };
        if ttl == -2 {
            continue;
        }
        let ttl = ttl.max(0);
        write
            .cmd("RESTORE")
            .arg(key)
            .arg(ttl)
            .arg(dump)
            .arg("REPLACE")
            .ignore();
        n += 1;
    }
    let () = write.query_async(target).await?;
    Ok(n)
}
