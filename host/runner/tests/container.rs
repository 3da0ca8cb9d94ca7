//! The container runtime through the `Runner` trait: a busybox rootfs
//! (Debian's busybox-static) run by runc, requests answered from the
//! replica's own network namespace with the app's env, logs captured,
//! scaled, and nothing left after `stop`. Needs root and runc.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use plateau_runner::container::unpack;
use plateau_runner::container::{ContainerRunner, Egress, ImageConfig};
use plateau_runner::{Artifact, Body, LaunchSpec, Limits, LogSink, Replicas, Runner, Stream};

const BUSYBOX: &str = "/bin/busybox";
/// What the replica serves: the env, its port, a read-only root, no new
/// privileges, no effective capabilities.
const WANT: &str = "hello from busybox on 8080 ro CapEff: 0000000000000000 NoNewPrivs: 1 \n";

#[derive(Default)]
struct Lines(Mutex<Vec<(Stream, String)>>);

impl LogSink for Lines {
    fn line(&self, stream: Stream, line: String) {
        self.0.lock().unwrap().push((stream, line));
    }
}

/// A rootfs of busybox and `/bin/sh`, made as a layer and unpacked.
fn rootfs(dir: &Path) -> PathBuf {
    let busybox = std::fs::read(BUSYBOX)
        .unwrap_or_else(|e| panic!("{BUSYBOX}: {e}; install the busybox-static package"));
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_mode(0o755);
    h.set_size(busybox.len() as u64);
    b.append_data(&mut h, "bin/busybox", &busybox[..]).unwrap();
    let mut l = tar::Header::new_gnu();
    l.set_entry_type(tar::EntryType::Symlink);
    l.set_size(0);
    b.append_link(&mut l, "bin/sh", "busybox").unwrap();
    let layer = b.into_inner().unwrap();
    let root = dir.join("rootfs");
    unpack::apply_layer(&layer[..], &root).unwrap();
    unpack::finish(&root).unwrap();
    root
}

fn get(host: &str) -> http::Request<Body> {
    http::Request::get("/")
        .header("host", host)
        .body(Empty::<Bytes>::new().map_err(|n| match n {}).boxed_unsync())
        .unwrap()
}

async fn body(handle: &dyn Replicas) -> String {
    let r = handle.handle(get("x.apps.localhost")).await.unwrap();
    assert_eq!(r.status(), 200);
    String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

/// Deletes what a failed run left: the containers under `root` and the
/// namespaces made since `before`.
struct Cleanup {
    root: PathBuf,
    before: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let state = self.root.join("state");
        let out = std::process::Command::new("runc")
            .arg("--root")
            .arg(&state)
            .args(["list", "--quiet"])
            .output();
        for id in out
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
            .lines()
        {
            let _ = std::process::Command::new("runc")
                .arg("--root")
                .arg(&state)
                .args(["delete", "--force", id])
                .output();
        }
        for ns in namespaces()
            .into_iter()
            .filter(|n| !self.before.contains(n))
        {
            let _ = std::process::Command::new("ip")
                .args(["netns", "delete", &ns])
                .output();
        }
    }
}

/// A value of the container's cgroup (v1 hierarchies, as on this kernel).
fn cgroup(controller: &str, id: &str, file: &str) -> u64 {
    let path = format!("/sys/fs/cgroup/{controller}/plateau/{id}/{file}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.trim().parse().unwrap()
}

/// The network namespaces replicas use (`plateau-<n>`).
fn namespaces() -> Vec<String> {
    let out = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("plateau-"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_busybox_container_serves_and_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let runner = ContainerRunner::new(dir.path().join("containers"), Egress::default())
        .expect("the container runtime starts (run as root with runc installed)");
    let config = ImageConfig::parse(
        br#"{"architecture":"amd64","os":"linux","config":{"Cmd":["/bin/sh","-c","mkdir /tmp/www && (touch /bin/x 2>/dev/null && echo rw || echo ro) > /tmp/root && echo \"$GREETING on $PORT $(cat /tmp/root) $(grep -e CapEff -e NoNewPrivs /proc/self/status | tr '\\n\\t' '  ')\" > /tmp/www/index.html && echo started && exec httpd -f -v -p $PORT -h /tmp/www"]}}"#,
    )
    .unwrap();
    let lines = Arc::new(Lines::default());
    let spec = LaunchSpec {
        app_id: "app_test".into(),
        deployment_id: "dpl_runnertest1".into(),
        artifact: Artifact::Container {
            digest: "sha256:test".into(),
            rootfs: rootfs(dir.path()),
            config,
        },
        env: vec![("GREETING".into(), "hello from busybox".into())],
        limits: Limits {
            memory_mb: 64,
            milli_cpu: 250,
            replicas: 1,
        },
        logs: lines.clone(),
    };
    let before = namespaces();
    let _cleanup = Cleanup {
        root: dir.path().join("containers"),
        before: before.clone(),
    };
    let handle = runner.launch(spec).await.unwrap();
    assert_eq!(body(&*handle).await, WANT);
    assert_eq!(
        handle.env_value("GREETING").as_deref(),
        Some("hello from busybox")
    );
    assert_eq!(runner.containers().len(), 1);
    let id = &runner.containers()[0];
    assert_eq!(cgroup("memory", id, "memory.limit_in_bytes"), 64 << 20);
    assert_eq!(cgroup("cpu", id, "cpu.cfs_quota_us"), 25_000);
    let mine: Vec<String> = namespaces()
        .into_iter()
        .filter(|n| !before.contains(n))
        .collect();
    assert_eq!(mine.len(), 1, "one network namespace per replica: {mine:?}");

    handle.set_replicas(2);
    for _ in 0..400 {
        if runner.containers().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(runner.containers().len(), 2, "scaled to two containers");
    assert_eq!(body(&*handle).await, WANT);
    assert_eq!(body(&*handle).await, WANT);

    let seen = lines.0.lock().unwrap().clone();
    assert!(
        seen.contains(&(Stream::Stdout, "started".into())),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|(s, l)| *s == Stream::Stderr && l.contains("response:200")),
        "{seen:?}"
    );

    handle.stop();
    let ours = || -> Vec<String> {
        namespaces()
            .into_iter()
            .filter(|n| !before.contains(n))
            .collect()
    };
    for _ in 0..400 {
        if runner.containers().is_empty() && ours().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        runner.containers().is_empty(),
        "the containers are gone: {:?}",
        runner.containers()
    );
    assert!(
        ours().is_empty(),
        "the network namespaces are gone: {:?}",
        ours()
    );
    drop(handle);
}
