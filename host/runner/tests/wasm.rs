//! The Wasm runtime through the `Runner` trait: the hello app answers,
//! and a guest that never ends is stopped by its CPU budget (`milliCpu`)
//! with a reason naming it.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use plateau_plugin_artifacts::apps::{HELLO_APP, SPIN_APP};
use plateau_runner::wasm::WasmRunner;
use plateau_runner::{Artifact, Body, Error, LaunchSpec, Limits, LogSink, Runner, Stream};

struct Discard;

impl LogSink for Discard {
    fn line(&self, _stream: Stream, _line: String) {}
}

fn spec(digest: &str, bytes: &'static [u8], milli_cpu: u32) -> LaunchSpec {
    LaunchSpec {
        app_id: "app_test".into(),
        deployment_id: format!("dpl_{digest}"),
        artifact: Artifact::Wasm {
            digest: digest.into(),
            bytes: Bytes::from_static(bytes),
        },
        volumes: Vec::new(),
        env: Vec::new(),
        limits: Limits {
            memory_mb: 64,
            milli_cpu,
            replicas: 2,
        },
        logs: Arc::new(Discard),
    }
}

fn get() -> http::Request<Body> {
    http::Request::get("http://x.apps.localhost/")
        .body(Empty::<Bytes>::new().map_err(|n| match n {}).boxed_unsync())
        .unwrap()
}

#[tokio::test]
async fn the_cpu_budget_stops_a_runaway_guest() {
    let runner = WasmRunner::new().unwrap();
    let hello = runner.launch(spec("hello", HELLO_APP, 10)).await.unwrap();
    let r = hello.handle(get()).await.unwrap();
    assert_eq!(r.status(), 200);
    let text = r.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&text[..], b"hello from v1");

    let spin = runner.launch(spec("spin", SPIN_APP, 50)).await.unwrap();
    match spin.handle(get()).await {
        Err(Error::Failed(reason)) => assert!(reason.contains("milliCpu"), "{reason}"),
        Err(e) => panic!("the runaway guest failed otherwise: {e}"),
        Ok(r) => panic!("the runaway guest answered {}", r.status()),
    }
    // The host goes on serving after the runaway was stopped.
    assert_eq!(hello.handle(get()).await.unwrap().status(), 200);
}
