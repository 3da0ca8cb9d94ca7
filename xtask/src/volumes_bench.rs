//! `cargo xtask bench volumes`: the volume figures of issue 31, each
//! against its peer on the same disk in the same run.
//!
//! 1. Write and fsync inside a Linux replica, on its volume, against the
//!    same commands on the host writing into the data directory (the disk
//!    the volume's image lives on): a sequential write of 512 MiB ended by
//!    one fsync, and 256 writes of 64 KiB each fsynced. The commands are
//!    busybox's `dd` in both places, timed by the shell's `time`. Target:
//!    the replica at least 80% of the host.
//! 2. Backup and restore of a 1 GB volume holding 800 MB of random data:
//!    `POST .../backups` (answered once stored) and `POST .../restore`
//!    until the new volume runs, against a plain copy of the volume's
//!    image on the same disk (`cp` then `sync`). Target: at least 70%.
//!
//! Migration under load and autoscale reaction are printed by their
//! black-box tests (`runners`, `runner_volumes`, `apps::autoscale`).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use plateau_testkit::Client;
use plateau_testkit::oci::{ImagePusher, busybox_layer_with};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::server::Server;

/// The replica's CGI: `/cgi-bin/run?<command>` runs the command.
const CGI: &str = "#!/bin/sh\necho 'Content-Type: text/plain'\necho\neval \"$(httpd -d \"$QUERY_STRING\")\" 2>&1\n";
/// The write figures' commands, run by busybox's `sh` in `$D`.
const SEQUENTIAL: &str = "dd if=/dev/zero of=$D/seq bs=1048576 count=512 conv=fsync";
const FSYNCS: &str = "i=0; while [ $i -lt 256 ]; do dd if=/dev/zero of=$D/f$i bs=65536 count=1 conv=fsync 2>/dev/null; i=$((i+1)); done";

pub async fn run() -> anyhow::Result<()> {
    let server = Server::start_release().await?;
    let token = server.create_org("volumes-bench", "pro").await?;
    let api = Client::new(&server.base).with_token(&token);
    let org = api.get("/me").await.json()["organization"]["id"]
        .as_str()
        .context("/me names no organisation")?
        .to_owned();
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Cmd": ["/bin/sh", "-c", "exec httpd -f -p $PORT -h /www"] },
        "rootfs": { "type": "layers", "diff_ids": [] },
    }))?;
    let layer = busybox_layer_with(&[
        ("www/cgi-bin/run", CGI.as_bytes()),
        ("www/index.html", b"ok\n"),
    ]);
    let image = ImagePusher::new(&server.base, &token)
        .push_image(&format!("{org}/disk"), "v1", &config, &layer, false)
        .await;
    let r = api
        .post("/apps", json!({ "name": "disk", "image": image }))
        .await;
    if r.status != 201 {
        bail!("creating the app: {} {}", r.status, r.text());
    }
    let app = r.json();
    let app_id = app["id"].as_str().context("app id")?.to_owned();
    let host = app["url"]
        .as_str()
        .context("app url")?
        .trim_start_matches("http://")
        .split([':', '/'])
        .next()
        .context("app host")?
        .to_owned();
    let replica = Replica {
        edge: server.edge.clone(),
        host,
    };
    let data = volume(&api, &app_id, "data", 2, "/data").await?;
    replica.until("ls /data", "lost+found").await?;

    // 1. Writes inside the replica against the host.
    let host_dir = server.data_dir().join("bench-host-writes");
    std::fs::create_dir_all(&host_dir)?;
    println!(
        "volume writes: busybox dd, inside a Linux replica on its volume against the host on the same disk"
    );
    println!(
        "{:<42} {:>12} {:>12} {:>8}",
        "figure", "replica", "host", "ratio"
    );
    for (name, command, bytes) in [
        (
            "sequential 512 MiB + fsync (MB/s)",
            SEQUENTIAL,
            512u64 << 20,
        ),
        ("256 x 64 KiB, each fsynced (writes/s)", FSYNCS, 256),
    ] {
        let inside = replica
            .timed(&format!("D=/data; {command}; rm -f /data/seq /data/f*"))
            .await?;
        let outside = host_timed(&host_dir, command).await?;
        let rate = |s: f64| {
            if bytes > 256 {
                bytes as f64 / 1e6 / s
            } else {
                bytes as f64 / s
            }
        };
        let (a, b) = (rate(inside), rate(outside));
        println!("{name:<42} {a:>12.1} {b:>12.1} {:>7.0}%", a / b * 100.0);
    }
    let _ = std::fs::remove_dir_all(&host_dir);

    // 2. Backup and restore of a 1 GB volume against a plain copy.
    let big = volume(&api, &app_id, "big", 1, "/big").await?;
    replica
        .until(
            "head -c 800000000 /dev/urandom > /big/r && sync && echo written",
            "written",
        )
        .await?;
    let image_file = server
        .data_dir()
        .join("apps/volumes")
        .join(&big)
        .join("image.ext4");
    let copy = server.data_dir().join("bench-copy.img");
    let plain = cp(&image_file, &copy).await?;
    let _ = std::fs::remove_file(&copy);
    let started = Instant::now();
    let r = api
        .post(&format!("/apps/{app_id}/volumes/{big}/backups"), json!({}))
        .await;
    if r.status != 201 {
        bail!("backing up: {} {}", r.status, r.text());
    }
    let backup = started.elapsed().as_secs_f64();
    let stored = r.json()["sizeBytes"].as_i64().unwrap_or_default();
    let backup_id = r.json()["id"].as_str().context("backup id")?.to_owned();
    let started = Instant::now();
    let r = api
        .post(
            &format!("/apps/{app_id}/volumes/{big}/backups/{backup_id}/restore"),
            json!({ "name": "restored", "mountPath": "/restored" }),
        )
        .await;
    if r.status != 201 {
        bail!("restoring: {} {}", r.status, r.text());
    }
    let restored = r.json()["id"].as_str().context("volume id")?.to_owned();
    running(&api, &app_id, &restored).await?;
    let restore = started.elapsed().as_secs_f64();
    let mb = 800.0;
    println!(
        "\nbackup and restore of a 1 GB volume holding {mb:.0} MB of random data (backup stored {} MB), against `cp` + `sync` of its image",
        stored / 1_000_000
    );
    println!(
        "{:<42} {:>12} {:>12} {:>8}",
        "figure", "seconds", "MB/s", "ratio"
    );
    println!(
        "{:<42} {plain:>12.2} {:>12.1} {:>7}",
        "plain copy (peer)",
        mb / plain,
        "100%"
    );
    for (name, s) in [
        ("backup", backup),
        ("restore (to the volume running)", restore),
    ] {
        println!(
            "{name:<42} {s:>12.2} {:>12.1} {:>7.0}%",
            mb / s,
            plain / s * 100.0
        );
    }
    let _ = data;
    Ok(())
}

/// An app's replica, reached through the edge.
struct Replica {
    edge: String,
    host: String,
}

impl Replica {
    /// Runs `command` in the replica; what it printed.
    async fn run(&self, command: &str) -> anyhow::Result<String> {
        let query: String = command
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let r = Client::new(&self.edge)
            .request(hyper::Method::GET, &format!("//cgi-bin/run?{query}"))
            .header("host", &self.host)
            .send()
            .await;
        Ok(r.text())
    }

    /// Runs `command` until its output contains `want` (a replica
    /// relaunched with a new volume may answer from the old one).
    async fn until(&self, command: &str, want: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            let out = self.run(command).await.unwrap_or_default();
            if out.contains(want) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("{command}: never printed {want}; last {out}");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Seconds `command` took in the replica, by the shell's `time`.
    async fn timed(&self, command: &str) -> anyhow::Result<f64> {
        let out = self.run(&format!("time sh -c '{command}' 2>&1")).await?;
        real_seconds(&out).with_context(|| format!("no time in {out:?}"))
    }
}

/// Seconds `command` took on the host in `dir`, by busybox's `time`.
async fn host_timed(dir: &std::path::Path, command: &str) -> anyhow::Result<f64> {
    let script = format!(
        "time sh -c 'D={}; {command}' 2>&1; rm -f {0}/seq {0}/f*",
        dir.display()
    );
    let out = Command::new("busybox")
        .args(["sh", "-c", &script])
        .output()
        .await?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    real_seconds(&text).with_context(|| format!("no time in {text:?}"))
}

/// `real\t1m 2.34s` → 62.34.
fn real_seconds(out: &str) -> Option<f64> {
    let line = out.lines().find(|l| l.starts_with("real"))?;
    let rest = line.trim_start_matches("real").trim();
    let (m, s) = rest.split_once('m')?;
    Some(
        m.trim().parse::<f64>().ok()? * 60.0
            + s.trim().trim_end_matches('s').parse::<f64>().ok()?,
    )
}

/// Seconds a plain `cp` of `from` to `to` took, synced.
async fn cp(from: &std::path::Path, to: &std::path::Path) -> anyhow::Result<f64> {
    let started = Instant::now();
    let ok = Command::new("cp")
        .arg(from)
        .arg(to)
        .status()
        .await?
        .success()
        && Command::new("sync").arg(to).status().await?.success();
    if !ok {
        bail!("cp {} {}", from.display(), to.display());
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Adds a volume to the app and waits until it runs; its id.
async fn volume(
    api: &Client,
    app_id: &str,
    name: &str,
    size_gb: i64,
    mount: &str,
) -> anyhow::Result<String> {
    let r = api
        .post(
            &format!("/apps/{app_id}/volumes"),
            json!({ "name": name, "sizeGb": size_gb, "mountPath": mount }),
        )
        .await;
    if r.status != 201 {
        bail!("creating volume {name}: {} {}", r.status, r.text());
    }
    let id = r.json()["id"].as_str().context("volume id")?.to_owned();
    running(api, app_id, &id).await?;
    Ok(id)
}

/// Waits until volume `id` of the app runs.
async fn running(api: &Client, app_id: &str, id: &str) -> anyhow::Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let list = api.get(&format!("/apps/{app_id}/volumes")).await.json();
        let v = list["items"]
            .as_array()
            .and_then(|items| items.iter().find(|v| v["id"] == id))
            .cloned()
            .unwrap_or(Value::Null);
        match v["status"].as_str() {
            Some("running") => return Ok(v),
            Some("failed") => bail!("volume {id} failed: {v}"),
            _ if Instant::now() > deadline => bail!("volume {id} not running: {v}"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}
