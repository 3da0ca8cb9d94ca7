//! The OpenAPI document as clients meet it: it validates (the
//! openapi-spec-validator package, another implementation than ours), each
//! operation has a unique id, a description and the headers it takes, and
//! a client generated from it (openapi-python-client) builds and drives a
//! short scenario against the server. One server, on SQLite.

use std::collections::BTreeSet;
use std::process::Stdio;

use plateau_testkit::Backend;
use serde_json::{Value, json};
use tokio::process::Command;

use super::start;

/// Runs `python3` (under `cargo xtask test`, the suite's venv) with `args`
/// in `dir`; its output, or the panic naming what to install.
async fn python(dir: &std::path::Path, args: &[&str], package: &str) -> String {
    let out = Command::new("python3")
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("python3 runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains("No module named"),
        "{package} is required: cargo xtask test installs it ({text})"
    );
    assert!(out.status.success(), "python3 {args:?} failed:\n{text}");
    text
}

fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            out.push((method.to_uppercase(), path.clone(), op));
        }
    }
    out
}

/// The scenario the generated client drives: the typed models and
/// functions of the generated package, not hand-written requests.
const SCENARIO: &str = r#"
import sys
from plateau_api_client import AuthenticatedClient
from plateau_api_client.api.account import me_get
from plateau_api_client.api.projects import projects_create, projects_get, projects_list, projects_delete
from plateau_api_client.models import CreateProject

url, token = sys.argv[1], sys.argv[2]
client = AuthenticatedClient(base_url=url, token=token, raise_on_unexpected_status=True)
me = me_get.sync(client=client)
assert me.organization.name, me
created = projects_create.sync(client=client, body=CreateProject(name="from the generated client"))
assert created.name == "from the generated client", created
got = projects_get.sync(client=client, id=created.id)
assert got.id == created.id, got
page = projects_list.sync(client=client, limit=50)
assert created.id in [p.id for p in page.items], page
gone = projects_delete.sync_detailed(client=client, id=created.id)
assert gone.status_code == 200, gone
from plateau_api_client.api.queues import queues_create, queues_messages
from plateau_api_client.models import QueuesNewQueue, QueuesNewMessage
queue = queues_create.sync(client=client, body=QueuesNewQueue(name="generated", visibility_timeout_seconds=30))
assert queue.visibility_timeout_seconds == 30, queue
sent = queues_messages.sync(client=client, name="generated", body=QueuesNewMessage(body="hello"))
assert sent.id and sent.duplicate is False, sent
print("scenario ok:", created.id, queue.name, sent.id)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_can_generate_from_the_document() {
    let server = start(Backend::Sqlite).await;
    let doc = server.anonymous().get("/openapi.json").await.json();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();

    // Our own reading of the rules first, for a precise message.
    let ops = operations(&doc);
    let mut ids = BTreeSet::new();
    for (method, path, op) in &ops {
        let id = op["operationId"].as_str().unwrap_or_default();
        assert!(!id.is_empty(), "{method} {path} has no operationId");
        assert!(
            ids.insert(id.to_owned()),
            "{method} {path} shares the id {id}"
        );
        assert!(
            op["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{method} {path} has no description"
        );
        let public = op["security"].as_array().is_some_and(|s| {
            s.iter()
                .any(|r| r.as_object().is_some_and(|o| o.is_empty()))
        });
        if method != "GET" && !public {
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            assert!(
                params
                    .iter()
                    .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header"),
                "{method} {path} does not document Idempotency-Key"
            );
        }
        if let Some(unauthorized) = op["responses"].get("401") {
            assert!(
                unauthorized["headers"].get("WWW-Authenticate").is_some(),
                "{method} {path}: its 401 does not name WWW-Authenticate"
            );
        }
    }
    eprintln!("{} operations, {} unique ids", ops.len(), ids.len());
    for id in [
        "apps.list",
        "apps.create",
        "databases.create",
        "caches.get",
        "queues.list",
        "apps.pause",
    ] {
        assert!(ids.contains(id), "no operation {id}: {ids:?}");
    }
    let upload = &doc["paths"]["/apps/{id}/source-upload/{uploadId}"]["put"]["requestBody"]["content"]
        ["application/octet-stream"]["schema"];
    assert_eq!(upload["format"], "binary", "{upload}");
    // A plugin's bodies come from the types its handlers use, with the
    // fields a create needs marked required for that operation only.
    let create = &doc["paths"]["/queues"]["post"];
    let body = &create["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(
        body["allOf"][0]["$ref"], "#/components/schemas/queues.NewQueue",
        "{create}"
    );
    assert_eq!(body["allOf"][1]["required"], json!(["name"]), "{create}");
    assert_eq!(
        create["responses"]["201"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/queues.QueueView",
        "{create}"
    );
    let view = &doc["components"]["schemas"]["queues.QueueView"];
    assert_eq!(
        view["properties"]["retentionSeconds"]["type"], "integer",
        "{view}"
    );

    // An implementation of the specification that is not ours.
    let out = python(
        dir.path(),
        &["-m", "openapi_spec_validator", "openapi.json"],
        "openapi-spec-validator",
    )
    .await;
    assert!(out.contains("OK"), "{out}");

    // A client generated from it builds and works.
    python(
        dir.path(),
        &[
            "-m",
            "openapi_python_client",
            "generate",
            "--path",
            "openapi.json",
            "--meta",
            "none",
            "--output-path",
            "plateau_api_client",
        ],
        "openapi-python-client",
    )
    .await;
    std::fs::write(dir.path().join("scenario.py"), SCENARIO).unwrap();
    let out = python(
        dir.path(),
        &[
            "scenario.py",
            &format!("{}/api/v1", server.url),
            &server.token,
        ],
        "openapi-python-client",
    )
    .await;
    eprintln!("{}", out.trim());
}

/// Two areas of the API never give one component schema name to two
/// different schemas: merged into one document, one would silently
/// describe the other's operations (as `Metrics` once did for the caches'
/// metrics and the usage series).
#[test]
fn component_schema_names_are_unique_across_areas() {
    let collisions = plateau::serve::schema_collisions();
    assert!(
        collisions.is_empty(),
        "component schemas defined differently by two areas (rename one): {collisions:?}"
    );
}
