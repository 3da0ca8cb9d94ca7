//! Loading: serving, the disk cache, and refusals before any guest code.

use plateau_plugin_artifacts::fixtures;
use plateau_plugin_runtime::{CacheOutcome, Capability, Error, PluginSettings, WitVersion};

use crate::{granting, harness, request, runtime_over, text, with_body};

#[tokio::test]
async fn a_loaded_plugin_serves_requests() {
    let h = harness();
    let loaded = h.echo().await;
    assert_eq!(loaded.version.name(), "echo");
    assert_eq!(loaded.version.description().version, "1.0.0");
    assert_eq!(loaded.report.wit_version, WitVersion::V0_1);
    assert_eq!(loaded.report.cache, CacheOutcome::Compiled);
    assert!(
        loaded
            .report
            .imports
            .iter()
            .any(|i| i == "plateau:plugin/kv@0.1.0")
    );
    assert!(
        !loaded
            .report
            .imports
            .iter()
            .any(|i| i.contains("outbound-http")),
        "echo does not use http, so it must not import it: {:?}",
        loaded.report.imports
    );

    let req = with_body(
        request("POST", "/echo/say", "/echo/say", "status=202", Some("org1")),
        "hello",
    );
    let outcome = loaded.version.handle(req).await.expect("echo answers");
    assert_eq!(outcome.response.status, 202);
    assert_eq!(text(&outcome.response.body), "hello");
    assert!(!outcome.committed, "nothing was written");
}

#[tokio::test]
async fn on_demand_allocation_serves_too() {
    let h = crate::harness_with(|c| c.pooling = false);
    assert!(!h.runtime.uses_pooling());
    let echo = h.echo().await.version;
    let req = request("GET", "/echo/version", "/echo/version", "", None);
    assert_eq!(
        text(&echo.handle(req).await.unwrap().response.body),
        "1.0.0"
    );
}

#[tokio::test]
async fn the_second_load_of_the_same_bytes_hits_the_disk_cache() {
    let h = harness();
    assert_eq!(h.echo().await.report.cache, CacheOutcome::Compiled);
    assert_eq!(h.echo().await.report.cache, CacheOutcome::DiskHit);

    // A fresh runtime (a restarted host) over the same directory too.
    let (runtime, _clock) = runtime_over(h.store.clone(), &h.cache, |_| {});
    let again = runtime
        .load(fixtures::ECHO, PluginSettings::all_granted())
        .await
        .expect("loads from the cache");
    assert_eq!(again.report.cache, CacheOutcome::DiskHit);
    let req = request("GET", "/echo/version", "/echo/version", "", Some("org1"));
    assert_eq!(
        text(&again.version.handle(req).await.unwrap().response.body),
        "1.0.0"
    );

    // Other bytes are compiled.
    assert_eq!(
        runtime
            .load(fixtures::ECHO_V2, PluginSettings::all_granted())
            .await
            .unwrap()
            .report
            .cache,
        CacheOutcome::Compiled
    );
}

#[tokio::test]
async fn an_ungranted_capability_is_refused_before_any_guest_code_runs() {
    let h = harness();
    // `ungranted` reads the clock in `describe`: the clock stays unread.
    let err = h
        .runtime
        .load(
            fixtures::UNGRANTED,
            granting(&[Capability::Clock, Capability::Kv]),
        )
        .await
        .err()
        .expect("refused");
    match &err {
        Error::CapabilityNotGranted {
            interface,
            capability,
        } => {
            assert_eq!(interface, "plateau:plugin/outbound-http@0.1.0");
            assert_eq!(*capability, "http");
        }
        other => panic!("expected a refused capability, got {other}"),
    }
    assert!(err.to_string().contains("grant it"), "{err}");
    assert_eq!(h.clock.reads(), 0, "describe must not have run");

    // The control: granted, it loads and its describe reads the clock.
    h.load(
        fixtures::UNGRANTED,
        granting(&[Capability::Clock, Capability::Http]),
    )
    .await;
    assert!(h.clock.reads() > 0);
}

#[tokio::test]
async fn an_unsupported_wit_version_is_refused_at_load() {
    let h = harness();
    let err = h
        .runtime
        .load(fixtures::FUTURE_WIT, PluginSettings::all_granted())
        .await
        .err()
        .expect("refused");
    match &err {
        Error::UnsupportedVersion {
            interface,
            supported,
        } => {
            assert!(interface.contains("@0.9.0"), "{interface}");
            assert_eq!(supported, "0.1.0, 0.2.0");
        }
        other => panic!("expected an unsupported version, got {other}"),
    }
    // The message names the version and the window, as the API answers it.
    let message = err.to_string();
    eprintln!("refused: {message}");
    assert!(
        message.contains("plateau:plugin/handler@0.9.0")
            && message.contains("plugin worlds 0.1.0 to 0.5.2"),
        "{message}"
    );
}

#[tokio::test]
async fn a_loaded_plugin_exposes_its_description() {
    let h = harness();
    let loaded = h.echo().await;
    let d = loaded.version.description();
    assert_eq!(d.prefixes, vec!["/echo".to_string()]);
    assert!(
        d.routes
            .iter()
            .any(|r| r.method == "PUT" && r.path == "/echo/kv/{key}")
    );
    assert_eq!(d.scopes[0].name, "echo:write");
    assert_eq!(d.subscriptions, vec!["echo.*".to_string()]);
    assert!(loaded.report.describe_fuel > 0);
    assert!(loaded.version.digest().starts_with("sha256:"));
}
