//! The configuration files of a cluster's processes, written afresh before
//! every start from the cluster's settings: `redis.conf` and `users.acl`
//! of a data node, `sentinel.conf` of a sentinel.
//!
//! The customer's read-only user may only read. The customer's user may
//! run everything but administration: CONFIG,
//! DEBUG, SHUTDOWN, MODULE, ACL, MONITOR, replication and persistence
//! commands are denied. Settings change through the API, snapshots through
//! the snapshot endpoints.

use std::fmt::Write as _;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::spec::{ADMIN_USER, ClusterSpec, Credentials, Persistence, READER, USER};

use super::tls::{CA_FILE, CERT_FILE, KEY_FILE};

/// What the customer's user may do on a data node.
const USER_RULES: &str = "~* &* +@all -@admin +role -debug -module -config -shutdown \
    -monitor -acl +acl|whoami -migrate -client|kill -client|pause -client|unpause \
    -client|no-evict";

/// What the customer's read-only user may do on a data node: read keys,
/// subscribe, and what a client needs to connect and find the leader.
const READER_RULES: &str = "~* &* -@all +@read +@connection -@admin -@dangerous +role \
    +subscribe +psubscribe +ssubscribe +unsubscribe +punsubscribe +sunsubscribe";

/// What the customer's users may do on a sentinel: find the leader and the
/// replicas, and follow switch-overs.
const SENTINEL_USER_RULES: &str = "&* +ping +auth +hello +role +info +client|setname \
    +client|getname +sentinel|get-master-addr-by-name +sentinel|masters \
    +sentinel|master +sentinel|replicas +sentinel|slaves +sentinel|sentinels +subscribe \
    +psubscribe +unsubscribe +punsubscribe";

/// Sentinel timing: a leader silent this long is down, and the sentinels
/// promote a replica. Sentinels ping every second; at 1 s a leader that
/// stalled once (a fork for a replica's sync on a busy host) was deposed
/// while alive, and that false failover is what loses writes a `WAIT 1`
/// confirmed (the deposed leader keeps one replica until the sentinels
/// move it), so three pings' worth.
pub const DOWN_AFTER_MS: u64 = 3000;
/// How long a failover may take before another sentinel tries again (and
/// twice this before the same sentinel retries); it also bounds the time
/// replicas have to follow a new leader.
const FAILOVER_TIMEOUT_MS: u64 = 5000;

/// A leader of a cluster with replicas takes writes only while at least
/// one replica acknowledged its stream within this many seconds
/// (`min-replicas-to-write 1`, `min-replicas-max-lag`). Replicas
/// acknowledge every second, so a leader cut off from every replica (or
/// deposed, its replicas gone to the new leader) refuses writes with
/// NOREPLICAS at most `MIN_REPLICAS_MAX_LAG_S + 1` seconds after it lost
/// them, at once when they disconnect: that bounds what a failover can
/// discard to the writes acknowledged in that window. A write that
/// `WAIT <replicas>` confirmed is on every replica, so on whichever the
/// sentinels promote.
pub const MIN_REPLICAS_MAX_LAG_S: u64 = 2;

/// Where one process keeps its files.
pub struct Files<'a> {
    /// The process's own directory.
    pub dir: &'a Path,
    /// The cluster's `tls` directory.
    pub tls: &'a Path,
}

pub fn hash(password: &str) -> String {
    hex::encode(Sha256::digest(password.as_bytes()))
}

fn common(out: &mut String, files: &Files<'_>, address: &str, port: u16, tls: bool, pid: &str) {
    let dir = files.dir.display();
    let _ = writeln!(out, "bind {address}");
    let _ = writeln!(out, "protected-mode no");
    if tls {
        let _ = writeln!(out, "port 0\ntls-port {port}");
        let t = files.tls.display();
        let _ = writeln!(out, "tls-cert-file {t}/{CERT_FILE}");
        let _ = writeln!(out, "tls-key-file {t}/{KEY_FILE}");
        let _ = writeln!(out, "tls-ca-cert-file {t}/{CA_FILE}");
        let _ = writeln!(out, "tls-auth-clients no\ntls-replication yes");
    } else {
        let _ = writeln!(out, "port {port}");
    }
    let _ = writeln!(out, "daemonize yes");
    let _ = writeln!(out, "pidfile {dir}/{pid}");
    let _ = writeln!(out, "logfile {dir}/{LOG_FILE}");
    let _ = writeln!(out, "dir {dir}");
}

pub const LOG_FILE: &str = "redis.log";
pub const PID_FILE: &str = "redis.pid";
pub const CONF_FILE: &str = "redis.conf";
pub const ACL_FILE: &str = "users.acl";
pub const RDB_FILE: &str = "dump.rdb";

/// `redis.conf` of a data node; `leader` is the node it replicates, if any.
pub fn data_node(
    files: &Files<'_>,
    spec: &ClusterSpec,
    address: &str,
    port: u16,
    leader: Option<(&str, u16)>,
    credentials: &Credentials,
    load_seed: bool,
) -> String {
    let mut out = String::new();
    common(&mut out, files, address, port, spec.tls, PID_FILE);
    let _ = writeln!(out, "aclfile {}/{ACL_FILE}", files.dir.display());
    let _ = writeln!(out, "dbfilename {RDB_FILE}");
    let _ = writeln!(out, "maxmemory {}mb", spec.memory_mb);
    let _ = writeln!(out, "maxmemory-policy {}", spec.eviction_policy.as_str());
    // A restored leader loads its seed RDB first; AOF is switched on after.
    let persistence = if load_seed {
        Persistence::None
    } else {
        spec.persistence
    };
    out.push_str(persistence_lines(persistence));
    let _ = writeln!(out, "appenddirname appendonly");
    let _ = writeln!(out, "masteruser {ADMIN_USER}");
    let _ = writeln!(out, "masterauth {}", credentials.admin_password);
    let _ = writeln!(out, "repl-diskless-sync yes\nrepl-diskless-sync-delay 0");
    let _ = writeln!(out, "replica-read-only yes");
    out.push_str(&min_replicas_lines(spec.replicas));
    if let Some((host, port)) = leader {
        let _ = writeln!(out, "replicaof {host} {port}");
    }
    out
}

/// The `min-replicas-*` settings of every node of a cluster with
/// `replicas` replicas (a replica applies them once promoted).
pub fn min_replicas(replicas: u32) -> [(&'static str, String); 2] {
    let to_write = u32::from(replicas > 0);
    [
        ("min-replicas-to-write", to_write.to_string()),
        ("min-replicas-max-lag", MIN_REPLICAS_MAX_LAG_S.to_string()),
    ]
}

fn min_replicas_lines(replicas: u32) -> String {
    min_replicas(replicas)
        .iter()
        .map(|(k, v)| format!("{k} {v}\n"))
        .collect()
}

/// The `save`/`appendonly` lines of a persistence mode.
pub fn persistence_lines(persistence: Persistence) -> &'static str {
    match persistence {
        Persistence::None => "save \"\"\nappendonly no\n",
        Persistence::Rdb => "save 3600 1 300 100 60 10000\nappendonly no\n",
        Persistence::Aof => "save \"\"\nappendonly yes\nappendfsync everysec\n",
    }
}

/// The arguments of `ACL SETUSER` that make the read-only user as
/// `users.acl` (a data node) or `sentinel.conf` describe it, with the
/// password whose SHA-256 is `hash`.
pub fn reader_setuser(data_node: bool, hash: &str) -> Vec<String> {
    let rules = if data_node {
        READER_RULES
    } else {
        SENTINEL_USER_RULES
    };
    ["SETUSER", READER, "reset", "on", &format!("#{hash}")]
        .into_iter()
        .map(str::to_owned)
        .chain(rules.split_whitespace().map(str::to_owned))
        .collect()
}

/// `users.acl` of a data node.
pub fn data_acl(credentials: &Credentials) -> String {
    format!(
        "user default off\nuser {ADMIN_USER} on #{} ~* &* +@all\nuser {USER} on #{} {USER_RULES}\n\
         user {READER} on #{} {READER_RULES}\n",
        hash(&credentials.admin_password),
        hash(&credentials.password),
        hash(&credentials.reader_password()),
    )
}

/// `sentinel.conf`, monitoring the leader at `leader`.
pub fn sentinel(
    files: &Files<'_>,
    spec: &ClusterSpec,
    address: &str,
    port: u16,
    master_name: &str,
    leader: (&str, u16),
    credentials: &Credentials,
) -> String {
    let mut out = String::new();
    common(&mut out, files, address, port, spec.tls, PID_FILE);
    let m = master_name;
    let admin = &credentials.admin_password;
    let _ = writeln!(out, "sentinel resolve-hostnames no");
    let _ = writeln!(out, "sentinel monitor {m} {} {} 2", leader.0, leader.1);
    let _ = writeln!(out, "sentinel auth-user {m} {ADMIN_USER}");
    let _ = writeln!(out, "sentinel auth-pass {m} {admin}");
    let _ = writeln!(out, "sentinel down-after-milliseconds {m} {DOWN_AFTER_MS}");
    let _ = writeln!(out, "sentinel failover-timeout {m} {FAILOVER_TIMEOUT_MS}");
    let _ = writeln!(out, "sentinel parallel-syncs {m} 1");
    let _ = writeln!(out, "sentinel sentinel-user {ADMIN_USER}");
    let _ = writeln!(out, "sentinel sentinel-pass {admin}");
    let _ = writeln!(out, "user default off");
    let _ = writeln!(out, "user {ADMIN_USER} on #{} ~* &* +@all", hash(admin));
    let _ = writeln!(
        out,
        "user {USER} on #{} {SENTINEL_USER_RULES}",
        hash(&credentials.password)
    );
    let _ = writeln!(
        out,
        "user {READER} on #{} {SENTINEL_USER_RULES}",
        hash(&credentials.reader_password())
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::EvictionPolicy;

    #[test]
    fn a_replica_follows_its_leader_over_tls_with_the_host_user() {
        let spec = ClusterSpec {
            id: "cch_1".into(),
            memory_mb: 64,
            eviction_policy: EvictionPolicy::AllkeysLru,
            replicas: 1,
            persistence: Persistence::Rdb,
            tls: true,
        };
        let credentials = Credentials {
            password: "p".into(),
            admin_password: "a".into(),
        };
        let files = Files {
            dir: Path::new("/d/node1"),
            tls: Path::new("/d/tls"),
        };
        let conf = data_node(
            &files,
            &spec,
            "127.0.0.1",
            7001,
            Some(("127.0.0.1", 7000)),
            &credentials,
            false,
        );
        for line in [
            "port 0",
            "tls-port 7001",
            "tls-replication yes",
            "maxmemory 64mb",
            "maxmemory-policy allkeys-lru",
            "replicaof 127.0.0.1 7000",
            "masteruser plateau-admin",
            "save 3600 1 300 100 60 10000",
            "min-replicas-to-write 1",
            "min-replicas-max-lag 2",
        ] {
            assert!(conf.lines().any(|l| l == line), "{line} in {conf}");
        }
        // Alone, a leader has no replica to wait for.
        let alone = ClusterSpec {
            replicas: 0,
            ..spec.clone()
        };
        let conf = data_node(&files, &alone, "127.0.0.1", 7000, None, &credentials, false);
        assert!(
            conf.lines().any(|l| l == "min-replicas-to-write 0"),
            "{conf}"
        );
        let acl = data_acl(&credentials);
        assert!(acl.contains("user default off"));
        assert!(!acl.contains(" >"), "passwords are hashed: {acl}");
        assert!(acl.contains("-config -shutdown"));
        let reader = acl
            .lines()
            .find(|l| l.starts_with("user app-readonly on #"));
        let reader = reader.expect("a read-only user");
        assert!(reader.contains(&hash(&credentials.reader_password())));
        assert!(reader.contains(" -@all +@read "), "{reader}");
        let setuser = reader_setuser(true, "h");
        assert_eq!(
            setuser[..5],
            ["SETUSER", "app-readonly", "reset", "on", "#h"]
        );
        assert!(reader.ends_with(&setuser[5..].join(" ")), "{reader}");
    }
}
