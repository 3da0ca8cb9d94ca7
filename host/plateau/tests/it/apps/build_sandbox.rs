//! The sandbox of a build, attacked from a `Dockerfile`'s `RUN` step and
//! from a Rust crate's build script: each writes what it sees (its user
//! namespace's map, its capabilities, no_new_privs and seccomp, the
//! processes and network interfaces it sees, whether the API's port on
//! the host's loopback answers it) into the app it builds, and the test
//! reads it through the edge. A build as the host's root (or the
//! server's user), in the host's PID and network namespaces, could read
//! other tenants' containers' environments and reach every service on
//! loopback. Needs root, buildah, runc, busybox-static and, for the
//! crate, what `crates` needs.

use std::collections::HashMap;

use plateau_testkit::{Backend, ServerOptions};
use serde_json::json;

use super::builds::BUSYBOX;
use super::crates::{LIB, MANIFEST};
use super::uploads::{archive, upload_and_deploy};
use super::{Apps, Edge, id, slug};

/// The probe run by the `RUN` step: `key=value` lines into the page.
/// `API_PORT` is replaced by the API's port.
const PROBE: &str = r#"/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /www
{
  echo "uid=$(id -u)"
  echo "uid_map=$(cat /proc/self/uid_map | tr -s ' ' | sed 's/^ //')"
  for key in CapEff NoNewPrivs Seccomp; do
    echo "$key=$(sed -n "s/^$key:[[:space:]]*//p" /proc/self/status)"
  done
  echo "pid1=$(cat /proc/1/comm)"
  echo "pids=$(ls /proc | grep -c '^[0-9]')"
  echo "interfaces=$(sed '1,2d; s/:.*//; s/ //g' /proc/net/dev | sort | tr '\n' ' ' | sed 's/ $//')"
  if echo | nc -w 3 127.0.0.1 API_PORT >/dev/null 2>&1; then
    echo "api=reachable"
  else
    echo "api=unreachable"
  fi
} > /www/index.html 2>&1
cat /www/index.html
"#;

/// The capabilities a build step may hold within its user namespace:
/// CHOWN, DAC_OVERRIDE, FOWNER, FSETID, SETGID, SETUID, SETFCAP.
const ALLOWED_CAPS: u64 =
    (1 << 0) | (1 << 1) | (1 << 3) | (1 << 4) | (1 << 6) | (1 << 7) | (1 << 31);

fn probe_site(api_port: &str) -> Vec<u8> {
    let busybox = std::fs::read(BUSYBOX)
        .unwrap_or_else(|e| panic!("{BUSYBOX}: {e}; install the busybox-static package"));
    let dockerfile = "FROM scratch\n\
        COPY busybox /bin/busybox\n\
        COPY probe.sh /probe.sh\n\
        RUN [\"/bin/busybox\", \"sh\", \"/probe.sh\"]\n\
        CMD [\"/bin/sh\", \"-c\", \"exec httpd -f -v -p $PORT -h /www\"]\n";
    archive(&[
        ("Dockerfile", dockerfile.as_bytes().to_vec(), 0o644),
        ("busybox", busybox, 0o755),
        (
            "probe.sh",
            PROBE.replace("API_PORT", api_port).into_bytes(),
            0o644,
        ),
    ])
}

/// The crate's build script: the same lines, and whether the server's
/// data directory (`DATA_DIR`) is there.
const BUILD_RS: &str = r#"use std::fmt::Write as _;
fn main() {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let status = read("/proc/self/status");
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .unwrap_or("")
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_owned()
    };
    let pids = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
                .count()
        })
        .unwrap_or(0);
    let mut interfaces: Vec<String> = read("/proc/net/dev")
        .lines()
        .skip(2)
        .filter_map(|l| Some(l.split(':').next()?.trim().to_owned()))
        .collect();
    interfaces.sort();
    let api = std::net::TcpStream::connect_timeout(
        &"127.0.0.1:API_PORT".parse().unwrap(),
        std::time::Duration::from_secs(3),
    );
    let mut seen = String::new();
    writeln!(seen, "uid={}", field("Uid")).unwrap();
    writeln!(seen, "uid_map={}", read("/proc/self/uid_map").split_whitespace().collect::<Vec<_>>().join(" ")).unwrap();
    for key in ["CapEff", "NoNewPrivs", "Seccomp"] {
        writeln!(seen, "{key}={}", field(key)).unwrap();
    }
    writeln!(seen, "pid1={}", read("/proc/1/comm").trim()).unwrap();
    writeln!(seen, "pids={pids}").unwrap();
    writeln!(seen, "interfaces={}", interfaces.join(" ")).unwrap();
    writeln!(seen, "api={}", if api.is_ok() { "reachable" } else { "unreachable" }).unwrap();
    writeln!(seen, "data_dir={}", std::path::Path::new("DATA_DIR").exists()).unwrap();
    std::fs::write(std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("seen.txt"), seen).unwrap();
}
"#;

fn probe_crate(api_port: &str, data_dir: &str) -> Vec<u8> {
    let build = BUILD_RS
        .replace("API_PORT", api_port)
        .replace("DATA_DIR", data_dir);
    let lib = LIB.replace(
        "b\"hello from cargo\"",
        "include_str!(concat!(env!(\"OUT_DIR\"), \"/seen.txt\")).as_bytes()",
    );
    assert_ne!(lib, LIB, "the crate serves what its build script saw");
    archive(&[
        ("Cargo.toml", MANIFEST.as_bytes().to_vec(), 0o644),
        ("build.rs", build.into_bytes(), 0o644),
        ("src/lib.rs", lib.into_bytes(), 0o644),
    ])
}

/// Deploys `source` as a new app of `env`; the `key=value` lines its page
/// shows.
async fn seen_by(env: &Apps, source: Vec<u8>) -> String {
    let r = env
        .client()
        .post("/apps", json!({ "name": "Probe", "sourceType": "upload" }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let app = r.json();
    let d = upload_and_deploy(env, &id(&app), source).await;
    assert_eq!(d["status"], "live", "{d}");
    let (status, page) = Edge::new(&env.server, &slug(&app))
        .get("/")
        .await
        .expect("the edge answers");
    assert_eq!(status, 200, "{page}");
    page
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_steps_run_sandboxed() {
    let env = Apps::start_with(ServerOptions::new(Backend::Sqlite)).await;
    let api_port = env.server.url.rsplit(':').next().unwrap().to_owned();
    let page = seen_by(&env, probe_site(&api_port)).await;
    assert_sandboxed(&page, ALLOWED_CAPS);
    assert!(page.contains("pid1=busybox\n"), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crate_builds_run_sandboxed() {
    let env = Apps::start_with(
        ServerOptions::new(Backend::Sqlite).env("PLATEAU_APPS_CARGO_BUILDS", "true"),
    )
    .await;
    let api_port = env.server.url.rsplit(':').next().unwrap().to_owned();
    let data_dir = env.server.data_dir.path().to_str().unwrap().to_owned();
    let page = seen_by(&env, probe_crate(&api_port, &data_dir)).await;
    assert_sandboxed(&page, 0);
    assert!(page.contains("pid1=cargo\n"), "{page}");
    // Only the toolchain, the crate cache and the build's own directories
    // are mounted: not the server's data.
    assert!(page.contains("data_dir=false\n"), "{page}");
}

/// Asserts what a build saw (`key=value` lines) is the sandbox's, with
/// capabilities within `allowed_caps`.
fn assert_sandboxed(page: &str, allowed_caps: u64) {
    let seen: HashMap<&str, &str> = page.lines().filter_map(|l| l.split_once('=')).collect();
    let get = |key: &str| *seen.get(key).unwrap_or_else(|| panic!("{key} in {page}"));

    // Root in the step is not the host's root: its user namespace maps
    // uid 0 to an unprivileged host id, and no more than 65536 ids.
    assert_eq!(get("uid"), "0", "{page}");
    let map: Vec<u64> = get("uid_map")
        .split(' ')
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(map.len(), 3, "{page}");
    assert_eq!(map[0], 0, "{page}");
    assert!(map[1] >= 65_536, "root of the step is host uid {}", map[1]);
    assert!(map[2] <= 65_536, "the step maps {} ids", map[2]);

    // Only a package manager's capabilities (none of SYS_ADMIN,
    // DAC_READ_SEARCH, KILL, SYS_PTRACE, NET_*), no new privileges,
    // a seccomp filter.
    let caps = u64::from_str_radix(get("CapEff"), 16).unwrap();
    assert_eq!(
        caps & !allowed_caps,
        0,
        "capabilities beyond the allowed: {caps:x}"
    );
    assert_eq!(get("NoNewPrivs"), "1", "{page}");
    assert_eq!(get("Seccomp"), "2", "{page}");

    // Its own PID namespace: pid 1 is the build's own first process
    // (asserted by the caller) and none of the host's processes are there.
    let pids: u32 = get("pids").parse().unwrap();
    assert!(pids <= 16, "the step sees {pids} processes: {page}");

    // Its own network namespace, with loopback only: the API on the
    // host's loopback does not answer.
    assert_eq!(get("interfaces"), "lo", "{page}");
    assert_eq!(get("api"), "unreachable", "{page}");
}
