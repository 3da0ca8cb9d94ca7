//! One replica: a runc container in its own network namespace, its
//! stdout and stderr cut into lines for the app's sink, and its teardown
//! (container, state, bundle, namespace, address), once.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::net::Net;
use super::spec::Runtime;
use super::{Paths, Template};
use crate::logs::{LineWriter, LogSink, Stream};
use crate::{Error, Result};

/// How long a replica may take to listen on `$PORT`.
const LISTEN_WITHIN: Duration = Duration::from_secs(30);

pub struct Replica {
    pub id: String,
    pub addr: SocketAddr,
    net: Net,
    paths: Arc<Paths>,
    down: AtomicBool,
}

impl Replica {
    /// Starts replica `id` of `template` and waits until it listens.
    pub async fn start(id: String, template: &Template, paths: Arc<Paths>) -> Result<Replica> {
        let shared = paths.clone();
        let net = tokio::task::spawn_blocking(move || Net::create(&shared.egress))
            .await
            .map_err(|e| Error::NotRunnable(e.to_string()))??;
        let replica = Replica {
            addr: SocketAddr::new(net.address().into(), template.image.port()),
            id,
            net,
            paths,
            down: AtomicBool::new(false),
        };
        match replica.run(template).await {
            Ok(()) => Ok(replica),
            Err(e) => {
                replica.teardown();
                Err(e)
            }
        }
    }

    async fn run(&self, template: &Template) -> Result<()> {
        let bundle = self.bundle();
        std::fs::create_dir_all(&bundle).map_err(|e| io("the bundle", e))?;
        // config.json holds the app's opened env: root's eyes only.
        std::fs::set_permissions(&bundle, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| io("the bundle", e))?;
        let config = Runtime {
            image: &template.image,
            env: &template.env,
            limits: template.limits,
            rootfs: path_str(&template.rootfs)?,
            netns: &self.net.namespace_path(),
            hostname: &self.id,
            cgroup: &format!("/plateau/{}", self.id),
            uid_base: template.uid_base,
            resolv_conf: path_str(&self.paths.resolv_conf)?,
            volumes: &template.volumes,
        }
        .config_json()?;
        std::fs::write(bundle.join("config.json"), config).map_err(|e| io("config.json", e))?;
        let mut child = Command::new("runc")
            .arg("--root")
            .arg(&self.paths.state)
            .arg("run")
            .arg("--bundle")
            .arg(&bundle)
            .arg(&self.id)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                Error::NotRunnable(format!("cannot run runc (install the runc package): {e}"))
            })?;
        let stdout = child
            .stdout
            .take()
            .map(|s| pump(s, &self.id, Stream::Stdout, template.logs.clone()));
        let stderr = child
            .stderr
            .take()
            .map(|s| pump(s, &self.id, Stream::Stderr, template.logs.clone()));
        let started = Instant::now();
        loop {
            if tokio::net::TcpStream::connect(self.addr).await.is_ok() {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                let mut said = String::new();
                if let Some(task) = stderr {
                    said = task.await.unwrap_or_default();
                }
                return Err(Error::Failed(format!(
                    "the container exited ({status}) before listening on $PORT {}: {said}",
                    self.addr.port()
                )));
            }
            if started.elapsed() > LISTEN_WITHIN {
                return Err(Error::Timeout(LISTEN_WITHIN.as_secs()));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        // runc exits with the container; the reaping task owns it now.
        tokio::spawn(async move {
            let _ = child.wait().await;
            if let Some(task) = stdout {
                let _ = task.await;
            }
        });
        Ok(())
    }

    /// What the replica's cgroup says it used.
    pub fn used(&self) -> super::cgroup::Used {
        super::cgroup::read(&self.id)
    }

    /// Bytes the replica sent beyond the host; blocking (runs nft).
    pub fn sent_bytes(&self) -> u64 {
        self.net.sent_bytes()
    }

    fn bundle(&self) -> PathBuf {
        self.paths.bundles.join(&self.id)
    }

    /// Kills the container and removes its state, bundle and network;
    /// blocking, and done once however often it is called.
    pub fn teardown(&self) {
        if self.down.swap(true, Ordering::AcqRel) {
            return;
        }
        let _ = std::process::Command::new("runc")
            .arg("--root")
            .arg(&self.paths.state)
            .args(["delete", "--force", &self.id])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(self.bundle());
        self.net.release();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Sends a stream's lines to the sink, named after `replica`; returns
/// the last 2 KiB it read (what a container said before it died).
fn pump(
    mut from: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    replica: &str,
    stream: Stream,
    sink: Arc<dyn LogSink>,
) -> tokio::task::JoinHandle<String> {
    let mut lines = LineWriter::new(Some(replica.to_owned()), stream);
    tokio::spawn(async move {
        let mut tail: Vec<u8> = Vec::new();
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = from.read(&mut buf).await {
            if n == 0 {
                break;
            }
            lines.write(&buf[..n], &*sink);
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > 2048 {
                tail.drain(..tail.len() - 2048);
            }
        }
        lines.finish(&*sink);
        String::from_utf8_lossy(&tail).trim().to_owned()
    })
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str()
        .ok_or_else(|| Error::NotRunnable(format!("{} is not UTF-8", path.display())))
}

fn io(what: &str, e: std::io::Error) -> Error {
    Error::NotRunnable(format!("cannot write {what} of the container: {e}"))
}
