//! Section 6: `GET /audit/export` streams its CSV, so the server's memory
//! stays flat however many events match.
//!
//! 200,000 audit events of about 400 bytes of data each are written
//! straight into the database, then exported. The whole CSV is about
//! 110 MB; an export that built every row and the whole CSV at once (as
//! it did before) raised the server's peak resident memory by several
//! hundred MB. The test resets the kernel's record of the peak
//! (`/proc/PID/clear_refs`), reads the whole export as a client would, and
//! bounds what the peak rose by.

use futures::StreamExt as _;
use plateau_testkit::{Backend, Server};

use crate::start;

crate::on_both_backends!(export_memory_stays_flat);

const EVENTS: i64 = 200_000;
/// Bytes of padding in each event's data.
const PADDING: usize = 400;
/// What the export may add to the server's peak resident memory, in MiB:
/// a fraction of the CSV's size.
const BOUND_MIB: u64 = 48;

async fn export_memory_stays_flat(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let me = c.get("/me").await.json();
    let org = me["organization"]["id"].as_str().unwrap().to_owned();
    insert_events(&s, &org).await;
    // Warm up the export path on a small range, then measure a full one.
    let r = c.get("/audit/export?from=2999-01-01").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let pid = s.pid().expect("the server runs");
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("resetting the peak RSS");
    let before = status_kib(pid, "VmRSS");

    let response = reqwest::Client::new()
        .get(format!("{}/api/v1/audit/export", s.url))
        .bearer_auth(&s.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let (mut rows, mut bytes, mut last_id) = (0i64, 0usize, None::<String>);
    let mut line = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.expect("the export streams to its end");
        bytes += chunk.len();
        for &b in chunk.iter() {
            if b != b'\n' {
                line.push(b);
                continue;
            }
            let text = std::str::from_utf8(&line).unwrap();
            let id = text.split(',').next().unwrap();
            if id.starts_with("evt_1") {
                // Newest first, across every page.
                if let Some(last) = &last_id {
                    assert!(id < last.as_str(), "{id} after {last}");
                }
                assert!(text.ends_with('\r'), "CRLF line ends");
                last_id = Some(id.to_owned());
                rows += 1;
            }
            line.clear();
        }
    }
    assert!(line.is_empty(), "the export ends with a line end");
    assert_eq!(rows, EVENTS);
    assert_eq!(last_id.as_deref(), Some("evt_1000001"));
    let peak = status_kib(pid, "VmHWM");
    let rose_mib = peak.saturating_sub(before) / 1024;
    println!(
        "exported {rows} events ({} MiB of CSV): peak RSS {} MiB, {rose_mib} MiB above the {} MiB before",
        bytes >> 20,
        peak / 1024,
        before / 1024
    );
    assert!(
        bytes > 100 << 20,
        "the export is large enough to show the bound"
    );
    assert!(
        rose_mib <= BOUND_MIB,
        "the export raised the server's peak RSS by {rose_mib} MiB (bound {BOUND_MIB} MiB)"
    );
}

/// Writes [`EVENTS`] audit events of `org` in one statement, ids
/// `evt_1000001` upwards (after every real event id).
async fn insert_events(s: &Server, org: &str) {
    sqlx::any::install_default_drivers();
    let url = match &s.database_url {
        Some(url) => url.clone(),
        None => format!(
            "sqlite://{}",
            s.data_dir.path().join("plateau.db").display()
        ),
    };
    let pool = sqlx::AnyPool::connect(&url).await.unwrap();
    let done = sqlx::query(
        "INSERT INTO events (id, org_id, type, category, action, audit, actor_type, actor_id, \
         actor_user_id, actor_ip, resource_type, resource_id, data, created_at) \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2) \
         SELECT 'evt_' || (1000000 + i), $1, 'project.created', 'resources', 'create', 1, \
         'token', 'tok_bulk', NULL, '127.0.0.1', 'project', 'prj_' || i, \
         '{\"name\":\"project ' || i || '\",\"padding\":\"' || $3 || '\"}', $4 + i FROM n",
    )
    .bind(org)
    .bind(EVENTS)
    .bind("x".repeat(PADDING))
    .bind(1_700_000_000_000i64)
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(done.rows_affected(), EVENTS as u64);
    pool.close().await;
}

/// A `kB` line of `/proc/PID/status` (`VmRSS`, `VmHWM`), in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}
