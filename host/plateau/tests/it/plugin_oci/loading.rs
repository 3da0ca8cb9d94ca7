//! A plugin pushed with the CLI is a CNCF Wasm artifact to independent
//! clients (skopeo, the `oras` Python package), and the host loads it by
//! tag and by digest, through the admin API and the CLI, then serves it.

use std::process::Command;

use plateau_plugin_artifacts::examples;
use plateau_testkit::Backend;
use serde_json::{Value, json};

use super::{Env, success_json};
use crate::registry::{require_tool, sha256};

crate::on_both_backends!(pushed_plugins_load_by_tag_and_by_digest);

const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";

/// `skopeo inspect --raw [--config]` of `reference`, as JSON.
fn skopeo_inspect(env: &Env, reference: &str, config: bool) -> Value {
    let creds = format!("plateau:{}", env.reader);
    let mut cmd = Command::new("skopeo");
    cmd.args(["inspect", "--raw", "--tls-verify=false", "--creds", &creds]);
    if config {
        cmd.arg("--config");
    }
    let out = cmd
        .arg(format!("docker://{reference}"))
        .output()
        .expect("skopeo runs");
    assert!(
        out.status.success(),
        "skopeo: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

const ORAS_PULL: &str = r#"
import json, sys
import oras.provider
host, token, target, outdir = sys.argv[1:5]
reg = oras.provider.Registry(hostname=host, insecure=True, tls_verify=False)
reg.auth.set_basic_auth("plateau", token)
print(json.dumps(reg.pull(target=target, outdir=outdir)))
"#;

async fn pushed_plugins_load_by_tag_and_by_digest(backend: Backend) {
    require_tool("skopeo", "apt-get install -y skopeo");
    let env = Env::start(backend).await;
    let wasm = examples::HELLO_PLUGIN;
    let tagged = env.reference("plugins/notes:v1");
    let pushed = env.push(wasm, &tagged).await;
    let digest = pushed["digest"].as_str().unwrap().to_owned();
    let layer_digest = sha256(wasm);
    assert_eq!(pushed["layer"]["digest"], layer_digest.as_str());
    assert_eq!(pushed["layer"]["size"], wasm.len());
    assert_eq!(pushed["layer"]["uploaded"], true);

    // skopeo sees the CNCF layout: the Wasm config and one application/wasm layer.
    let manifest = skopeo_inspect(&env, &tagged, false);
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(manifest["config"]["mediaType"], CONFIG_MEDIA_TYPE);
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "{manifest}");
    assert_eq!(layers[0]["mediaType"], "application/wasm");
    assert_eq!(layers[0]["digest"], layer_digest.as_str());
    let config = skopeo_inspect(&env, &tagged, true);
    assert_eq!(
        (&config["architecture"], &config["os"]),
        (&json!("wasm"), &json!("wasip2"))
    );
    assert_eq!(config["layerDigests"], json!([layer_digest]));
    assert!(
        config["component"]["exports"]
            .as_array()
            .unwrap()
            .contains(&json!("plateau:handler/handler@0.3.0")),
        "{config}"
    );
    assert!(
        config["component"]["imports"]
            .as_array()
            .unwrap()
            .contains(&json!("plateau:kv/kv@0.4.0")),
        "{config}"
    );
    // oras pulls the component back byte for byte, under its file name.
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new("python3")
        .args(["-c", ORAS_PULL, &env.reg.host, &env.reader, &tagged])
        .arg(out_dir.path())
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "oras: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(out_dir.path().join("component.wasm")).unwrap(),
        wasm,
        "byte for byte"
    );

    // The admin API documents both ways to load.
    let doc = env.reg.server.anonymous().get("/openapi.json").await.json();
    let content = &doc["paths"]["/admin/plugins/{name}/versions"]["post"]["requestBody"]["content"];
    assert!(
        content["application/wasm"].is_object() && content["application/json"].is_object(),
        "{content}"
    );

    // Nothing serves /notes yet.
    let c = env.reg.server.client();
    assert_eq!(c.get("/notes").await.status, 404);

    // By tag, through the admin API: loaded, activated, recorded with the
    // reference pinned to the manifest digest it resolved to.
    let r = env.api_load("notes", env.by_reference(&tagged, true)).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let version = r.json();
    assert_eq!(
        version["digest"],
        layer_digest.as_str(),
        "the digest it runs"
    );
    assert_eq!(version["source"], format!("{tagged}@{digest}"));
    let note = c.post("/notes", json!({ "title": "from oci" })).await;
    assert_eq!(note.status, 201, "{}", note.text());
    assert_eq!(note.header("plateau-plugin"), Some("notes@0.1.0"));

    // By digest, through the admin API, with an oci:// prefix.
    let pinned = pushed["pinned"].as_str().unwrap().to_owned();
    assert_eq!(
        pinned,
        format!("{}@{digest}", env.reference("plugins/notes"))
    );
    let r = env
        .api_load("notes", env.by_reference(&format!("oci://{pinned}"), false))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["digest"], layer_digest.as_str());

    // Through the CLI, by tag and by digest.
    for reference in [&tagged, &pinned] {
        let loaded = success_json(&env.cli_load("notes", reference, true).await);
        assert_eq!(loaded["digest"], layer_digest.as_str(), "{reference}");
    }
    // Pushed again under another tag, the component is not sent twice and
    // loads as the same stored version.
    let retagged = env.reference("plugins/notes:latest");
    let again = env.push(wasm, &retagged).await;
    assert_eq!(
        (&again["layer"]["digest"], &again["layer"]["uploaded"]),
        (&json!(layer_digest), &json!(false))
    );
    let r = env
        .api_load("notes", env.by_reference(&retagged, true))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());

    // The same component is one stored version, whatever the route.
    let versions = env.versions("notes").await;
    assert_eq!(versions.len(), 1, "{versions:?}");
    assert_eq!(versions[0]["source"], format!("{tagged}@{digest}"));
    assert_eq!(
        c.get("/notes").await.json()["total"],
        1,
        "the note survives reloads"
    );
    // The load is audited with its source.
    let audit = env.admin.get("/admin/events").await.json();
    assert!(
        audit["items"].as_array().unwrap().iter().any(|e| {
            e["type"] == "plugin.version.loaded"
                && e["data"]["source"] == format!("{tagged}@{digest}").as_str()
        }),
        "{audit}"
    );
}
