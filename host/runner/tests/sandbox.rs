//! The container sandbox, attacked from inside: two apps' busybox
//! replicas run a shell command per request (a CGI script of busybox
//! httpd) and try to leave it: container root must be an unprivileged
//! host range of its own app, unshare and nsenter must be refused by the
//! seccomp filter, and neither a host listener on 0.0.0.0 nor the other
//! app's replica may be reached; beyond the host, a replica reaches only
//! what the egress guard allows. Needs root, runc and nft.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use plateau_runner::container::unpack;
use plateau_runner::container::{ContainerRunner, Egress, ImageConfig};
use plateau_runner::{Artifact, LaunchSpec, Limits, LogSink, Replicas, Runner, Stream};

const BUSYBOX: &str = "/bin/busybox";
/// Runs the request's decoded query string as a shell command.
const CGI: &str = "#!/bin/sh\necho 'Content-Type: text/plain'\necho\neval \"$(httpd -d \"$QUERY_STRING\")\" 2>&1\n";
/// The replica's own address and its host end's (`.2` and `.1`).
const ADDRESSES: &str = "a=$(ip -4 -o addr | sed -n 's/.* inet \\(10\\.231\\.[0-9.]*\\)\\/30.*/\\1/p'); h=${a%.*}.$((${a##*.}-1))";

struct Quiet;

/// Deletes the containers under `state` however the test ends.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let runc = |args: &[&str]| {
            std::process::Command::new("runc")
                .arg("--root")
                .arg(&self.0)
                .args(args)
                .output()
        };
        if let Ok(out) = runc(&["list", "--quiet"]) {
            for id in String::from_utf8_lossy(&out.stdout).lines() {
                let _ = runc(&["delete", "--force", id]);
            }
        }
    }
}

impl LogSink for Quiet {
    fn line(&self, _: Stream, _: String) {}
}

/// A rootfs of busybox, `/bin/sh` and the CGI script `/www/cgi-bin/run`.
fn rootfs(dir: &Path) -> PathBuf {
    let busybox = std::fs::read(BUSYBOX)
        .unwrap_or_else(|e| panic!("{BUSYBOX}: {e}; install the busybox-static package"));
    let mut b = tar::Builder::new(Vec::new());
    for (path, bytes) in [
        ("bin/busybox", &busybox[..]),
        ("www/cgi-bin/run", CGI.as_bytes()),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o755);
        h.set_size(bytes.len() as u64);
        b.append_data(&mut h, path, bytes).unwrap();
    }
    let mut l = tar::Header::new_gnu();
    l.set_entry_type(tar::EntryType::Symlink);
    l.set_size(0);
    b.append_link(&mut l, "bin/sh", "busybox").unwrap();
    let layer = b.into_inner().unwrap();
    let root = dir.join("image").join("rootfs");
    unpack::apply_layer(&layer[..], &root).unwrap();
    unpack::finish(&root).unwrap();
    root
}

fn spec(app: &str, rootfs: &Path) -> LaunchSpec {
    let config = ImageConfig::parse(
        br#"{"architecture":"amd64","os":"linux","config":{"Cmd":["/bin/sh","-c","exec httpd -f -p $PORT -h /www"]}}"#,
    )
    .unwrap();
    LaunchSpec {
        app_id: app.into(),
        deployment_id: format!("dpl_{app}"),
        artifact: Artifact::Container {
            digest: "sha256:test".into(),
            rootfs: rootfs.to_owned(),
            config,
        },
        env: vec![],
        limits: Limits {
            memory_mb: 64,
            milli_cpu: 500,
            replicas: 1,
        },
        logs: Arc::new(Quiet),
    }
}

/// Runs `command` in the replica; what it printed.
async fn run(replica: &dyn Replicas, command: &str) -> String {
    let query: String = command
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let request = http::Request::get(format!("/cgi-bin/run?{query}"))
        .header("host", "x.apps.localhost")
        .body(Empty::<Bytes>::new().map_err(|n| match n {}).boxed_unsync())
        .unwrap();
    let r = replica.handle(request).await.unwrap();
    assert_eq!(r.status(), 200);
    let body = r.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&body).trim().to_owned()
}

/// A listener on every address of the host: its port, how many
/// connections it accepted, and its task.
async fn host_listener() -> (u16, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    let accepting = tokio::spawn(async move {
        while listener.accept().await.is_ok() {
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    (port, accepted, accepting)
}

/// The host id container root maps to, from `/proc/self/uid_map`.
async fn root_maps_to(replica: &dyn Replicas) -> u64 {
    let map = run(replica, "cat /proc/self/uid_map").await;
    let fields: Vec<&str> = map.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "one mapping: {map}");
    assert_eq!(fields[0], "0", "{map}");
    assert_eq!(fields[2], "65536", "a range, not every id: {map}");
    fields[1].parse().unwrap()
}

#[tokio::test]
async fn a_container_cannot_leave_its_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let runner = ContainerRunner::new(dir.path().join("containers"), Egress::default())
        .expect("the container runtime starts (run as root with runc and nftables installed)");
    let _cleanup = Cleanup(dir.path().join("containers/state"));
    let rootfs = rootfs(dir.path());
    let one = runner
        .launch(spec("app_sandbox_one", &rootfs))
        .await
        .unwrap();
    let two = runner
        .launch(spec("app_sandbox_two", &rootfs))
        .await
        .unwrap();

    // Container root is an unprivileged host range, a different one per app.
    let (a, b) = (root_maps_to(&*one).await, root_maps_to(&*two).await);
    assert!(a >= 1 << 16 && b >= 1 << 16, "{a} {b}");
    assert!(a.abs_diff(b) >= 1 << 16, "the ranges overlap: {a} {b}");
    assert_eq!(run(&*one, "id -u").await, "0");

    // The seccomp filter refuses namespaces and keeps the process filtered.
    let said = run(&*one, "unshare -U true && echo escaped; unshare -n true && echo escaped; nsenter -t 1 -U true && echo escaped; grep Seccomp: /proc/self/status").await;
    assert!(!said.contains("escaped"), "{said}");
    assert!(said.contains("Operation not permitted"), "{said}");
    assert!(said.contains("Seccomp:\t2"), "{said}");

    // A host listener on every address is out of reach of the replicas.
    let (port, accepted, accepting) = host_listener().await;
    let said = run(
        &*one,
        &format!("{ADDRESSES}; echo host $h; nc -w 3 $h {port} </dev/null && echo reached"),
    )
    .await;
    assert!(said.starts_with("host 10.231."), "{said}");
    assert!(!said.contains("reached"), "{said}");
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "{said}");
    accepting.abort();

    // Nor is the other app's replica.
    let other = run(&*two, &format!("{ADDRESSES}; echo $a")).await;
    assert!(other.starts_with("10.231."), "{other}");
    let said = run(
        &*one,
        &format!("nc -w 3 {other} 8080 </dev/null && echo reached; wget -T 3 -q -O- http://{other}:8080/ && echo reached"),
    )
    .await;
    assert!(!said.contains("reached"), "{said}");
    // ...which still answers the host.
    assert!(run(&*two, "echo alive").await.contains("alive"));

    one.stop();
    two.stop();
}

/// A network namespace standing for the outside world: joined to the host
/// by a veth pair on 172.31.250.0/30 (the host end `.1`), serving a page
/// on `.2:8080` with busybox httpd. Deleted on drop.
struct Outside {
    ns: String,
    server: std::process::Child,
    _www: tempfile::TempDir,
}

impl Outside {
    const ADDRESS: &str = "172.31.250.2";
    const HOST: &str = "172.31.250.1";

    fn start() -> Outside {
        let n = std::process::id() % 100_000;
        let ns = format!("egt{n}");
        let (host, inner) = (format!("egt{n}a"), format!("egt{n}b"));
        let ip = |args: &[&str]| {
            let out = std::process::Command::new("ip")
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let _ = std::process::Command::new("ip")
            .args(["netns", "delete", &ns])
            .output();
        ip(&["netns", "add", &ns]);
        ip(&["link", "add", &host, "type", "veth", "peer", "name", &inner]);
        ip(&["link", "set", &inner, "netns", &ns]);
        ip(&["addr", "add", &format!("{}/30", Self::HOST), "dev", &host]);
        ip(&["link", "set", &host, "up"]);
        ip(&[
            "-n",
            &ns,
            "addr",
            "add",
            &format!("{}/30", Self::ADDRESS),
            "dev",
            &inner,
        ]);
        ip(&["-n", &ns, "link", "set", &inner, "up"]);
        let www = tempfile::tempdir().unwrap();
        std::fs::write(www.path().join("index.html"), "outside says hello\n").unwrap();
        let server = std::process::Command::new("ip")
            .args([
                "netns", "exec", &ns, BUSYBOX, "httpd", "-f", "-p", "8080", "-h",
            ])
            .arg(www.path())
            .spawn()
            .unwrap();
        Outside {
            ns,
            server,
            _www: www,
        }
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        // Deleting the namespace deletes both ends of the pair.
        let _ = std::process::Command::new("ip")
            .args(["netns", "delete", &self.ns])
            .output();
    }
}

#[tokio::test]
async fn replicas_reach_out_only_where_the_egress_guard_allows() {
    let _outside = Outside::start();
    let dir = tempfile::tempdir().unwrap();
    let rootfs = rootfs(dir.path());
    let allowed = Egress {
        allow: plateau_egress::parse_allow_list("172.31.250.0/30").unwrap(),
        nameservers: vec!["192.0.2.53".parse().unwrap()],
    };
    let open = ContainerRunner::new(dir.path().join("open"), allowed).unwrap();
    let _cleanup_open = Cleanup(dir.path().join("open/state"));
    let closed = ContainerRunner::new(dir.path().join("closed"), Egress::default()).unwrap();
    let _cleanup_closed = Cleanup(dir.path().join("closed/state"));
    let one = open.launch(spec("app_egress_one", &rootfs)).await.unwrap();
    let two = closed
        .launch(spec("app_egress_two", &rootfs))
        .await
        .unwrap();
    let fetch = format!(
        "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 {} 8080 | tail -n 1; echo done",
        Outside::ADDRESS
    );

    // The operator exempted the outside's range for one server: its
    // replica gets there, masqueraded behind the host.
    assert_eq!(run(&*one, &fetch).await, "outside says hello\ndone");
    // A server without the exemption refuses that private range, as the
    // plugins' egress does.
    let said = run(&*two, &fetch).await;
    assert!(said.ends_with("done") && !said.contains("hello"), "{said}");
    // The cloud metadata address is refused whoever asks.
    let said = run(
        &*one,
        "nc -w 2 169.254.169.254 80 </dev/null && echo reached",
    )
    .await;
    assert!(!said.contains("reached"), "{said}");

    // The exemption never opens the host itself: a listener on every
    // address of the host is out of reach at the host's address in the
    // exempted range.
    let (port, accepted, accepting) = host_listener().await;
    let said = run(
        &*one,
        &format!(
            "nc -w 2 {} {port} </dev/null && echo reached",
            Outside::HOST
        ),
    )
    .await;
    assert!(!said.contains("reached"), "{said}");
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
    accepting.abort();

    // Names resolve through the host's resolvers.
    assert_eq!(
        run(&*one, "grep nameserver /etc/resolv.conf").await,
        "nameserver 192.0.2.53"
    );

    one.stop();
    two.stop();
}
