//! What a container runs ([`ImageConfig`], read from the image's OCI
//! config) and the OCI runtime `config.json` runc runs it from.
//!
//! **Invariant:** every replica gets a read-only rootfs with a writable
//! `/tmp`, its own namespaces (network: the one [`super::net`] made; user:
//! container ids 0..65536 mapped to the app's range of [`super::ids`]),
//! no capabilities, no new privileges, the seccomp profile [`SECCOMP`],
//! and the app's memory and CPU limits.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Error, Limits, Result};

/// The port a replica listens on (each has its own network namespace)
/// unless the app sets one; it is in the replica's `PORT`.
pub const PORT: u16 = 8080;
/// The CFS period the CPU quota is a share of, in microseconds.
const CPU_PERIOD: u64 = 100_000;
/// The size of the writable `/tmp`, in MiB.
const TMP_MB: u32 = 64;
/// Processes one replica may have.
const PIDS: u32 = 256;
/// The system calls a replica may make, as the OCI `linux.seccomp`:
/// containers-common's default allowlist for x86 without the
/// capability-gated calls (no replica has a capability), clone only
/// without namespace flags (clone3 answers ENOSYS so libc falls back to
/// it), personality only with its harmless values, and every other call
/// EPERM: no keyctl, add_key, bpf, io_uring, unshare, setns, mount,
/// ptrace, kexec, perf_event_open, userfaultfd or module loading.
pub const SECCOMP: &str = include_str!("seccomp.json");

/// The parts of an image's config a container starts from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageConfig {
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    /// `KEY=value` lines; the app's environment comes after them.
    pub env: Vec<String>,
    pub working_dir: String,
    /// `uid[:gid]`, numeric; names are not looked up.
    pub user: String,
    /// The port the replica listens on, given as `$PORT`: the app's
    /// `port` setting; none: [`PORT`].
    pub port: Option<u16>,
}

#[derive(Deserialize)]
struct Raw {
    architecture: Option<String>,
    os: Option<String>,
    config: Option<RawConfig>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct RawConfig {
    entrypoint: Option<Vec<String>>,
    cmd: Option<Vec<String>>,
    env: Option<Vec<String>>,
    working_dir: Option<String>,
    user: Option<String>,
}

impl ImageConfig {
    /// Reads an OCI image config blob; only linux/amd64 runs here.
    pub fn parse(bytes: &[u8]) -> Result<ImageConfig> {
        let raw: Raw = serde_json::from_slice(bytes)
            .map_err(|e| Error::NotRunnable(format!("the image config is not valid: {e}")))?;
        let platform = (
            raw.os.as_deref().unwrap_or(""),
            raw.architecture.as_deref().unwrap_or(""),
        );
        if platform != ("linux", "amd64") {
            return Err(Error::NotRunnable(format!(
                "the image is for {}/{}; build it for linux/amd64",
                platform.0, platform.1
            )));
        }
        let c = raw.config.unwrap_or_default();
        let config = ImageConfig {
            entrypoint: c.entrypoint.unwrap_or_default(),
            cmd: c.cmd.unwrap_or_default(),
            env: c.env.unwrap_or_default(),
            working_dir: c
                .working_dir
                .filter(|w| !w.is_empty())
                .unwrap_or("/".into()),
            user: c.user.unwrap_or_default(),
            port: None,
        };
        if config.args().is_empty() {
            return Err(Error::NotRunnable(
                "the image has neither Entrypoint nor Cmd; set what it runs".to_owned(),
            ));
        }
        config.ids()?;
        Ok(config)
    }

    /// The port the replica listens on.
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(PORT)
    }

    fn args(&self) -> Vec<String> {
        self.entrypoint.iter().chain(&self.cmd).cloned().collect()
    }

    /// The numeric user and group; root when the image names none.
    fn ids(&self) -> Result<(u32, u32)> {
        if self.user.is_empty() {
            return Ok((0, 0));
        }
        let (uid, gid) = self.user.split_once(':').unwrap_or((&self.user, "0"));
        match (uid.parse(), gid.parse()) {
            (Ok(uid), Ok(gid)) => Ok((uid, gid)),
            _ => Err(Error::NotRunnable(format!(
                "the image's User {:?} is not numeric; write uid[:gid]",
                self.user
            ))),
        }
    }
}

/// One replica's runtime config.
pub struct Runtime<'a> {
    pub image: &'a ImageConfig,
    /// The app's environment (after the image's).
    pub env: &'a [(String, String)],
    pub limits: Limits,
    pub rootfs: &'a str,
    pub netns: &'a str,
    pub hostname: &'a str,
    /// The cgroup path, `/plateau/<container>`.
    pub cgroup: &'a str,
    /// The first host uid of the app's range, container uid 0 (`ids::IdRange::base`).
    pub uid_base: u32,
    /// The host's file mounted read-only as `/etc/resolv.conf`.
    pub resolv_conf: &'a str,
}

impl Runtime<'_> {
    pub fn config_json(&self) -> Result<Vec<u8>> {
        let (uid, gid) = self.image.ids()?;
        let mut env: Vec<String> =
            vec!["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()];
        env.extend(self.image.env.iter().cloned());
        env.extend(self.env.iter().map(|(k, v)| format!("{k}={v}")));
        env.push(format!("PORT={}", self.image.port()));
        let memory = u64::from(self.limits.memory_mb.max(8)) << 20;
        let quota = (u64::from(self.limits.milli_cpu.max(10)) * CPU_PERIOD / 1000).max(1000);
        let namespaces = json!([
            { "type": "pid" }, { "type": "ipc" }, { "type": "uts" }, { "type": "mount" },
            { "type": "network", "path": self.netns }, { "type": "user" },
        ]);
        let ids = json!([{ "containerID": 0, "hostID": self.uid_base, "size": super::ids::SIZE }]);
        let seccomp: Value = serde_json::from_str(SECCOMP)
            .map_err(|e| Error::NotRunnable(format!("the seccomp profile: {e}")))?;
        let caps = json!({ "bounding": [], "effective": [], "permitted": [], "ambient": [] });
        let config = json!({
            "ociVersion": "1.0.2",
            "process": {
                "terminal": false,
                "user": { "uid": uid, "gid": gid },
                "args": self.image.args(),
                "env": env,
                "cwd": self.image.working_dir,
                "capabilities": caps,
                "rlimits": [{ "type": "RLIMIT_NOFILE", "hard": 4096, "soft": 4096 }],
                "noNewPrivileges": true,
            },
            "root": { "path": self.rootfs, "readonly": true },
            "hostname": self.hostname,
            "mounts": mounts(self.resolv_conf),
            "linux": {
                "cgroupsPath": self.cgroup,
                "resources": {
                    "devices": [{ "allow": false, "access": "rwm" }],
                    "memory": { "limit": memory, "swap": memory },
                    "cpu": { "quota": quota, "period": CPU_PERIOD },
                    "pids": { "limit": PIDS },
                },
                "namespaces": namespaces,
                "uidMappings": ids,
                "gidMappings": ids,
                "seccomp": seccomp,
                // runc's and Docker's, and the host's cgroups (/sys is the
                // host's, as sysfs cannot be mounted from a user namespace
                // that does not own the network namespace).
                "maskedPaths": [
                    "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                    "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                    "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
                    "/sys/devices/virtual/powercap", "/sys/fs/cgroup",
                ],
                "readonlyPaths": [
                    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
                ],
            },
        });
        serde_json::to_vec_pretty(&config).map_err(|e| Error::NotRunnable(e.to_string()))
    }
}

fn mounts(resolv_conf: &str) -> Value {
    json!([
        { "destination": "/etc/resolv.conf", "type": "bind", "source": resolv_conf,
          "options": ["rbind", "ro", "nosuid", "nodev", "noexec"] },
        { "destination": "/proc", "type": "proc", "source": "proc" },
        { "destination": "/dev", "type": "tmpfs", "source": "tmpfs",
          "options": ["nosuid", "strictatime", "mode=755", "size=65536k"] },
        { "destination": "/dev/pts", "type": "devpts", "source": "devpts",
          "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"] },
        { "destination": "/dev/shm", "type": "tmpfs", "source": "shm",
          "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"] },
        { "destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
          "options": ["nosuid", "noexec", "nodev"] },
        { "destination": "/sys", "type": "none", "source": "/sys",
          "options": ["rbind", "nosuid", "noexec", "nodev", "ro"] },
        { "destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
          "options": ["nosuid", "nodev", "mode=1777", format!("size={TMP_MB}m")] },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_image_config() {
        let c = ImageConfig::parse(
            br#"{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/bin/sh"],"Cmd":["-c","x"],"Env":["A=1"],"User":"1000:1000"}}"#,
        )
        .unwrap();
        assert_eq!(c.args(), ["/bin/sh", "-c", "x"]);
        assert_eq!(c.ids().unwrap(), (1000, 1000));
        assert_eq!(c.working_dir, "/");
        let arm =
            ImageConfig::parse(br#"{"architecture":"arm64","os":"linux","config":{"Cmd":["x"]}}"#);
        assert!(arm.unwrap_err().to_string().contains("linux/amd64"));
        let named = ImageConfig::parse(
            br#"{"architecture":"amd64","os":"linux","config":{"Cmd":["x"],"User":"www"}}"#,
        );
        assert!(named.unwrap_err().to_string().contains("numeric"));
    }

    #[test]
    fn runs_in_the_apps_user_namespace_under_the_filter() {
        let image =
            ImageConfig::parse(br#"{"architecture":"amd64","os":"linux","config":{"Cmd":["x"]}}"#)
                .unwrap();
        let limits = Limits {
            memory_mb: 64,
            milli_cpu: 100,
            replicas: 1,
        };
        let runtime = Runtime {
            image: &image,
            env: &[],
            limits,
            rootfs: "/r",
            netns: "/run/netns/n",
            hostname: "h",
            cgroup: "/plateau/h",
            uid_base: 1 << 30,
            resolv_conf: "/r/resolv.conf",
        };
        let config: Value = serde_json::from_slice(&runtime.config_json().unwrap()).unwrap();
        let linux = &config["linux"];
        assert!(
            linux["namespaces"]
                .as_array()
                .unwrap()
                .contains(&json!({ "type": "user" }))
        );
        let ids = json!([{ "containerID": 0, "hostID": 1 << 30, "size": 65536 }]);
        assert_eq!((&linux["uidMappings"], &linux["gidMappings"]), (&ids, &ids));
        let seccomp = &linux["seccomp"];
        assert_eq!(seccomp["defaultAction"], "SCMP_ACT_ERRNO");
        let allowed: Vec<&str> = seccomp["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["action"] == "SCMP_ACT_ALLOW" && r.get("args").is_none())
            .flat_map(|r| r["names"].as_array().unwrap())
            .map(|n| n.as_str().unwrap())
            .collect();
        assert!(allowed.contains(&"read") && allowed.contains(&"socket"));
        for denied in [
            "keyctl",
            "add_key",
            "bpf",
            "io_uring_setup",
            "unshare",
            "setns",
            "mount",
            "ptrace",
            "kexec_load",
            "clone",
            "clone3",
        ] {
            assert!(!allowed.contains(&denied), "{denied} is allowed");
        }
        assert_eq!(config["process"]["noNewPrivileges"], true);
        assert_eq!(config["process"]["capabilities"]["bounding"], json!([]));
    }
}
