//! Limits: deadline, memory, traps and fuel, each naming the plugin, while a
//! well-behaved plugin keeps answering.

use std::sync::Arc;
use std::time::Duration;

use plateau_plugin_artifacts::fixtures;
use plateau_plugin_runtime::{
    BucketId, Claim, Entry, ExecError, PluginSettings, Storage, StorageError, WriteSet,
};

use crate::{harness, request, runtime_over, text, with_body};

fn limited(edit: impl FnOnce(&mut PluginSettings)) -> PluginSettings {
    let mut settings = PluginSettings::default();
    edit(&mut settings);
    settings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runaway_plugins_fail_alone_while_a_good_one_keeps_answering() {
    let h = harness();
    let echo = h.echo().await.version;
    let spin = h
        .load(
            fixtures::SPIN_LOOP,
            limited(|s| {
                s.limits.deadline = Duration::from_millis(400);
                s.limits.fuel = 1 << 50;
            }),
        )
        .await
        .version;
    let bomb = h
        .load(
            fixtures::ALLOC_BOMB,
            limited(|s| s.limits.memory_bytes = 16 << 20),
        )
        .await
        .version;
    let trap = h
        .load(fixtures::TRAP, PluginSettings::default())
        .await
        .version;

    let spinning = tokio::spawn({
        let spin = spin.clone();
        async move {
            spin.handle(request(
                "GET",
                "/spin-loop/forever",
                "/spin-loop/forever",
                "",
                None,
            ))
            .await
        }
    });
    let bombing = tokio::spawn({
        let bomb = bomb.clone();
        async move {
            bomb.handle(request(
                "GET",
                "/alloc-bomb/boom",
                "/alloc-bomb/boom",
                "",
                None,
            ))
            .await
        }
    });

    // While those run, the good plugin answers every request.
    let mut answered = 0;
    while !spinning.is_finished() || answered < 20 {
        let req = with_body(
            request("POST", "/echo/say", "/echo/say", "", Some("org1")),
            "still here",
        );
        let outcome = echo.handle(req).await.expect("echo keeps answering");
        assert_eq!(text(&outcome.response.body), "still here");
        answered += 1;
        tokio::task::yield_now().await;
    }

    match spinning.await.unwrap() {
        Err(e @ ExecError::DeadlineExceeded { .. }) => {
            assert_eq!(e.plugin(), "spin-loop");
            assert_eq!(e.status(), 504);
            assert!(e.to_string().contains("`spin-loop`"), "{e}");
        }
        other => panic!("expected the deadline, got {other:?}"),
    }
    match bombing.await.unwrap() {
        Err(e @ ExecError::MemoryLimit { .. }) => {
            assert_eq!(e.plugin(), "alloc-bomb");
            assert!(e.to_string().contains("16777216"), "{e}");
        }
        other => panic!("expected the memory limit, got {other:?}"),
    }
    for path in ["/trap/panic", "/trap/unreachable"] {
        match trap.handle(request("GET", path, path, "", None)).await {
            Err(e @ ExecError::Trap { .. }) => {
                assert_eq!(e.plugin(), "trap");
                assert_eq!(e.status(), 500);
            }
            other => panic!("expected a trap on {path}, got {other:?}"),
        }
    }

    // The failed plugins serve again: each call has a fresh store.
    let again = bomb
        .handle(request(
            "GET",
            "/alloc-bomb/boom",
            "/alloc-bomb/boom",
            "",
            None,
        ))
        .await;
    assert!(
        matches!(again, Err(ExecError::MemoryLimit { .. })),
        "{again:?}"
    );
}

#[tokio::test]
async fn running_out_of_fuel_is_reported_as_such() {
    let h = harness();
    let spin = h
        .load(
            fixtures::SPIN_LOOP,
            limited(|s| {
                s.limits.fuel = 5_000_000;
                s.limits.deadline = Duration::from_secs(60);
            }),
        )
        .await
        .version;
    match spin
        .handle(request(
            "GET",
            "/spin-loop/forever",
            "/spin-loop/forever",
            "",
            None,
        ))
        .await
    {
        Err(e @ ExecError::FuelExhausted { .. }) => {
            assert_eq!(e.plugin(), "spin-loop");
            assert_eq!(e.code(), "plugin_fuel_exhausted");
        }
        other => panic!("expected fuel exhaustion, got {other:?}"),
    }
}

#[tokio::test]
async fn fuel_consumption_is_reported_per_request() {
    let h = harness();
    let echo = h.echo().await.version;
    let small = echo
        .handle(with_body(
            request("POST", "/echo/say", "/echo/say", "", None),
            "x",
        ))
        .await
        .unwrap();
    assert!(small.fuel_consumed > 0);
    assert!(small.fuel_consumed < echo.settings().limits.fuel);

    // Fuel is deterministic: the same request costs the same.
    let again = echo
        .handle(with_body(
            request("POST", "/echo/say", "/echo/say", "", None),
            "x",
        ))
        .await
        .unwrap();
    assert_eq!(again.fuel_consumed, small.fuel_consumed);

    // Listing through the host costs more guest work than echoing a byte.
    let list = echo
        .handle(request(
            "GET",
            "/echo/list",
            "/echo/list",
            "prefix=a",
            Some("org1"),
        ))
        .await
        .unwrap();
    assert_ne!(list.fuel_consumed, small.fuel_consumed);
}

/// A store whose reads never answer.
struct StuckStore;

#[async_trait::async_trait]
impl Storage for StuckStore {
    async fn get(&self, _: &BucketId, _: &str) -> Result<Option<Vec<u8>>, StorageError> {
        std::future::pending().await
    }

    async fn list(
        &self,
        _: &BucketId,
        _: &str,
        _: Option<&str>,
        _: u32,
    ) -> Result<Vec<Entry>, StorageError> {
        std::future::pending().await
    }

    async fn count(&self, _: &BucketId, _: &str) -> Result<u64, StorageError> {
        std::future::pending().await
    }

    async fn commit(&self, _: WriteSet) -> Result<(), StorageError> {
        std::future::pending().await
    }

    async fn claim(&self, _: Claim) -> Result<bool, StorageError> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn the_deadline_also_ends_a_stuck_host_call() {
    let cache = tempfile::tempdir().unwrap();
    let (runtime, _clock) = runtime_over(Arc::new(StuckStore), &cache, |_| {});
    let mut settings = PluginSettings::all_granted();
    settings.limits.deadline = Duration::from_millis(300);
    let echo = runtime
        .load(fixtures::ECHO, settings)
        .await
        .unwrap()
        .version;
    let req = request("GET", "/echo/kv/{key}", "/echo/kv/k", "", Some("org1"));
    match echo.handle(req).await {
        Err(e @ ExecError::DeadlineExceeded { .. }) => assert_eq!(e.plugin(), "echo"),
        other => panic!("expected the deadline, got {other:?}"),
    }
}
