//! Components of every supported WIT version load and run side by side:
//! `plateau:plugin@0.1.0` (the fixtures), `@0.2.0` (`legacy-v0-2`), the
//! one-package-per-interface world of 0.3.0 (`legacy-v0-3`) and of the
//! SDK's newest world, 0.5.0, which imports kv@0.4.0 (the SDK's example).

use plateau_plugin_artifacts::{examples, fixtures};
use plateau_plugin_runtime::{Job, PluginSettings, WitVersion};

use crate::{harness, request, text, with_body};

#[tokio::test]
async fn a_component_of_0_2_0_runs_jobs_and_secrets() {
    let h = harness();
    let loaded = h
        .load(fixtures::LEGACY_V0_2, PluginSettings::all_granted())
        .await;
    assert_eq!(loaded.report.wit_version, WitVersion::V0_2);
    let imports = &loaded.report.imports;
    for name in [
        "plateau:plugin/kv@0.2.0",
        "plateau:plugin/scheduler@0.2.0",
        "plateau:plugin/secrets@0.2.0",
    ] {
        assert!(imports.iter().any(|i| i == name), "{name}: {imports:?}");
    }
    let version = loaded.version;

    let seal = with_body(
        request("POST", "/legacy/seal", "/legacy/seal", "", Some("org1")),
        "s3cret",
    );
    let outcome = version.handle(seal).await.expect("seal answers");
    assert_eq!(outcome.response.status, 200);
    assert_eq!(text(&outcome.response.body), "s3cret");

    let path = "/legacy/jobs/k1";
    let schedule = with_body(
        request("POST", "/legacy/jobs/{key}", path, "", Some("org1")),
        "the payload",
    );
    let outcome = version.handle(schedule).await.expect("schedule answers");
    assert_eq!(
        outcome.response.status,
        202,
        "{}",
        text(&outcome.response.body)
    );
    assert!(outcome.committed);
    let jobs = h.store.jobs();
    let (id, job) = jobs.iter().next().expect("one job stored");
    assert_eq!(
        (id.key.as_str(), job.payload.as_str()),
        ("k1", "the payload")
    );

    let run = Job {
        key: "k1".into(),
        organization_id: Some("org1".into()),
        payload: job.payload.clone(),
        due: job.due,
        attempt: 1,
    };
    let ran = version.on_job(run, None).await.expect("the job runs");
    assert_eq!(ran.result, Ok(()));
    assert!(ran.committed);

    let read = request("GET", "/legacy/kv/{key}", "/legacy/kv/k1", "", Some("org1"));
    let outcome = version.handle(read).await.expect("kv answers");
    assert_eq!(outcome.response.status, 200);
    assert_eq!(text(&outcome.response.body), "the payload");
}

#[tokio::test]
async fn a_component_of_0_3_0_imports_one_package_per_interface() {
    let h = harness();
    let loaded = h
        .load(fixtures::LEGACY_V0_3, PluginSettings::all_granted())
        .await;
    assert_eq!(loaded.report.wit_version, WitVersion::V0_3);
    let imports = &loaded.report.imports;
    assert!(
        imports.iter().any(|i| i == "plateau:kv/kv@0.3.0"),
        "{imports:?}"
    );
    assert!(
        !imports.iter().any(|i| i.starts_with("plateau:plugin/")),
        "a 0.3.0 component names no interface of the whole package: {imports:?}"
    );

    let put = with_body(
        request(
            "PUT",
            "/legacy3/kv/{key}",
            "/legacy3/kv/k1",
            "",
            Some("org1"),
        ),
        "kept by kv@0.3.0",
    );
    let outcome = loaded.version.handle(put).await.expect("legacy3 answers");
    assert_eq!(
        outcome.response.status,
        201,
        "{}",
        text(&outcome.response.body)
    );
    assert!(outcome.committed);
    let get = request(
        "GET",
        "/legacy3/kv/{key}",
        "/legacy3/kv/k1",
        "",
        Some("org1"),
    );
    let outcome = loaded.version.handle(get).await.expect("legacy3 answers");
    assert_eq!(text(&outcome.response.body), "kept by kv@0.3.0");
}

#[tokio::test]
async fn a_component_of_the_sdk_world_imports_kv_0_4_0() {
    let h = harness();
    let loaded = h
        .load(examples::HELLO_PLUGIN, PluginSettings::all_granted())
        .await;
    assert_eq!(loaded.report.wit_version, WitVersion::V0_3);
    let imports = &loaded.report.imports;
    assert!(
        imports.iter().any(|i| i == "plateau:kv/kv@0.4.0"),
        "{imports:?}"
    );

    let create = with_body(
        request("POST", "/notes", "/notes", "", Some("org1")),
        r#"{"title":"split","body":"one package per interface"}"#,
    );
    let outcome = loaded.version.handle(create).await.expect("notes answers");
    assert_eq!(
        outcome.response.status,
        201,
        "{}",
        text(&outcome.response.body)
    );
    assert!(outcome.committed);
}
