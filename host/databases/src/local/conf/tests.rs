//! The generated settings, checked as text.

use std::path::Path;

use super::*;

fn spec() -> ClusterSpec {
    ClusterSpec {
        id: "dbs_1".to_owned(),
        version: "17".to_owned(),
        memory_mb: 512,
        cpus: 1,
        disk_gb: 1,
        replicas: 0,
    }
}

#[test]
fn the_pooler_keeps_prepared_statements_and_offers_tls_with_the_clusters_certificate() {
    let dir = Path::new("/d/pooler");
    let args = ("app", 5001, None);
    let plain = pooler(&spec(), dir, "127.0.0.1", 5000, args, "00", None);
    assert!(plain.contains("max_prepared_statements = 200\n"), "{plain}");
    assert!(!plain.contains("client_tls"), "{plain}");
    let tls = pooler(
        &spec(),
        dir,
        "127.0.0.1",
        5000,
        args,
        "00",
        Some(Path::new("/d/tls")),
    );
    for line in [
        "client_tls_sslmode = allow\n",
        "client_tls_cert_file = /d/tls/server.crt\n",
        "client_tls_key_file = /d/tls/server.key\n",
    ] {
        assert!(tls.contains(line), "{line}: {tls}");
    }
}

#[test]
fn the_server_includes_its_tls_settings_when_they_are_there() {
    let text = postgres(&spec(), "127.0.0.1", 5001);
    assert!(
        text.contains("include_if_exists = 'plateau-tls.conf'\n"),
        "{text}"
    );
}

#[test]
fn on_17_standbys_keep_the_leaders_failover_slots_and_subscribers_wait_for_them() {
    let standbys = ["node1".to_owned(), "node2".to_owned()];
    let l17 = leader("17", &standbys);
    assert!(
        l17.contains("synchronized_standby_slots = 'node1, node2'\n"),
        "{l17}"
    );
    let s17 = standby("17", "node1", "127.0.0.1", 5000, "pw");
    assert!(s17.contains("sync_replication_slots = on\n"), "{s17}");
    assert!(
        s17.contains("application_name=node1 dbname=postgres'"),
        "{s17}"
    );
    // 15 and 16 have neither setting (the server would refuse them).
    for v in ["15", "16"] {
        assert!(!leader(v, &standbys).contains("synchronized"), "{v}");
        let s = standby(v, "node1", "127.0.0.1", 5000, "pw");
        assert!(
            !s.contains("sync_replication_slots") && !s.contains("dbname"),
            "{s}"
        );
    }
    assert_eq!(leader("17", &[]), "synchronous_standby_names = ''\n");
}
