//! Plugins over HTTP: loading from built components, scopes and public
//! routes, limits, capability grants, egress, transactional writes, hot
//! swap and rollback.

use std::time::Duration;

use plateau_plugin_artifacts::{examples, fixtures};
use plateau_testkit::{Backend, Client, Server, ServerOptions};
use reqwest::Method;
use serde_json::{Value, json};

use crate::{event_types, start, start_with};

crate::on_both_backends!(
    components_load_and_routes_are_guarded,
    limits_fail_only_the_misbehaving_plugin,
    ungranted_capabilities_are_refused_at_load,
    writes_commit_only_on_success,
    hot_swap_under_load_and_rollback,
    egress_is_guarded,
);

pub async fn admin(s: &Server) -> Client {
    s.anonymous().with_cookie(&crate::admin::login(s).await)
}

/// Uploads `wasm` as plugin `name`; returns the response.
pub async fn upload(
    admin: &Client,
    name: &str,
    wasm: &[u8],
    activate: bool,
) -> plateau_testkit::Response {
    admin
        .request(
            Method::POST,
            &format!("/admin/plugins/{name}/versions?activate={activate}"),
        )
        .body("application/wasm", wasm.to_vec())
        .send()
        .await
}

async fn components_load_and_routes_are_guarded(backend: Backend) {
    let s = start(backend).await;
    let admin = admin(&s).await;
    let r = upload(&admin, "notes", examples::HELLO_PLUGIN, true).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.json()["digest"].as_str().unwrap().starts_with("sha256:"));
    let c = s.client();
    let note = c
        .post(
            "/notes",
            json!({ "title": "hello", "body": "world", "public": true }),
        )
        .await;
    assert_eq!(note.status, 201, "{}", note.text());
    assert_eq!(
        note.header("plateau-plugin")
            .map(|v| v.starts_with("notes@")),
        Some(true)
    );
    let id = note.json()["id"].as_str().unwrap().to_owned();
    // Public route: no token needed.
    let public = s.anonymous().get(&format!("/notes/public/{id}")).await;
    assert_eq!(public.status, 200, "{}", public.text());
    assert_eq!(public.json()["title"], "hello");
    // Scoped routes: the host refuses before the plugin runs.
    assert_eq!(s.anonymous().get("/notes").await.status, 401);
    let reader = crate::mint(&s, json!({ "scopes": ["notes:read"] })).await;
    let r = s
        .anonymous()
        .with_token(&reader)
        .post("/notes", json!({ "title": "x" }))
        .await;
    assert_eq!(
        (r.status, r.json()["scope"].as_str()),
        (403, Some("notes:write"))
    );
    // Plugin lists paginate like core lists.
    c.post("/notes", json!({ "title": "second" })).await;
    let page = s
        .anonymous()
        .with_token(&reader)
        .get("/notes?limit=1")
        .await
        .json();
    assert_eq!(page["total"], 2);
    let cursor = page["nextCursor"].as_str().unwrap();
    let r = c
        .get(&format!(
            "/notes?limit=1&cursor={}x",
            &cursor[..cursor.len() - 1]
        ))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(c.get("/notes?limit=500").await.code(), "invalid_limit");
    // Idempotency applies to plugin routes too.
    let first = c
        .request(Method::POST, "/notes")
        .idempotency_key("n1")
        .json(&json!({ "title": "once" }))
        .send()
        .await;
    let again = c
        .request(Method::POST, "/notes")
        .idempotency_key("n1")
        .json(&json!({ "title": "once" }))
        .send()
        .await;
    assert_eq!(
        (first.status, again.header("idempotent-replayed")),
        (201, Some("true"))
    );
    assert_eq!(first.bytes, again.bytes);
    // The plugin's routes and scopes are in the OpenAPI document.
    let doc = s.anonymous().get("/openapi.json").await.json();
    assert_eq!(
        doc["paths"]["/notes"]["post"]["security"][0]["bearer"],
        json!(["notes:write"])
    );
    assert_eq!(
        doc["paths"]["/notes/public/{id}"]["get"]["security"][0],
        json!({})
    );
    // The built-in flags plugin serves too.
    assert_eq!(c.get("/flags").await.status, 200);
    // Plugin events reach the organisation's timeline.
    let events = c.get("/events?type=notes.*").await.json();
    assert!(events["total"].as_i64().unwrap() >= 2, "{events}");
    // Every load and switch is a platform audit event.
    let audit = admin.get("/admin/events").await.json();
    let kinds = event_types(&audit);
    assert!(
        kinds.contains(&"plugin.version.loaded") && kinds.contains(&"plugin.switched"),
        "{kinds:?}"
    );
}

async fn limits_fail_only_the_misbehaving_plugin(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("plugins.json");
    let limits = json!({ "plugins": {
        "spin-loop": { "deadlineMs": 500 },
        "alloc-bomb": { "memoryMb": 16 },
    } });
    std::fs::write(&config, limits.to_string()).unwrap();
    let s = start_with(
        ServerOptions::new(backend).env("PLATEAU_PLUGINS_CONFIG", config.to_str().unwrap()),
    )
    .await;
    let admin = admin(&s).await;
    for (name, wasm) in [
        ("echo", fixtures::ECHO),
        ("spin-loop", fixtures::SPIN_LOOP),
        ("alloc-bomb", fixtures::ALLOC_BOMB),
        ("trap", fixtures::TRAP),
    ] {
        let r = upload(&admin, name, wasm, true).await;
        assert_eq!(r.status, 201, "{name}: {}", r.text());
    }
    let c = s.client();
    let echo = |c: Client| async move { c.post("/echo/say", json!({ "hi": 1 })).await.status };
    let bad = async {
        let spin = c.get("/spin-loop/forever").await;
        let bomb = c.get("/alloc-bomb/boom").await;
        let trap = c.get("/trap/panic").await;
        (spin, bomb, trap)
    };
    let good = async {
        let mut statuses = Vec::new();
        for _ in 0..20 {
            statuses.push(echo(c.clone()).await);
        }
        statuses
    };
    let ((spin, bomb, trap), statuses) = tokio::join!(bad, good);
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    for (r, plugin) in [(&spin, "spin-loop"), (&bomb, "alloc-bomb"), (&trap, "trap")] {
        assert!(r.status >= 500, "{plugin}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("application/problem+json"));
        assert!(
            r.json()["detail"].as_str().unwrap().contains(plugin),
            "{}",
            r.text()
        );
    }
    assert_eq!(
        (spin.status, spin.code().as_str()),
        (504, "plugin_deadline_exceeded"),
        "{}",
        spin.text()
    );
    assert_eq!(bomb.code(), "plugin_memory_limit", "{}", bomb.text());
    assert_eq!(trap.code(), "plugin_trap", "{}", trap.text());
    assert_eq!(
        echo(c.clone()).await,
        200,
        "the well-behaved plugin still answers"
    );
}

async fn ungranted_capabilities_are_refused_at_load(backend: Backend) {
    let s = start(backend).await;
    let admin = admin(&s).await;
    let r = upload(&admin, "ungranted", fixtures::UNGRANTED, true).await;
    assert_eq!((r.status, r.code().as_str()), (400, "plugin_rejected"));
    assert!(
        r.text().contains("outbound-http") || r.text().contains("http"),
        "{}",
        r.text()
    );
    let r = upload(&admin, "future-wit", fixtures::FUTURE_WIT, true).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("0.9.0"), "{}", r.text());
    assert!(
        r.text().contains("plugin worlds 0.1.0 to 0.5.2"),
        "the refusal names the support window: {}",
        r.text()
    );
    // A component that is not what the URL says is refused.
    let r = upload(&admin, "not-echo", fixtures::ECHO, true).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        s.client().get("/ungranted/x").await.status,
        404,
        "nothing was installed"
    );
}

async fn writes_commit_only_on_success(backend: Backend) {
    let s = start(backend).await;
    let admin = admin(&s).await;
    assert_eq!(
        upload(&admin, "echo", fixtures::ECHO, true).await.status,
        201
    );
    let c = s.client();
    let put = |key: &str, status: u16, value: &str| {
        c.request(Method::PUT, &format!("/echo/kv/{key}?status={status}"))
            .body("text/plain", value.to_owned())
            .send()
    };
    assert_eq!(put("kept", 201, "v").await.status, 201);
    assert_eq!(c.get("/echo/kv/kept").await.text(), "v");
    assert_eq!(put("client-error", 422, "v").await.status, 422);
    assert_eq!(
        c.get("/echo/kv/client-error").await.status,
        200,
        "4xx commits"
    );
    assert_eq!(put("rolled-back", 503, "v").await.status, 503);
    assert_eq!(
        c.get("/echo/kv/rolled-back").await.status,
        404,
        "5xx discards"
    );
    let r = c.post("/echo/trap/after-write", json!({})).await;
    assert!(r.status >= 500);
    assert_eq!(
        c.get("/echo/kv/after-write").await.status,
        404,
        "a trap leaves no partial write"
    );
    // Tenants never see each other's plugin data.
    let other = s
        .anonymous()
        .with_token(&crate::create_org(&s, "Other", "free").await);
    assert_eq!(other.get("/echo/kv/kept").await.status, 404);
}

async fn hot_swap_under_load_and_rollback(backend: Backend) {
    let s = start(backend).await;
    let admin = admin(&s).await;
    assert_eq!(
        upload(&admin, "echo", fixtures::ECHO, true).await.status,
        201
    );
    let c = s.client();
    assert_eq!(
        c.request(Method::PUT, "/echo/kv/data")
            .body("text/plain", "from v1")
            .send()
            .await
            .status,
        200
    );
    let v2 = upload(&admin, "echo", fixtures::ECHO_V2, false)
        .await
        .json();
    let digest2 = v2["digest"].as_str().unwrap().to_owned();
    let load = (0..4).map(|_| {
        let c = c.clone();
        async move {
            let mut seen = Vec::new();
            for _ in 0..40 {
                let r = c.get("/echo/version").await;
                assert_eq!(r.status, 200, "{}", r.text());
                seen.push(r.text());
            }
            seen
        }
    });
    let switch = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let r = admin
            .post("/admin/plugins/echo/switch", json!({ "digest": digest2 }))
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
    };
    let (seen, ()) = tokio::join!(futures::future::join_all(load), switch);
    let all: Vec<String> = seen.into_iter().flatten().collect();
    assert_eq!(all.len(), 160, "zero failed requests");
    assert_eq!(c.get("/echo/version").await.text(), "2.0.0");
    assert_eq!(
        c.get("/echo/kv/data").await.text(),
        "from v1",
        "data survives the swap"
    );
    let r = admin.post("/admin/plugins/echo/rollback", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get("/echo/version").await.text(), "1.0.0");
    let listed = admin.get("/admin/plugins").await.json();
    let echo: &Value = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "echo")
        .unwrap();
    assert_eq!(echo["versions"].as_array().unwrap().len(), 2);
    assert_eq!(echo["previousDigest"], digest2.as_str());
}

async fn egress_is_guarded(backend: Backend) {
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = upstream.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = upstream.accept().await else {
                return;
            };
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = [0u8; 2048];
                let _ = sock.read(&mut buf).await;
                let _ = sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 8\r\nconnection: close\r\n\r\nupstream").await;
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("plugins.json");
    let grants = json!({ "plugins": { "egress": { "grants": ["http"], "outboundHosts": ["127.0.0.1", "169.254.169.254", "localhost"] } } });
    std::fs::write(&config, grants.to_string()).unwrap();
    let mut options =
        ServerOptions::new(backend).env("PLATEAU_PLUGINS_CONFIG", config.to_str().unwrap());
    let guarded = start_with(options.clone()).await;
    let admin_c = admin(&guarded).await;
    assert_eq!(
        upload(&admin_c, "egress", fixtures::EGRESS, true)
            .await
            .status,
        201
    );
    let fetch = |c: Client, url: String| async move {
        c.request(Method::POST, "/egress/fetch")
            .body("text/plain", url)
            .send()
            .await
    };
    for url in [
        format!("http://127.0.0.1:{port}/"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        format!("http://localhost:{port}/"),
    ] {
        let r = fetch(guarded.client(), url.clone()).await;
        assert_eq!(r.status, 502, "{url}: {}", r.text());
        assert!(
            r.text().to_lowercase().contains("refused") || r.text().contains("AddressRefused"),
            "{url}: {}",
            r.text()
        );
    }
    let r = fetch(guarded.client(), "http://example.invalid/".to_owned()).await;
    assert_eq!(r.status, 502, "hosts that were not granted are refused");
    // The operator exempts loopback: now it is reachable.
    options = options.env("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8,::1/128");
    let open = start_with(options).await;
    let admin_o = admin(&open).await;
    assert_eq!(
        upload(&admin_o, "egress", fixtures::EGRESS, true)
            .await
            .status,
        201
    );
    let r = fetch(open.client(), format!("http://127.0.0.1:{port}/")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("upstream"));
    let r = fetch(
        open.client(),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    )
    .await;
    assert_eq!(r.status, 502, "metadata stays refused: {}", r.text());
}
