//! `cargo xtask bench database-backups`: backups, restores and branches
//! of managed PostgreSQL (issue 32), in one run on one server. A database
//! filled to `--size-mib` (1 GiB) is backed up on demand (`full`) against a
//! plain copy of its leader's data directory (`cp -a`), in alternating
//! rounds: the base backup's throughput (its ledger's size over its
//! ledger's start and end) as a share of the copy's. Then restores of it
//! (the request to the new database running) against the same copy.
//! Then branch creation (the request to the branch running, p50 and max)
//! of a `--small-mib` (100 MiB) database and of the big one. Last, a
//! point-in-time restore of the big one after `--wal-mib` (100 MiB) of WAL
//! written since its newest base backup, to a time after that WAL, checked
//! to hold it and not the row written after the target.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use plateau_testkit::Client;
use serde_json::{Value, json};

use crate::harness::{parse_flags, percentile};
use crate::server::{Server, debug_profile};

pub struct Options {
    pub size_mib: u64,
    pub small_mib: u64,
    pub wal_mib: u64,
    /// Backup-and-copy rounds, and restores.
    pub rounds: usize,
    /// Branches made of each database.
    pub branches: usize,
}

const USAGE: &str = "--size-mib N, --small-mib N, --wal-mib N, --rounds N, --branches N";

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut o = Options {
            size_mib: 1024,
            small_mib: 100,
            wal_mib: 100,
            rounds: 3,
            branches: 5,
        };
        parse_flags(args, USAGE, |flag, value| {
            match flag {
                "--size-mib" => o.size_mib = value.parse()?,
                "--small-mib" => o.small_mib = value.parse()?,
                "--wal-mib" => o.wal_mib = value.parse()?,
                "--rounds" => o.rounds = value.parse()?,
                "--branches" => o.branches = value.parse()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(o)
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// Runs `sql` with psql on `uri`; its trimmed output.
fn psql(uri: &str, sql: &str) -> anyhow::Result<String> {
    let out = std::process::Command::new("psql")
        .arg(uri)
        .args(["-X", "-At", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .context("running psql")?;
    if !out.status.success() {
        bail!("psql: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A running database of `size_mib` and its `writeUri`: rows of about a
/// kilobyte (not compressed by TOAST) added in 64 MiB statements until
/// `pg_database_size` reaches the size.
async fn filled(c: &Client, name: &str, size_mib: u64) -> anyhow::Result<(String, String)> {
    let disk_gb = (size_mib * 3).div_ceil(1024).max(1);
    let r = c
        .post("/databases", json!({ "name": name, "diskGb": disk_gb }))
        .await;
    if r.status != 201 {
        bail!("creating a database answered {}: {}", r.status, r.text());
    }
    let id = r.json()["id"].as_str().unwrap_or_default().to_owned();
    c.wait_running(&format!("/databases/{id}")).await;
    let uri = c.get(&format!("/databases/{id}/connection")).await.json()["writeUri"]
        .as_str()
        .context("no writeUri")?
        .to_owned();
    // The first full backup, taken as soon as the database runs, is out of
    // the way before anything is measured.
    backup_done(c, &id, None).await?;
    psql(&uri, "CREATE TABLE fill (id bigint, pad text)")?;
    let started = Instant::now();
    let mut next = 0u64;
    let rows = 64 * 1024;
    while database_mib(&uri)? < size_mib as f64 {
        psql(
            &uri,
            &format!(
                "INSERT INTO fill SELECT g, repeat(md5(g::text), 30) FROM generate_series({}, {}) g",
                next + 1,
                next + rows
            ),
        )?;
        next += rows;
    }
    println!(
        "{name}: filled to {:.0} MiB in {:.1} s",
        database_mib(&uri)?,
        started.elapsed().as_secs_f64()
    );
    Ok((id, uri))
}

fn database_mib(uri: &str) -> anyhow::Result<f64> {
    let bytes: f64 = psql(uri, "SELECT pg_database_size(current_database())")?.parse()?;
    Ok(bytes / MIB)
}

/// Waits until the cluster's WAL is all archived and shipped (nothing
/// `.ready` in the leader's `pg_wal`, an empty spool), so the archiving of
/// what was written before is not measured with what comes next.
async fn quiet(server: &Server, id: &str) -> anyhow::Result<()> {
    let cluster = server.data_dir().join("databases").join(id);
    let ready = cluster.join("node0/data/pg_wal/archive_status");
    let spool = cluster.join("wal-spool");
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let pending = count(&ready, ".ready") + count(&spool, "");
        if pending == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{pending} WAL files still not shipped after 600 s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn count(dir: &Path, suffix: &str) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
            .count()
    })
}

/// Polls the ledger of `id` until backup `want` (or, without one, any
/// full backup) is completed; its entry.
async fn backup_done(c: &Client, id: &str, want: Option<&str>) -> anyhow::Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let ledger = c.get(&format!("/databases/{id}/backups")).await.json();
        for b in ledger.as_array().into_iter().flatten() {
            let hit = want.map_or(b["kind"] == "full", |w| b["id"] == w);
            if hit && b["status"] == "completed" {
                return Ok(b.clone());
            }
            if hit && b["status"] == "failed" {
                bail!("a backup failed: {b}");
            }
        }
        if Instant::now() > deadline {
            bail!("no completed backup of {id} within 900 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn millis(at: &Value) -> anyhow::Result<f64> {
    let s = at.as_str().context("no time")?;
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)?;
    Ok(t.unix_timestamp_nanos() as f64 / 1e6)
}

/// One full backup on demand: its size in bytes and seconds, from the
/// ledger.
async fn full_backup(c: &Client, id: &str) -> anyhow::Result<(f64, f64)> {
    let r = c
        .post(&format!("/databases/{id}/backups"), json!({ "full": true }))
        .await;
    if r.status != 202 {
        bail!("asking for a backup answered {}: {}", r.status, r.text());
    }
    let bid = r.json()["id"].as_str().context("no backup id")?.to_owned();
    let b = backup_done(c, id, Some(&bid)).await?;
    let secs = (millis(&b["endedAt"])? - millis(&b["startedAt"])?) / 1000.0;
    Ok((b["sizeBytes"].as_f64().unwrap_or(0.0), secs))
}

/// A plain copy of `from` (`cp -a`) into a fresh directory beside the
/// server's data, removed after; its seconds and bytes.
fn plain_copy(from: &Path, scratch: &Path) -> anyhow::Result<(f64, f64)> {
    let to: PathBuf = scratch.join("copy");
    let started = Instant::now();
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(&to)
        .status()?;
    let secs = started.elapsed().as_secs_f64();
    if !status.success() {
        bail!("cp -a {} failed", from.display());
    }
    let out = std::process::Command::new("du")
        .args(["-sb"])
        .arg(&to)
        .output()?;
    let bytes: f64 = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or("0")
        .parse()?;
    std::fs::remove_dir_all(&to)?;
    Ok((secs, bytes))
}

/// `POST path` with `body` making a new database; the seconds to its
/// running, and its id (deleted unless `keep`).
async fn made(c: &Client, path: &str, body: Value, keep: bool) -> anyhow::Result<(f64, String)> {
    let started = Instant::now();
    let r = c.post(path, body).await;
    if r.status != 201 {
        bail!("POST {path} answered {}: {}", r.status, r.text());
    }
    let id = r.json()["id"].as_str().context("no id")?.to_owned();
    c.wait_running(&format!("/databases/{id}")).await;
    let secs = started.elapsed().as_secs_f64();
    if !keep {
        drop_database(c, &id).await;
    }
    Ok((secs, id))
}

async fn drop_database(c: &Client, id: &str) {
    c.delete(&format!("/databases/{id}")).await;
    c.wait_gone(&format!("/databases/{id}")).await;
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let server = Server::start_release().await?;
    let token = server.create_org("backup-bench", "scale").await?;
    let c = Client::new(&server.base).with_token(&token);
    let scratch = tempfile::tempdir_in(server.data_dir())?;
    println!(
        "managed PostgreSQL backups: {} MiB database, {} rounds; branches of {} MiB and {} MiB, {} each; PITR over {} MiB of WAL; {} build\n",
        opts.size_mib,
        opts.rounds,
        opts.small_mib,
        opts.size_mib,
        opts.branches,
        opts.wal_mib,
        if debug_profile() { "debug" } else { "release" }
    );
    let (big, uri) = filled(&c, "big", opts.size_mib).await?;
    let data = server
        .data_dir()
        .join(format!("databases/{big}/node0/data"));

    // Base backups against the plain copy, alternating.
    let (mut backup_rate, mut copy_rate, mut copy_secs) = (0.0, 0.0, Vec::new());
    for round in 1..=opts.rounds {
        quiet(&server, &big).await?;
        let (size, secs) = full_backup(&c, &big).await?;
        let (csecs, cbytes) = plain_copy(&data, scratch.path())?;
        let (b, p) = (size / MIB / secs, cbytes / MIB / csecs);
        println!(
            "round {round}: base backup {:.0} MiB in {secs:.2} s = {b:.0} MiB/s; cp -a {:.0} MiB in {csecs:.2} s = {p:.0} MiB/s",
            size / MIB,
            cbytes / MIB
        );
        (backup_rate, copy_rate) = (backup_rate + b, copy_rate + p);
        copy_secs.push(csecs);
    }
    let copy_mib_s = copy_rate / opts.rounds as f64;
    println!(
        "base backup / plain copy: {:.0}% ({:.0} against {:.0} MiB/s on average; target >= 70%)\n",
        backup_rate / copy_rate * 100.0,
        backup_rate / opts.rounds as f64,
        copy_mib_s
    );

    // Restores: the request to the new database running.
    let base_mib = full_backup(&c, &big).await?.0 / MIB;
    let mut restore_rate = 0.0;
    for round in 1..=opts.rounds {
        quiet(&server, &big).await?;
        let (secs, _) = made(
            &c,
            &format!("/databases/{big}/restore"),
            json!({ "name": format!("restored{round}") }),
            false,
        )
        .await?;
        let rate = base_mib / secs;
        println!(
            "restore {round}: {base_mib:.0} MiB base backup to a running database in {secs:.2} s = {rate:.0} MiB/s"
        );
        restore_rate += rate;
    }
    println!(
        "restore / plain copy: {:.0}% ({:.0} against {copy_mib_s:.0} MiB/s on average; target >= 70%)\n",
        restore_rate / opts.rounds as f64 / copy_mib_s * 100.0,
        restore_rate / opts.rounds as f64
    );

    // Branch creation of a small database and of the big one.
    let (small, _) = filled(&c, "small", opts.small_mib).await?;
    for (id, mib) in [(&small, opts.small_mib), (&big, opts.size_mib)] {
        quiet(&server, id).await?;
        full_backup(&c, id).await?;
        let mut times = Vec::new();
        for n in 1..=opts.branches {
            quiet(&server, id).await?;
            let (secs, _) = made(
                &c,
                &format!("/databases/{id}/branches"),
                json!({ "name": format!("b{n}") }),
                false,
            )
            .await?;
            times.push(secs);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "branch of a {mib} MiB database: p50 {:.2} s, max {:.2} s over {} branches ({})",
            percentile(&times, 0.5),
            times.last().copied().unwrap_or_default(),
            times.len(),
            times
                .iter()
                .map(|t| format!("{t:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    drop_database(&c, &small).await;

    pitr(&server, &c, &big, &uri, &opts).await?;
    drop_database(&c, &big).await;
    drop(scratch);
    drop(server);
    Ok(())
}

/// `--wal-mib` of WAL after the newest base backup, a target time, one
/// row after it; the restore to the target, timed and checked.
async fn pitr(
    server: &Server,
    c: &Client,
    id: &str,
    uri: &str,
    opts: &Options,
) -> anyhow::Result<()> {
    quiet(server, id).await?;
    let (base, _) = full_backup(c, id).await?;
    psql(uri, "CREATE TABLE wal_fill (id bigint, pad text)")?;
    let start_lsn = psql(uri, "SELECT pg_current_wal_lsn()")?;
    let mut rows = 0u64;
    loop {
        let wal: f64 = psql(
            uri,
            &format!("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '{start_lsn}')"),
        )?
        .parse()?;
        if wal >= (opts.wal_mib as f64) * MIB {
            break;
        }
        let batch = 16 * 1024;
        psql(
            uri,
            &format!(
                "INSERT INTO wal_fill SELECT g, repeat(md5(g::text), 30) FROM generate_series({}, {}) g",
                rows + 1,
                rows + batch
            ),
        )?;
        rows += batch;
    }
    let wal: f64 = psql(
        uri,
        &format!("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '{start_lsn}')"),
    )?
    .parse()?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let target = psql(
        uri,
        "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')",
    )?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    psql(uri, "INSERT INTO wal_fill VALUES (-1, 'after the target')")?;
    quiet(server, id).await?;
    let (secs, copy) = made(
        c,
        &format!("/databases/{id}/restore"),
        json!({ "name": "pitr", "targetTime": target }),
        true,
    )
    .await?;
    let copy_uri = c.get(&format!("/databases/{copy}/connection")).await.json()["writeUri"]
        .as_str()
        .context("no writeUri")?
        .to_owned();
    let held = psql(
        &copy_uri,
        "SELECT count(*) FILTER (WHERE id > 0) || ' ' || count(*) FILTER (WHERE id < 0) FROM wal_fill",
    )?;
    drop_database(c, &copy).await;
    if held != format!("{rows} 0") {
        bail!("the point-in-time copy holds {held} (rows, rows after the target), not {rows} 0");
    }
    println!(
        "\npoint-in-time restore: {:.0} MiB base backup + {:.0} MiB of WAL to a running database in {secs:.2} s ({rows} rows, none after the target)",
        base / MIB,
        wal / MIB
    );
    Ok(())
}
