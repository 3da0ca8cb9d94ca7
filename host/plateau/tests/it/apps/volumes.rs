//! Volumes of a Linux app, end to end on one server: bad input names its
//! field; what a replica writes at the volume's `mountPath` survives a
//! redeploy, a pause and resume and a restart of `plateau serve`; a
//! write past `sizeGb` fails with ENOSPC inside the replica; a backup is
//! listed with its size and time and restores into a NEW volume holding
//! what the volume held when it was taken; deleting an attached volume
//! detaches it. And the attacks: an image whose `mountPath` is a link
//! to a host directory, and a link the app leaves in its volume, reach
//! nothing of the host. Needs root, runc, a free loop device and
//! e2fsprogs.

use std::path::Path;
use std::time::{Duration, Instant};

use plateau_testkit::Backend;
use plateau_testkit::oci::{ImagePusher, busybox_layer_with_links};
use serde_json::{Value, json};

use super::sandbox::{CGI, run};
use super::{Apps, Edge, id, slug};
use crate::{eventually, eventually_or, until};

/// The busybox CGI image (`/cgi-bin/run` runs its query string), with
/// `links` besides; pushed as `repo:tag`, its reference.
pub(crate) async fn push(env: &Apps, repo: &str, tag: &str, links: &[(&str, &str)]) -> String {
    let registry = ImagePusher::new(&env.server.url, &env.token);
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Cmd": ["/bin/sh", "-c", "exec httpd -f -p $PORT -h /www"] },
        "rootfs": { "type": "layers", "diff_ids": [] },
    }))
    .unwrap();
    let layer = busybox_layer_with_links(
        &[
            ("www/cgi-bin/run", CGI.as_bytes()),
            ("www/index.html", b"ok\n"),
        ],
        links,
    );
    let repo = format!("{}/{repo}", env.org);
    registry
        .push_image(&repo, tag, &config, &layer, false)
        .await
}

/// Waits until `command`, run in the app's replica, prints something
/// `done` accepts (a replica relaunched with other volumes may answer
/// from the old one meanwhile); what it printed.
pub(crate) async fn until_printed(
    edge: &Edge,
    command: &str,
    done: impl Fn(&str) -> bool,
) -> String {
    let query: String = command
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let path = format!("/cgi-bin/run?{query}");
    let last = std::sync::Mutex::new(None);
    eventually_or(
        command,
        Duration::from_secs(60),
        || async {
            let answer = edge.get(&path).await;
            let said = match &answer {
                Ok((200, body)) if done(body.trim()) => Some(body.trim().to_owned()),
                _ => None,
            };
            *last.lock().unwrap() = Some(answer);
            said
        },
        || eprintln!("the replica last answered {:?}", last.lock().unwrap()),
    )
    .await
}

/// Creates a volume; its JSON once it runs.
pub(crate) async fn running_volume(env: &Apps, app_id: &str, body: Value) -> Value {
    let r = env
        .client()
        .post(&format!("/apps/{app_id}/volumes"), body)
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    wait_running(env, app_id, &id(&r.json())).await
}

pub(crate) async fn wait_running(env: &Apps, app_id: &str, vol_id: &str) -> Value {
    let c = env.client();
    let path = format!("/apps/{app_id}/volumes");
    let v = eventually("the volume to run", Duration::from_secs(60), || async {
        let page = c.get(&path).await.json();
        let v = page["items"]
            .as_array()?
            .iter()
            .find(|v| v["id"] == vol_id)?
            .clone();
        (v["status"] == "running" || v["status"] == "failed").then_some(v)
    })
    .await;
    assert_eq!(v["status"], "running", "{v}");
    v
}

/// Whether anything is mounted at `path` on the host.
fn host_mount(path: &Path) -> bool {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let path = path.to_string_lossy();
    table
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(path.as_ref()))
}

/// Checks a refused create names `field`.
async fn refused(env: &Apps, app_id: &str, body: Value, field: &str) {
    let r = env
        .client()
        .post(&format!("/apps/{app_id}/volumes"), body.clone())
        .await;
    assert_eq!(r.status, 400, "{body}: {}", r.text());
    assert!(
        r.text().contains(&format!("\"{field}\"")),
        "{body}: {}",
        r.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linux_apps_volume_keeps_its_data_and_its_size() {
    let mut env = Apps::start(Backend::Sqlite).await;
    let c = env.client();
    let data_dir = env.server.data_dir.path().to_owned();
    let image = push(&env, "keeper", "v1", &[]).await;
    let app = env.deployed("Keeper", &image).await;
    let app_id = id(&app);
    let edge = Edge::new(&env.server, &slug(&app));

    // Bad input names its field.
    let ok = |k: &str, v: Value| {
        let mut b = json!({ "name": "data", "sizeGb": 1, "mountPath": "/data" });
        b[k] = v;
        b
    };
    refused(&env, &app_id, ok("sizeGb", json!(0)), "sizeGb").await;
    refused(&env, &app_id, ok("sizeGb", json!(1001)), "sizeGb").await;
    refused(&env, &app_id, ok("sizeGb", json!(1.5)), "sizeGb").await;
    refused(&env, &app_id, ok("mountPath", json!("data")), "mountPath").await;
    refused(
        &env,
        &app_id,
        ok("mountPath", json!("/data/../etc")),
        "mountPath",
    )
    .await;
    refused(
        &env,
        &app_id,
        ok("mountPath", json!("/proc/x")),
        "mountPath",
    )
    .await;
    refused(&env, &app_id, ok("name", json!("Data!")), "name").await;

    let vol = running_volume(&env, &app_id, ok("mountPath", json!("/data"))).await;
    let vol_id = id(&vol);
    assert_eq!(
        (vol["sizeGb"].as_i64(), vol["mountPath"].as_str()),
        (Some(1), Some("/data"))
    );
    refused(&env, &app_id, ok("name", json!("other")), "mountPath").await;
    refused(
        &env,
        &app_id,
        json!({ "name": "inner", "sizeGb": 1, "mountPath": "/data/inner" }),
        "mountPath",
    )
    .await;

    // The image lives under the data directory, the host's root's alone:
    // the app's ids own the filesystem's root, not its image.
    let dir = data_dir.join("apps/volumes").join(&vol_id);
    let image_meta = std::fs::metadata(dir.join("image.ext4")).unwrap();
    use std::os::unix::fs::MetadataExt as _;
    assert_eq!(image_meta.uid(), 0);
    assert_eq!(image_meta.mode() & 0o022, 0, "{:o}", image_meta.mode());
    assert!(host_mount(&dir.join("mnt")));

    // The replica is relaunched with the volume and writes to it.
    let said = until_printed(
        &edge,
        "echo kept > /data/greeting && sync && cat /data/greeting && id -u",
        |s| s.starts_with("kept"),
    )
    .await;
    assert_eq!(said, "kept\n0");
    assert!(std::fs::metadata(dir.join("mnt")).unwrap().uid() >= 1 << 16);

    // A link the app leaves in its volume is the replica's business: the
    // host never follows it (backups copy the image, not files).
    run(&edge, "ln -s /etc/shadow /data/shadow; ln -s / /data/root").await;

    // A redeploy keeps it.
    let r = c
        .post(
            &format!("/apps/{app_id}/deployments"),
            json!({ "image": image }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let d = env.settled(&app_id, &id(&r.json())).await;
    assert_eq!(d["status"], "live", "{d}");
    assert_eq!(run(&edge, "cat /data/greeting").await, "kept");

    // So do a pause and a resume.
    let r = c.post(&format!("/apps/{app_id}/pause"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    until(&c, &format!("/apps/{app_id}"), "the pause", |a| {
        a["status"] == "paused"
    })
    .await;
    let r = c.post(&format!("/apps/{app_id}/resume"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    until_printed(&edge, "cat /data/greeting", |s| s == "kept").await;

    // A write past the size fails with ENOSPC inside the replica.
    let started = Instant::now();
    let said = run(
        &edge,
        "dd if=/dev/zero of=/data/fill bs=1M count=1100 conv=fsync 2>&1; echo rc=$?; df -k /data | tail -1",
    )
    .await;
    eprintln!(
        "volumes: filling a 1 GB volume took {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        said.replace('\n', " | ")
    );
    assert!(said.contains("No space left on device"), "{said}");
    assert!(!said.contains("rc=0"), "{said}");
    let in_replica = started.elapsed();
    assert_eq!(
        run(&edge, "rm /data/fill && cat /data/greeting").await,
        "kept"
    );
    let started = Instant::now();
    let host_fill = data_dir.join("host-fill");
    let out = std::process::Command::new("dd")
        .args(["if=/dev/zero", "bs=1M", "count=904", "conv=fsync"])
        .arg(format!("of={}", host_fill.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let on_host = started.elapsed();
    std::fs::remove_file(&host_fill).unwrap();
    eprintln!(
        "volumes: 904 MiB written and fsynced in a replica in {:.2} s (with the request), on the host's same disk in {:.2} s: {:.0}%",
        in_replica.as_secs_f64(),
        on_host.as_secs_f64(),
        100.0 * on_host.as_secs_f64() / in_replica.as_secs_f64()
    );

    // 256 MiB of data for the backup's and the restore's figures.
    run(
        &edge,
        "yes plateau-volume | head -c 268435456 > /data/big && sync",
    )
    .await;

    // A backup, listed with its size and time.
    let started = Instant::now();
    let r = c
        .post(
            &format!("/apps/{app_id}/volumes/{vol_id}/backups"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let backup = r.json();
    let backed_up = started.elapsed();
    let started = Instant::now();
    let copy = data_dir.join("plain-copy.img");
    // A durable copy, as a backup is: cp, then sync (fsync) the copy.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"cp --sparse=always "$1" "$2" && sync "$2""#)
        .arg("sh")
        .arg(dir.join("image.ext4"))
        .arg(&copy)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let copied = started.elapsed();
    std::fs::remove_file(&copy).unwrap();
    eprintln!(
        "volumes: a backup of {} bytes took {:.2} s, a plain durable cp of the image {:.2} s: {:.0}%",
        backup["sizeBytes"],
        backed_up.as_secs_f64(),
        copied.as_secs_f64(),
        100.0 * copied.as_secs_f64() / backed_up.as_secs_f64()
    );
    let backup_id = id(&backup);
    let list = c
        .get(&format!("/apps/{app_id}/volumes/{vol_id}/backups"))
        .await
        .json();
    let listed = &list["items"][0];
    assert_eq!(listed["id"], backup_id.as_str(), "{list}");
    assert!(listed["sizeBytes"].as_i64().unwrap() > 0, "{list}");
    assert!(
        listed["createdAt"].as_str().unwrap().ends_with('Z'),
        "{list}"
    );

    // What is written after the backup is not in its restore.
    run(&edge, "echo later > /data/later && sync").await;
    let started = Instant::now();
    let r = c
        .post(
            &format!("/apps/{app_id}/volumes/{vol_id}/backups/{backup_id}/restore"),
            json!({ "name": "restored", "mountPath": "/restored" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let restored = r.json();
    assert_ne!(restored["id"], vol_id.as_str());
    assert_eq!(restored["sourceBackupId"], backup_id.as_str());
    let restored_id = id(&restored);
    wait_running(&env, &app_id, &restored_id).await;
    eprintln!(
        "volumes: the restore ran in {:.2} s (from the request, polled), the plain durable cp {:.2} s: {:.0}%",
        started.elapsed().as_secs_f64(),
        copied.as_secs_f64(),
        100.0 * copied.as_secs_f64() / started.elapsed().as_secs_f64()
    );
    let said = until_printed(&edge, "cat /restored/greeting; ls /restored", |s| {
        s.starts_with("kept")
    })
    .await;
    assert!(!said.contains("later"), "{said}");
    assert_eq!(run(&edge, "cat /data/later").await, "later");

    // A restart of the API process keeps both.
    env.server.restart().await;
    let (c, edge) = (env.client(), Edge::new(&env.server, &slug(&app)));
    assert_eq!(
        until_printed(&edge, "cat /data/greeting /restored/greeting", |s| !s
            .is_empty())
        .await,
        "kept\nkept"
    );

    // Deleting an attached volume detaches it: the replica is relaunched
    // without it, then its image and mount go; its backups stay.
    let r = c
        .delete(&format!("/apps/{app_id}/volumes/{restored_id}"))
        .await;
    assert_eq!(r.status, 202, "{}", r.text());
    let volumes = format!("/apps/{app_id}/volumes");
    eventually("the delete", Duration::from_secs(60), || async {
        let page = c.get(&volumes).await.json();
        (page["items"].as_array()?.len() == 1).then_some(())
    })
    .await;
    until_printed(
        &edge,
        "grep -q ' /restored ' /proc/mounts && echo mounted; cat /data/greeting",
        |s| s == "kept",
    )
    .await;
    let gone = data_dir.join("apps/volumes").join(&restored_id);
    eventually(
        "the restored volume's files to go",
        Duration::from_secs(30),
        || async { (!gone.exists() && !host_mount(&gone.join("mnt"))).then_some(()) },
    )
    .await;
    let list = c
        .get(&format!("/apps/{app_id}/volumes/{vol_id}/backups"))
        .await
        .json();
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");

    a_link_at_the_mount_path_does_not_reach_the_host(&env).await;
}

/// An image whose mount paths are links out of its root (absolute and
/// relative): runc resolves mount destinations inside the container's
/// root, so the volumes are mounted in the replica and the host
/// directory the links name is left alone.
async fn a_link_at_the_mount_path_does_not_reach_the_host(env: &Apps) {
    let target = tempfile::tempdir().unwrap();
    let absolute = target.path().to_str().unwrap().to_owned();
    let relative = format!("../../../../../../../..{absolute}");
    let image = push(
        env,
        "linked",
        "v1",
        &[("vol", &absolute), ("www/vol2", &relative)],
    )
    .await;
    let app = env.deployed("Linked", &image).await;
    let app_id = id(&app);
    let edge = Edge::new(&env.server, &slug(&app));
    for (name, path) in [("one", "/vol"), ("two", "/www/vol2")] {
        running_volume(
            env,
            &app_id,
            json!({ "name": name, "sizeGb": 1, "mountPath": path }),
        )
        .await;
    }
    let said = until_printed(
        &edge,
        "echo in > /vol/x && echo in > /www/vol2/y && cat /vol/x /www/vol2/y && df -k /vol/ /www/vol2/ | grep -c ^/dev/loop",
        |s| s.starts_with("in"),
    )
    .await;
    assert_eq!(said, "in\nin\n2");
    assert!(
        !host_mount(target.path()),
        "a volume was mounted on the host's {absolute}"
    );
    let left: Vec<_> = std::fs::read_dir(target.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "the app wrote into the host's {absolute}: {left:?}"
    );
}
