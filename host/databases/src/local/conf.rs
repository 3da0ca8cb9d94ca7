//! The files of a local cluster: the leader's `plateau.conf` (settings
//! from the spec) and `pg_hba.conf`, pgbouncer's `pgbouncer.ini` and
//! `userlist.txt`, and the write endpoint's `haproxy.cfg`.

use std::path::Path;

use crate::spec::{ADMIN_ROLE, ClusterSpec};

pub const PG_CONF: &str = "plateau.conf";
pub const LOG_FILE: &str = "postgres.log";
pub const POOLER_CONF: &str = "pgbouncer.ini";
pub const POOLER_USERS: &str = "userlist.txt";
pub const POOLER_PID: &str = "pgbouncer.pid";
pub const POOLER_LOG: &str = "pgbouncer.log";
pub const ROUTER_CONF: &str = "haproxy.cfg";
pub const ROUTER_PID: &str = "haproxy.pid";
/// The pooler's secret for the salts of [`auth_query`]'s answers about
/// roles that do not exist.
pub const POOLER_KEY: &str = "auth.key";

/// The leader's settings, included from `postgresql.conf`.
pub fn postgres(spec: &ClusterSpec, address: &str, port: u16) -> String {
    let memory = spec.memory_mb.max(64);
    let cpus = spec.cpus.max(1);
    format!(
        "# Written by Plateau from the database's settings; changes are overwritten.\n\
         listen_addresses = '{address}'\n\
         port = {port}\n\
         unix_socket_directories = ''\n\
         max_connections = {max_connections}\n\
         shared_buffers = {shared_buffers}MB\n\
         effective_cache_size = {cache}MB\n\
         work_mem = {work_mem}MB\n\
         maintenance_work_mem = {maintenance}MB\n\
         max_worker_processes = {workers}\n\
         max_parallel_workers = {cpus}\n\
         max_parallel_workers_per_gather = {per_gather}\n\
         password_encryption = 'scram-sha-256'\n\
         wal_level = logical\n\
         max_wal_senders = 10\n\
         # A subscription's apply worker that lost its source (a failover\n\
         # there) is started again after this (5 s by default).\n\
         wal_retrieve_retry_interval = 1s\n\
         wal_keep_size = 64MB\n\
         shared_preload_libraries = 'pg_stat_statements'\n\
         log_line_prefix = '%m [%p] %q%u@%d '\n\
         log_min_duration_statement = 1000\n\
         # TLS (the cluster's certificate, when the data directory has it).\n\
         include_if_exists = '{tls}'\n\
         {archiving}",
        tls = super::tls::SETTINGS,
        max_connections = spec.max_connections(),
        shared_buffers = spec.shared_buffers_mb(),
        cache = memory * 3 / 4,
        work_mem = (memory / 64).max(1),
        maintenance = (memory / 16).max(16),
        workers = cpus + 8,
        per_gather = (cpus / 2).max(1),
        archiving = archiving(spec),
    )
}

/// The name of the pooler's database that reaches a replica (`readUri`).
pub fn read_database(database: &str) -> String {
    format!("{database}_ro")
}

/// Whether PostgreSQL `version` has failover slots (17): logical slots
/// made with `failover = true` are synchronized to the standbys.
pub fn failover_slots(version: &str) -> bool {
    version.parse::<u32>().is_ok_and(|v| v >= 17)
}

/// What a leader adds to [`postgres`]: synchronous commit to any one of
/// its standbys, so an acknowledged commit is on two servers. With no
/// standby, commits are local (a lone survivor keeps taking writes). On
/// 17, logical walsenders also wait until every live standby has
/// received a change before sending it to a subscriber
/// (`synchronized_standby_slots`, their physical slots are named after
/// them), so whichever standby is promoted has all a subscriber got.
pub fn leader(version: &str, standbys: &[String]) -> String {
    if standbys.is_empty() {
        return "synchronous_standby_names = ''\n".to_owned();
    }
    let names: Vec<String> = standbys.iter().map(|n| format!("\"{n}\"")).collect();
    let mut text = format!(
        "synchronous_standby_names = 'ANY 1 ({})'\n",
        names.join(", ")
    );
    if failover_slots(version) {
        text += &format!("synchronized_standby_slots = '{}'\n", standbys.join(", "));
    }
    text
}

/// What a standby adds to [`postgres`]: whom it streams from, through its
/// own replication slot on the leader. On 17 it also keeps a copy of the
/// leader's failover slots (`sync_replication_slots`, whose worker needs
/// a database in `primary_conninfo`), so a subscription of the cluster
/// finds its slot on the standby promoted by a failover.
pub fn standby(
    version: &str,
    name: &str,
    address: &str,
    leader_port: u16,
    admin_password: &str,
) -> String {
    let (dbname, sync) = if failover_slots(version) {
        (" dbname=postgres", "sync_replication_slots = on\n")
    } else {
        ("", "")
    };
    // Generated passwords are letters and digits: nothing to quote.
    let conninfo = format!(
        "host={address} port={leader_port} user={ADMIN_ROLE} password={admin_password} application_name={name}{dbname}"
    );
    format!(
        "primary_conninfo = '{conninfo}'\n\
         primary_slot_name = '{name}'\n\
         hot_standby = on\n\
         hot_standby_feedback = on\n\
         {sync}\
         wal_retrieve_retry_interval = 200ms\n\
         recovery_target_timeline = 'latest'\n"
    )
}

/// Every connection needs a password (SCRAM); replication is the host's.
pub fn hba() -> String {
    format!(
        "# Written by Plateau.\n\
         host all all all scram-sha-256\n\
         host replication {ADMIN_ROLE} all scram-sha-256\n"
    )
}

/// The query with which pgbouncer, as the host's superuser, reads a
/// role's SCRAM verifier from the database the client named. A tenant may
/// give that database a `search_path` of theirs, and pgbouncer 1.18 sets
/// no settings on its sessions: every relation, function, type and
/// operator is named with its schema. A role that does not exist, or has
/// no password, gets a verifier no password matches (a stored key of
/// zeros, which no client key hashes to) with a salt derived from `key`
/// and the name, so the client goes through SCRAM and fails as with a
/// wrong password: pgbouncer's own answer for a missing role (`no such
/// user`) would tell which roles exist.
pub fn auth_query(key: &str) -> String {
    const CAT: &str = "OPERATOR(pg_catalog.||)";
    let zeros = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    // The key is hexadecimal: nothing to quote.
    format!(
        "SELECT $1::pg_catalog.text, COALESCE((SELECT s.passwd FROM pg_catalog.pg_shadow s \
         WHERE s.usename OPERATOR(pg_catalog.=) $1::pg_catalog.name), \
         'SCRAM-SHA-256$4096:' {CAT} pg_catalog.encode(pg_catalog.substr(pg_catalog.sha256(\
         pg_catalog.convert_to('{key}' {CAT} $1::pg_catalog.text, 'UTF8')), 1, 16), 'base64') \
         {CAT} '${zeros}:{zeros}')"
    )
}

/// pgbouncer in transaction mode in front of the leader. It looks every
/// role up in the leader's catalog as the host's role ([`auth_query`]),
/// so roles made later need no change here. It tracks protocol-level
/// prepared statements (`max_prepared_statements`, pgbouncer 1.21+): a
/// client's named statement is prepared again on whichever server
/// connection runs it, so drivers that prepare by default (psycopg 3,
/// asyncpg, node-postgres, JDBC) work unchanged in transaction mode.
/// `read` is the replica behind [`read_database`], if any. With `tls`
/// (the cluster's certificate directory) clients may use TLS, and the
/// URIs ask for it.
pub fn pooler(
    spec: &ClusterSpec,
    dir: &Path,
    address: &str,
    port: u16,
    (database, leader, read): (&str, u16, Option<u16>),
    key: &str,
    tls: Option<&Path>,
) -> String {
    let pool = spec.max_connections().saturating_sub(10).max(5);
    // The owner's database by name as well as `*`: pgbouncer keeps the
    // databases `*` made at their first connection across a reload, named
    // ones follow the new leader.
    let mut named = format!("{database} = host={address} port={leader}\n");
    if let Some(read) = read {
        named.push_str(&format!(
            "{} = host={address} port={read} dbname={database}\n",
            read_database(database)
        ));
    }
    format!(
        "; Written by Plateau.\n\
         [databases]\n\
         {named}\
         * = host={address} port={leader}\n\
         [pgbouncer]\n\
         listen_addr = {address}\n\
         listen_port = {port}\n\
         unix_socket_dir =\n\
         auth_type = scram-sha-256\n\
         auth_file = {users}\n\
         auth_user = {ADMIN_ROLE}\n\
         auth_query = {query}\n\
         pool_mode = transaction\n\
         max_prepared_statements = 200\n\
         max_client_conn = 1000\n\
         default_pool_size = {pool}\n\
         max_db_connections = {pool}\n\
         ignore_startup_parameters = extra_float_digits,search_path,options\n\
         server_reset_query =\n\
         server_login_retry = 1\n\
         server_connect_timeout = 3\n\
         logfile = {log}\n\
         pidfile = {pid}\n\
         {tls}",
        tls = tls.map_or_else(String::new, |t| format!(
            "client_tls_sslmode = allow\n\
             client_tls_cert_file = {}\n\
             client_tls_key_file = {}\n\
             client_tls_protocols = tlsv1.2,tlsv1.3\n",
            t.join(super::tls::CERT_FILE).display(),
            t.join(super::tls::KEY_FILE).display(),
        )),
        users = dir.join(POOLER_USERS).display(),
        log = dir.join(POOLER_LOG).display(),
        pid = dir.join(POOLER_PID).display(),
        query = auth_query(key),
    )
}

/// The host's role and password, for pgbouncer's `auth_query`.
pub fn pooler_users(admin_password: &str) -> String {
    format!("\"{ADMIN_ROLE}\" \"{admin_password}\"\n")
}

/// The write endpoint: HAProxy in TCP mode, in master-worker mode (the
/// master's pid in [`ROUTER_PID`]; SIGUSR2 reloads it without closing its
/// listener), with the leader as its only server. Bytes pass through
/// untouched, so a session through it is a session on the leader: every
/// startup parameter, prepared statements, LISTEN, cancel requests, and
/// TLS end to end (the leader presents the cluster's certificate). A
/// connection the leader refuses is closed at once, not retried
/// (`retries 0`: HAProxy waits a
/// second before each retry, and a refusing leader is a dead one, about to
/// be replaced), so the client's next attempt reaches the endpoint's new
/// configuration. Sessions idle for a day are closed; the old worker of a
/// reload keeps its sessions (to a leader that is gone or stopping) for
/// 10 s at most.
pub fn router(dir: &Path, address: &str, port: u16, (leader, leader_port): (&str, u16)) -> String {
    format!(
        "# Written by Plateau: the write endpoint, always to the leader.\n\
         global\n\
         \x20 master-worker\n\
         \x20 pidfile {pid}\n\
         \x20 hard-stop-after 10s\n\
         \x20 maxconn 1000\n\
         defaults\n\
         \x20 mode tcp\n\
         \x20 retries 0\n\
         \x20 option clitcpka\n\
         \x20 option srvtcpka\n\
         \x20 timeout connect 3s\n\
         \x20 timeout client 24h\n\
         \x20 timeout server 24h\n\
         frontend write\n\
         \x20 bind {address}:{port}\n\
         \x20 default_backend leader\n\
         backend leader\n\
         \x20 server {leader} {address}:{leader_port}\n",
        pid = dir.join(ROUTER_PID).display(),
    )
}

// ---- Backups (issue 32): WAL archiving and recovery. ----

/// The directory, beside a cluster's members, where its leader archives
/// WAL segments for the agent to ship to the backup store.
pub const WAL_SPOOL: &str = "wal-spool";
/// Where a restore puts the archived WAL it replays.
pub const RESTORE_WAL: &str = "restore-wal";
/// The private socket directory of a cluster being restored.
pub const RESTORE_SOCKET: &str = "restore-socket";

/// Continuous archiving: every completed segment (and timeline history)
/// is copied to [`WAL_SPOOL`] (`../../wal-spool` from a member's data
/// directory), flushed, then renamed, so a file there is whole; a file
/// already there is accepted if it is the same. Only the leader archives
/// (`archive_mode = on`); a segment is closed after a minute at most.
/// The template archives nothing.
fn archiving(spec: &ClusterSpec) -> String {
    if spec.id.is_empty() {
        return String::new();
    }
    let spool = format!("../../{WAL_SPOOL}");
    format!(
        "archive_mode = on\n\
         archive_timeout = 60\n\
         archive_command = 'f={spool}/%f; if [ -f \"$f\" ]; then cmp -s \"%p\" \"$f\"; \
         else cp \"%p\" \"$f.part\" && sync \"$f.part\" && mv \"$f.part\" \"$f\" && sync {spool}; fi'\n"
    )
}

/// What a cluster being restored adds to [`postgres`]: no TCP listener,
/// a private socket (in `socket_dir`) the host's role reaches without a
/// password (see [`restore_hba`]), the archived WAL in `wal_dir`, and the
/// target; promoted at the target (at the end of the archive without one).
/// Recovery follows `timeline` when given (the newest of the archive's
/// otherwise).
pub fn recovery(
    socket_dir: &Path,
    wal_dir: &Path,
    target: Option<&str>,
    timeline: Option<u32>,
) -> String {
    let mut text = format!(
        "listen_addresses = ''\n\
         unix_socket_directories = '{socket}'\n\
         restore_command = 'cp \"{wal}/%f\" \"%p\"'\n\
         recovery_target_action = 'promote'\n\
         max_logical_replication_workers = 0\n\
         recovery_target_timeline = '{timeline}'\n",
        socket = socket_dir.display(),
        wal = wal_dir.display(),
        timeline = timeline.map_or_else(|| "latest".to_owned(), |t| t.max(1).to_string()),
    );
    if let Some(target) = target {
        text.push_str(&format!("recovery_target_time = '{target}'\n"));
    }
    text
}

/// `pg_hba.conf` while a cluster is restored: the host's role over the
/// private socket only (its directory is the cluster user's, mode 0700).
pub fn restore_hba() -> String {
    format!("# Written by Plateau during a restore.\nlocal all {ADMIN_ROLE} trust\n")
}

#[cfg(test)]
mod tests;
