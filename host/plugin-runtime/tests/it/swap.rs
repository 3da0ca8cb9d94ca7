//! Hot swap: atomic switches under load, rollback, data across versions.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use plateau_plugin_artifacts::fixtures;
use plateau_plugin_runtime::{Error, PluginSettings, PluginSlot};

use crate::{harness, request, text, with_body};

fn version_request() -> plateau_plugin_runtime::Request {
    request("GET", "/echo/version", "/echo/version", "", Some("org1"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switch_under_concurrent_requests_fails_none() {
    let h = harness();
    let v1 = h.echo().await.version;
    let v2 = h
        .load(fixtures::ECHO_V2, PluginSettings::all_granted())
        .await
        .version;
    let slot = Arc::new(PluginSlot::new(v1.clone()));
    let served = Arc::new(AtomicUsize::new(0));

    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (slot, served) = (slot.clone(), served.clone());
            tokio::spawn(async move {
                let mut versions = Vec::new();
                for _ in 0..40 {
                    let version = slot.current();
                    let outcome = version
                        .handle(version_request())
                        .await
                        .expect("no request fails");
                    assert_eq!(outcome.response.status, 200);
                    versions.push(text(&outcome.response.body));
                    served.fetch_add(1, Ordering::SeqCst);
                }
                versions
            })
        })
        .collect();

    // Switch once some requests have been served on the first version.
    while served.load(Ordering::SeqCst) < 20 {
        tokio::task::yield_now().await;
    }
    let in_flight = slot.current();
    let replaced = slot.switch(v2.clone()).unwrap();
    assert_eq!(replaced.description().version, "1.0.0");

    let mut seen = Vec::new();
    for client in clients {
        let versions = client.await.expect("no client panicked");
        // Each client moves from 1.0.0 to 2.0.0 once and never back.
        let first_v2 = versions
            .iter()
            .position(|v| v == "2.0.0")
            .unwrap_or(versions.len());
        assert!(
            versions[..first_v2].iter().all(|v| v == "1.0.0"),
            "{versions:?}"
        );
        assert!(
            versions[first_v2..].iter().all(|v| v == "2.0.0"),
            "{versions:?}"
        );
        seen.extend(versions);
    }
    assert_eq!(seen.len(), 160);
    assert!(seen.iter().any(|v| v == "1.0.0"));
    // A request that started on the old version finishes on it.
    assert_eq!(
        text(
            &in_flight
                .handle(version_request())
                .await
                .unwrap()
                .response
                .body
        ),
        "1.0.0"
    );
    assert_eq!(
        text(
            &slot
                .current()
                .handle(version_request())
                .await
                .unwrap()
                .response
                .body
        ),
        "2.0.0"
    );
}

#[tokio::test]
async fn rollback_returns_to_the_previous_version_and_data_is_kept() {
    let h = harness();
    let v1 = h.echo().await.version;
    let slot = PluginSlot::new(v1);
    assert!(matches!(slot.rollback(), Err(Error::NothingToRollBack(name)) if name == "echo"));

    let put = with_body(
        request("PUT", "/echo/kv/{key}", "/echo/kv/kept", "", Some("org1")),
        "from v1",
    );
    slot.current().handle(put).await.unwrap();

    let v2 = h
        .load(fixtures::ECHO_V2, PluginSettings::all_granted())
        .await
        .version;
    slot.switch(v2).unwrap();
    let get = || request("GET", "/echo/kv/{key}", "/echo/kv/kept", "", Some("org1"));
    let read = slot.current().handle(get()).await.unwrap();
    assert_eq!(
        text(&read.response.body),
        "from v1",
        "v2 reads what v1 wrote"
    );

    let restored = slot.rollback().unwrap();
    assert_eq!(restored.description().version, "1.0.0");
    assert_eq!(
        text(
            &slot
                .current()
                .handle(version_request())
                .await
                .unwrap()
                .response
                .body
        ),
        "1.0.0"
    );
    assert_eq!(slot.targets().len(), 1);
    assert_eq!(slot.targets()[0].1, 100);
    assert!(matches!(slot.rollback(), Err(Error::NothingToRollBack(_))));
}

#[tokio::test]
async fn a_slot_refuses_another_plugin() {
    let h = harness();
    let slot = PluginSlot::new(h.echo().await.version);
    let trap = h
        .load(fixtures::TRAP, PluginSettings::default())
        .await
        .version;
    let err = slot.switch(trap).err().expect("refused");
    assert!(matches!(err, Error::WrongPlugin { .. }), "{err}");
    assert_eq!(slot.current().name(), "echo");
}
