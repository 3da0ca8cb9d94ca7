//! Key-value and events: transactional commits, CAS, counters, lists,
//! namespaces, ticks and events.

use std::sync::Arc;

use async_trait::async_trait;
use plateau_plugin_runtime::storage::encode_counter;
use plateau_plugin_runtime::{
    BucketId, Claim, Entry, Event, ExecError, MemoryStore, Namespace, PluginSettings, Storage,
    StorageError, Tick, WriteSet,
};
use tokio::sync::{Mutex, Notify, oneshot};

use crate::{harness, request, runtime_over, text, with_body};

fn bucket(namespace: Namespace) -> BucketId {
    BucketId {
        plugin: "echo".into(),
        namespace,
    }
}

fn org(id: &str) -> BucketId {
    bucket(Namespace::Organization(id.into()))
}

fn put(key: &str, query: &str, body: &str) -> plateau_plugin_runtime::Request {
    let path = format!("/echo/kv/{key}");
    with_body(
        request("PUT", "/echo/kv/{key}", &path, query, Some("org1")),
        body,
    )
}

fn get(key: &str, query: &str) -> plateau_plugin_runtime::Request {
    request(
        "GET",
        "/echo/kv/{key}",
        &format!("/echo/kv/{key}"),
        query,
        Some("org1"),
    )
}

#[tokio::test]
async fn writes_commit_below_500_and_are_discarded_on_5xx_and_traps() {
    let h = harness();
    let echo = h.echo().await.version;

    for (key, status, kept) in [
        ("ok", 200, true),
        ("bad", 404, true),
        ("down", 500, false),
        ("worse", 503, false),
    ] {
        let outcome = echo
            .handle(put(key, &format!("status={status}"), "v"))
            .await
            .unwrap();
        assert_eq!(outcome.response.status, status);
        assert_eq!(outcome.committed, kept, "{key}");
        assert_eq!(h.store.value(&org("org1"), key).is_some(), kept, "{key}");
    }

    let path = "/echo/trap/trapped";
    let trapped = echo
        .handle(with_body(
            request("POST", "/echo/trap/{key}", path, "", Some("org1")),
            "v",
        ))
        .await;
    assert!(
        matches!(trapped, Err(ExecError::Trap { .. })),
        "{trapped:?}"
    );
    assert_eq!(h.store.value(&org("org1"), "trapped"), None);

    // Reads within the request see its own writes, and later requests too.
    let read = echo.handle(get("ok", "")).await.unwrap();
    assert_eq!(
        (read.response.status, text(&read.response.body)),
        (200, "v".into())
    );
    assert_eq!(
        echo.handle(get("down", "")).await.unwrap().response.status,
        404
    );
}

#[tokio::test]
async fn writes_beyond_the_budget_are_refused_as_too_large() {
    let h = harness();
    let mut settings = PluginSettings::all_granted();
    settings.limits.max_write_bytes = 16;
    let echo = h
        .load(plateau_plugin_artifacts::fixtures::ECHO, settings)
        .await
        .version;
    assert!(echo.handle(put("k", "", "small")).await.unwrap().committed);
    let refused = echo
        .handle(put("k", "", "far too large for the budget"))
        .await
        .unwrap();
    assert_eq!(refused.response.status, 400);
    assert!(text(&refused.response.body).starts_with("Error::TooLarge"));
    assert_eq!(h.store.value(&org("org1"), "k"), Some(b"small".to_vec()));
}

#[tokio::test]
async fn a_storage_outage_is_an_error_value_for_the_guest() {
    let h = harness();
    let echo = h.echo().await.version;
    h.store.set_unavailable(true);
    let outcome = echo.handle(get("k", "")).await.expect("not a trap");
    assert_eq!(outcome.response.status, 503);
    assert!(text(&outcome.response.body).starts_with("unavailable"));
    h.store.set_unavailable(false);
    assert_eq!(h.store.commits(), 0);
}

#[tokio::test]
async fn events_are_committed_with_the_writes_or_not_at_all() {
    let h = harness();
    let echo = h.echo().await.version;
    let emit = |status: u16| {
        with_body(
            request(
                "POST",
                "/echo/event",
                "/echo/event",
                &format!("status={status}&id=t1"),
                Some("org1"),
            ),
            r#"{"name":"thing"}"#,
        )
    };
    assert_eq!(echo.handle(emit(201)).await.unwrap().response.status, 201);
    assert_eq!(echo.handle(emit(500)).await.unwrap().response.status, 500);
    let events = h.store.events();
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(
        (
            event.plugin.as_str(),
            event.organization_id.as_str(),
            event.event.event_type.as_str()
        ),
        ("echo", "org1", "echo.thing.created")
    );
    assert_eq!(event.actor.as_deref(), Some("user:u1"));
    assert_eq!(event.event.resource_id.as_deref(), Some("t1"));
    assert_eq!(event.at, 1_700_000_000_000);

    // Another organisation's timeline is out of reach of a request.
    let other = request(
        "POST",
        "/echo/event",
        "/echo/event",
        "org=org2",
        Some("org1"),
    );
    let refused = echo.handle(with_body(other, "{}")).await.unwrap();
    assert_eq!(refused.response.status, 400);
    assert!(text(&refused.response.body).contains("caller's organisation"));
    // Data must be a JSON object.
    let bad = echo.handle(with_body(emit(201), "[1]")).await.unwrap();
    assert_eq!(
        (bad.response.status, text(&bad.response.body)),
        (400, "data must be a JSON object".into())
    );
    assert_eq!(h.store.events().len(), 1);
}

#[tokio::test]
async fn compare_and_swap_decides_on_the_current_value() {
    let h = harness();
    let echo = h.echo().await.version;
    let cas = |query: &str| {
        request(
            "POST",
            "/echo/cas/{key}",
            "/echo/cas/k",
            query,
            Some("org1"),
        )
    };

    let swapped = echo.handle(cas("new=a")).await.unwrap();
    assert_eq!(text(&swapped.response.body), "true", "absent as expected");
    let stale = echo.handle(cas("new=b")).await.unwrap();
    assert_eq!(text(&stale.response.body), "false", "no longer absent");
    assert!(!stale.committed);
    let swapped = echo.handle(cas("expected=a&new=b")).await.unwrap();
    assert_eq!(text(&swapped.response.body), "true");
    assert_eq!(h.store.value(&org("org1"), "k"), Some(b"b".to_vec()));
    let deleted = echo.handle(cas("expected=b")).await.unwrap();
    assert_eq!(
        text(&deleted.response.body),
        "true",
        "none as the new value deletes"
    );
    assert_eq!(h.store.value(&org("org1"), "k"), None);
}

/// A store whose first commit waits until the test releases it.
struct GatedStore {
    inner: MemoryStore,
    gate: Mutex<Option<oneshot::Receiver<()>>>,
    entered: Notify,
}

#[async_trait]
impl Storage for GatedStore {
    async fn get(&self, bucket: &BucketId, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(bucket, key).await
    }

    async fn list(
        &self,
        bucket: &BucketId,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Entry>, StorageError> {
        self.inner.list(bucket, prefix, after, limit).await
    }

    async fn count(&self, bucket: &BucketId, prefix: &str) -> Result<u64, StorageError> {
        self.inner.count(bucket, prefix).await
    }

    async fn commit(&self, writes: WriteSet) -> Result<(), StorageError> {
        let gate = self.gate.lock().await.take();
        if let Some(gate) = gate {
            self.entered.notify_one();
            let _ = gate.await;
        }
        self.inner.commit(writes).await
    }

    async fn claim(&self, claim: Claim) -> Result<bool, StorageError> {
        self.inner.claim(claim).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compare_and_swap_conflicts_when_the_value_changed_before_commit() {
    let (release, gate) = oneshot::channel();
    let store = Arc::new(GatedStore {
        inner: MemoryStore::new(),
        gate: Mutex::new(Some(gate)),
        entered: Notify::new(),
    });
    let cache = tempfile::tempdir().unwrap();
    let (runtime, _clock) = runtime_over(store.clone(), &cache, |_| {});
    let echo = runtime
        .load(
            plateau_plugin_artifacts::fixtures::ECHO,
            PluginSettings::all_granted(),
        )
        .await
        .unwrap()
        .version;

    // A swaps absent -> a, and is held at its commit...
    let first = tokio::spawn({
        let echo = echo.clone();
        async move {
            echo.handle(request(
                "POST",
                "/echo/cas/{key}",
                "/echo/cas/k",
                "new=a",
                Some("org1"),
            ))
            .await
        }
    });
    store.entered.notified().await;
    // ...while B sets the key and commits.
    let second = echo.handle(put("k", "", "b")).await.unwrap();
    assert!(second.committed);
    release.send(()).unwrap();

    match first.await.unwrap() {
        Err(e @ ExecError::Conflict { .. }) => {
            assert_eq!(e.plugin(), "echo");
            assert_eq!(e.status(), 409);
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(store.inner.value(&org("org1"), "k"), Some(b"b".to_vec()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_increments_all_count() {
    let h = harness();
    let echo = h.echo().await.version;
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            let echo = echo.clone();
            tokio::spawn(async move {
                let delta = if i % 2 == 0 { 3 } else { -1 };
                let req = request(
                    "POST",
                    "/echo/incr/{key}",
                    "/echo/incr/n",
                    &format!("delta={delta}"),
                    Some("org1"),
                );
                echo.handle(req).await.expect("increments never conflict")
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().response.status, 200);
    }
    assert_eq!(
        h.store.value(&org("org1"), "n"),
        Some(encode_counter(12 * 3 - 12))
    );

    // A value that is not a counter is an error value, not a trap.
    echo.handle(put("word", "", "hello")).await.unwrap();
    let req = request(
        "POST",
        "/echo/incr/{key}",
        "/echo/incr/word",
        "",
        Some("org1"),
    );
    let refused = echo.handle(req).await.unwrap();
    assert_eq!(refused.response.status, 400);
    assert!(text(&refused.response.body).starts_with("Error::InvalidKey"));
}

#[tokio::test]
async fn lists_page_with_cursors_and_counts_by_prefix() {
    let h = harness();
    let echo = h.echo().await.version;
    for key in ["a1", "a2", "a3", "a4", "a5", "b1"] {
        echo.handle(put(key, "", &format!("v{key}"))).await.unwrap();
    }
    let list = |query: String| request("GET", "/echo/list", "/echo/list", &query, Some("org1"));

    let mut seen = String::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let query = match &cursor {
            Some(c) => format!("prefix=a&limit=2&cursor={c}"),
            None => "prefix=a&limit=2".into(),
        };
        let page = echo.handle(list(query)).await.unwrap().response;
        assert_eq!(page.status, 200);
        seen.push_str(&text(&page.body));
        pages += 1;
        cursor = page
            .headers
            .iter()
            .find(|(k, _)| k == "x-next-cursor")
            .map(|(_, v)| v.clone());
        if cursor.is_none() {
            break;
        }
        assert!(pages < 10, "the cursor must advance");
    }
    assert_eq!(seen, "a1=va1\na2=va2\na3=va3\na4=va4\na5=va5\n");
    assert_eq!(pages, 3);

    let count = echo
        .handle(request(
            "GET",
            "/echo/count",
            "/echo/count",
            "prefix=a",
            Some("org1"),
        ))
        .await
        .unwrap();
    assert_eq!(text(&count.response.body), "5");

    // A cursor that this host did not issue is an error value.
    let forged = echo
        .handle(list("prefix=a&cursor=zz".into()))
        .await
        .unwrap();
    assert_eq!(
        (forged.response.status, text(&forged.response.body)),
        (400, "Error::InvalidCursor".into())
    );
    // A cursor for another prefix too.
    let first = echo
        .handle(list("prefix=a&limit=1".into()))
        .await
        .unwrap()
        .response;
    let (_, c) = first
        .headers
        .iter()
        .find(|(k, _)| k == "x-next-cursor")
        .unwrap();
    let other = echo
        .handle(list(format!("prefix=b&cursor={c}")))
        .await
        .unwrap();
    assert_eq!(other.response.status, 400);
}

#[tokio::test]
async fn namespaces_follow_the_caller() {
    let h = harness();
    let echo = h.echo().await.version;
    // The caller's own organisation, by either name.
    echo.handle(put("k", "", "mine")).await.unwrap();
    let own = echo.handle(get("k", "ns=org:org1")).await.unwrap();
    assert_eq!(text(&own.response.body), "mine");
    // Another organisation is denied to a request that has one.
    let denied = echo.handle(get("k", "ns=org:org2")).await.unwrap();
    assert_eq!(denied.response.status, 400);
    assert!(text(&denied.response.body).starts_with("Error::AccessDenied"));

    // A public request has no caller organisation: `caller` is denied, a
    // named organisation and the global bucket are open.
    let public = |query: &str| request("GET", "/echo/kv/{key}", "/echo/kv/k", query, None);
    let denied = echo.handle(public("")).await.unwrap();
    assert!(text(&denied.response.body).starts_with("Error::AccessDenied"));
    let named = echo.handle(public("ns=org:org1")).await.unwrap();
    assert_eq!(text(&named.response.body), "mine");
    echo.handle(put("g", "ns=global", "shared")).await.unwrap();
    assert_eq!(
        text(
            &echo
                .handle(public("ns=global"))
                .await
                .unwrap()
                .response
                .body
                .clone()
        ),
        "absent"
    );
    let global = request("GET", "/echo/kv/{key}", "/echo/kv/g", "ns=global", None);
    assert_eq!(
        text(&echo.handle(global).await.unwrap().response.body),
        "shared"
    );
    assert_eq!(
        h.store.value(&bucket(Namespace::Global), "g"),
        Some(b"shared".to_vec())
    );
}

#[tokio::test]
async fn ticks_and_events_commit_only_when_they_succeed() {
    let h = harness();
    let echo = h.echo().await.version;
    for _ in 0..2 {
        let tick = echo
            .on_tick(
                Tick {
                    schedule: "count".into(),
                    at: 1,
                },
                None,
            )
            .await
            .unwrap();
        assert_eq!(tick.result, Ok(()));
        assert!(tick.committed && tick.fuel_consumed > 0);
    }
    assert_eq!(
        h.store.value(&bucket(Namespace::Global), "ticks/count"),
        Some(encode_counter(2))
    );

    let event = |id: &str, event_type: &str| Event {
        id: id.into(),
        organization_id: "org7".into(),
        event_type: event_type.into(),
        resource_type: None,
        resource_id: None,
        data: "{}".into(),
        at: 5,
    };
    let ok = echo
        .on_event(event("e1", "echo.thing.created"))
        .await
        .unwrap();
    assert!(ok.committed);
    assert_eq!(
        h.store.value(&org("org7"), "events/e1"),
        Some(b"echo.thing.created".to_vec())
    );
    let failed = echo.on_event(event("e2", "echo.thing.fail")).await.unwrap();
    assert_eq!(failed.result, Err("asked to fail".into()));
    assert!(!failed.committed);
    assert_eq!(h.store.value(&org("org7"), "events/e2"), None);
}

#[tokio::test]
async fn config_clock_and_cursors_reach_the_guest() {
    let h = harness();
    let mut settings = PluginSettings::all_granted();
    settings.config.insert("greeting".into(), "hi".into());
    let echo = h
        .load(plateau_plugin_artifacts::fixtures::ECHO, settings)
        .await
        .version;
    let call =
        |path: &str, route: &str, query: &str| request("GET", route, path, query, Some("org1"));

    let config = echo
        .handle(call("/echo/config/greeting", "/echo/config/{key}", ""))
        .await
        .unwrap();
    assert_eq!(text(&config.response.body), "hi");
    h.clock.set(42);
    let clock = echo
        .handle(call("/echo/clock", "/echo/clock", ""))
        .await
        .unwrap();
    assert_eq!(text(&clock.response.body), "42");

    let encoded = echo
        .handle(call("/echo/cursor", "/echo/cursor", "pos=p7"))
        .await
        .unwrap();
    let cursor = text(&encoded.response.body);
    let decoded = echo
        .handle(call(
            "/echo/cursor",
            "/echo/cursor",
            &format!("decode={cursor}"),
        ))
        .await
        .unwrap();
    assert_eq!(
        (decoded.response.status, text(&decoded.response.body)),
        (200, "p7".into())
    );
    let other_list = echo
        .handle(call(
            "/echo/cursor",
            "/echo/cursor",
            &format!("list=other&decode={cursor}"),
        ))
        .await
        .unwrap();
    assert_eq!(other_list.response.status, 400);
}
