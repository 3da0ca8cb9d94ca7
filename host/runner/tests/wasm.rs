//! The Wasm runtime through the `Runner` trait: the hello app answers,
//! a guest that never ends is stopped by its CPU budget (`milliCpu`)
//! with a reason naming it, and a volume is preopened at its mount path:
//! what a replica writes there stays for the next, and nothing out of it
//! is reached.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use plateau_plugin_artifacts::apps::{HELLO_APP, SPIN_APP, VOLUME_APP};
use plateau_runner::wasm::WasmRunner;
use plateau_runner::{
    Artifact, Body, Error, LaunchSpec, Limits, LogSink, Runner, Stream, VolumeMount,
};

struct Discard;

impl LogSink for Discard {
    fn line(&self, _: Option<&str>, _stream: Stream, _line: String) {}
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

#[tokio::test]
async fn a_wasm_app_writes_to_its_preopened_volume_and_nowhere_else() {
    let runner = WasmRunner::new().unwrap();
    let volume = tempfile::tempdir().unwrap();
    // A link the host left in the volume leads nowhere either.
    std::os::unix::fs::symlink("/etc", volume.path().join("link")).unwrap();
    let mut launch = spec("volume", VOLUME_APP, 1000);
    launch.volumes = vec![VolumeMount {
        source: volume.path().to_owned(),
        path: "/data".into(),
    }];
    let app = runner.launch(launch).await.unwrap();
    for n in 1..=2 {
        let r = app.handle(get()).await.unwrap();
        let status = r.status();
        let text = r.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&text);
        assert_eq!(
            (status.as_u16(), &*text),
            (200, &*format!("count {n} escaped []"))
        );
    }
    let count = std::fs::read_to_string(volume.path().join("count")).unwrap();
    assert_eq!(count, "2");
    // A new launch (a redeploy) finds what the last one wrote.
    let mut again = spec("volume2", VOLUME_APP, 1000);
    again.volumes = vec![VolumeMount {
        source: volume.path().to_owned(),
        path: "/data".into(),
    }];
    let app = runner.launch(again).await.unwrap();
    let text = app
        .handle(get())
        .await
        .unwrap()
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(&text[..], b"count 3 escaped []");
}
