//! Edge filters: the template filter's verdicts from a real component, and
//! the failures the edge must count (trap, deadline, fuel) named as for
//! plugins; plus the cost of one pass verdict, printed.

use std::time::{Duration, Instant};

use plateau_contract::edge::{Action, RequestHead, ResponseHead, Verdict};
use plateau_plugin_artifacts::{examples, fixtures};
use plateau_plugin_runtime::{Error, ExecError, PluginLimits};

use crate::harness;

fn head(path: &str) -> RequestHead {
    RequestHead {
        method: "GET".into(),
        path: path.into(),
        host: "hello.apps.localhost".into(),
        headers: vec![("user-agent".into(), "test".into())],
        client_ip: "127.0.0.1".into(),
        app_id: "app_test".into(),
        ..RequestHead::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_template_filter_blocks_redirects_and_adds_headers() {
    let h = harness();
    let filter = h
        .runtime
        .load_edge_filter(examples::HELLO_EDGE_FILTER, PluginLimits::default())
        .await
        .expect("the template filter loads");
    assert_eq!(filter.info().name, "hello-edge-filter");
    assert!(filter.info().response_phase);

    let blocked = filter.on_request(head("/admin/users")).await.unwrap();
    let Action::Block { status, .. } = blocked.action else {
        panic!("/admin is blocked: {blocked:?}");
    };
    assert_eq!(status, 403);
    assert_eq!(blocked.facts[0].value, "no-admin");
    assert_eq!(
        filter.on_request(head("/old/x")).await.unwrap(),
        Verdict::redirect(308, "/new/x")
    );
    assert_eq!(
        filter.on_request(head("/")).await.unwrap(),
        Verdict::set_header("x-hello-filter", "passed")
    );
    let changes = filter
        .on_response(
            head("/"),
            ResponseHead {
                status: 200,
                headers: Vec::new(),
            },
        )
        .await
        .unwrap();
    assert_eq!(changes.set[0].0, "x-content-type-options");

    // The per-request cost of a verdict: a fresh instance each time.
    let n = 200;
    let started = Instant::now();
    for _ in 0..n {
        filter.on_request(head("/")).await.unwrap();
    }
    eprintln!(
        "edge filter: {:.1} µs per on-request call (fresh instance, {n} calls)",
        started.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misbehaving_filter_fails_by_name_and_others_keep_answering() {
    let h = harness();
    let limits = PluginLimits {
        deadline: Duration::from_millis(300),
        fuel: 1 << 50,
        ..PluginLimits::default()
    };
    let bad = h
        .runtime
        .load_edge_filter(fixtures::EDGE_MISBEHAVE, limits.clone())
        .await
        .expect("the fixture loads");
    let trapped = bad.on_request(head("/trap")).await.unwrap_err();
    assert!(matches!(trapped, ExecError::Trap { .. }), "{trapped}");
    assert_eq!(trapped.plugin(), "edge-misbehave");
    let spun = bad.on_request(head("/spin")).await.unwrap_err();
    assert!(matches!(spun, ExecError::DeadlineExceeded { .. }), "{spun}");
    let refused = bad.on_request(head("/bad-status")).await.unwrap();
    assert!(refused.problem().is_some(), "the edge refuses a 200 block");
    assert_eq!(bad.on_request(head("/")).await.unwrap(), Verdict::pass());

    let starved = h
        .runtime
        .load_edge_filter(
            fixtures::EDGE_MISBEHAVE,
            PluginLimits {
                fuel: 5_000_000,
                ..limits
            },
        )
        .await
        .unwrap();
    let out = starved.on_request(head("/spin")).await.unwrap_err();
    assert!(matches!(out, ExecError::FuelExhausted { .. }), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_edge_filters_load_as_edge_filters() {
    let h = harness();
    let Err(err) = h
        .runtime
        .load_edge_filter(fixtures::ECHO, PluginLimits::default())
        .await
    else {
        panic!("a plugin is no edge filter");
    };
    assert!(matches!(err, Error::NotAnEdgeFilter(_)), "{err}");
    assert!(err.to_string().contains("imports only WASI"), "{err}");
    let plugin = h
        .runtime
        .load(examples::HELLO_EDGE_FILTER, Default::default())
        .await;
    assert!(plugin.is_err(), "an edge filter is no API plugin");
}
