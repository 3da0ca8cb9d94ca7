//! The edge's CDN and WebSocket upgrades (issue 30), on one server and
//! one Linux app: a busybox shell (`edge-app.sh` under `nc -ll -e`) that
//! answers with the caching headers its query names and echoes WebSocket
//! frames. The CDN: off until `PUT /apps/{id}/cdn`, then hits with `Age`,
//! misses for `no-store` and `private`, `s-maxage`, `ETag` revalidation
//! and a client's own `If-None-Match`, `Vary`, purges by the route's
//! prefix and by a deployment going live, its counters, events, and bad
//! input naming the field. WebSocket: an echo through the edge over HTTP
//! and over HTTPS (the wildcard certificate of the apps domain). Needs
//! root, runc, busybox-static, openssl and python3.

use std::path::Path;

use plateau_testkit::oci::{ImagePusher, busybox_layer_with};
use plateau_testkit::{Backend, ServerOptions};
use serde_json::{Value, json};

use super::{Apps, id, slug};

const APP: &[u8] = include_bytes!("edge-app.sh");

/// One answer through the edge: status, `X-Cache`, `Age`, body.
#[derive(Debug)]
struct Got {
    status: u16,
    cache: String,
    age: Option<u64>,
    body: String,
}

async fn get(env: &Apps, slug: &str, path: &str, headers: &[(&str, &str)]) -> Got {
    let mut req = reqwest::Client::new()
        .get(format!("{}{path}", env.server.edge_url))
        .header("host", format!("{slug}.apps.localhost"));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let r = req.send().await.unwrap();
    let header = |name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (status, cache, age) = (
        r.status().as_u16(),
        header("x-cache").unwrap_or_default(),
        header("age").map(|a| a.parse().unwrap()),
    );
    Got {
        status,
        cache,
        age,
        body: r.text().await.unwrap(),
    }
}

/// A self-signed certificate for `*.apps.localhost` and its key, written
/// to `dir` by openssl.
fn wildcard_certificate(dir: &Path) -> (String, String) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let out = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=*.apps.localhost"])
        .args(["-addext", "subjectAltName=DNS:*.apps.localhost"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    (path(&cert), path(&key))
}

/// A WebSocket client (Python's standard library): the handshake with
/// RFC 6455's sample key, then each argument sent as a masked text frame
/// and read back; prints the accept key and the echoes, one a line.
const WEBSOCKET: &str = r#"
import os, socket, ssl, sys
host, port, name, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.create_connection((host, port), timeout=30)
if ca:
    s = ssl.create_default_context(cafile=ca).wrap_socket(s, server_hostname=name)
s.sendall(("GET /chat HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" % name).encode())
head = b""
while not head.endswith(b"\r\n\r\n"):
    head += s.recv(1)
lines = head.decode().split("\r\n")
print(lines[0])
print([l.split(": ", 1)[1] for l in lines if l.lower().startswith("sec-websocket-accept")][0])
def exactly(n):
    data = b""
    while len(data) < n:
        more = s.recv(n - len(data))
        if not more:
            raise SystemExit("the connection closed")
        data += more
    return data
for message in sys.argv[5:]:
    data, mask = message.encode(), os.urandom(4)
    s.sendall(bytes([0x81, 0x80 | len(data)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
    b0, length = exactly(2)
    print(exactly(length).decode())
"#;

/// Echoes through the edge at `port` (over TLS trusting `ca` when given).
pub(crate) async fn websocket(port: u16, name: &str, ca: &str) -> Vec<String> {
    let out = tokio::process::Command::new("python3")
        .args(["-c", WEBSOCKET, "127.0.0.1", &port.to_string(), name, ca])
        .args(["hello", "a second, longer message through the edge"])
        .output()
        .await
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines().map(str::to_owned).collect()
}

/// The edge app's image (`edge-app.sh` under busybox `nc`), pushed.
pub(crate) async fn edge_app_image(env: &Apps) -> String {
    let registry = ImagePusher::new(&env.server.url, &env.token);
    let layer = busybox_layer_with(&[("bin/edge-app", APP)]);
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Cmd": ["/bin/sh", "-c", "exec nc -ll -p $PORT -e /bin/edge-app"] },
        "rootfs": { "type": "layers", "diff_ids": [] },
    }))
    .unwrap();
    let repo = format!("{}/edge-app", env.org);
    registry
        .push_image(&repo, "v1", &config, &layer, false)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cdn_and_websockets_through_the_edge() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = wildcard_certificate(certs.path());
    let tls_port = plateau_testkit::free_port();
    let options = ServerOptions::new(Backend::Sqlite)
        .env("PLATEAU_EDGE_TLS_LISTEN", &format!("127.0.0.1:{tls_port}"))
        .env("PLATEAU_EDGE_TLS_CERT", &cert)
        .env("PLATEAU_EDGE_TLS_KEY", &key);
    let env = Apps::start_with(options).await;
    let c = env.client();
    let image = edge_app_image(&env).await;
    let app = env.deployed("Cached", &image).await;
    let (app_id, slug) = (id(&app), slug(&app));
    let cdn = format!("/apps/{app_id}/cdn");

    // WebSocket echoes through the edge, over HTTP and over HTTPS.
    let name = format!("{slug}.apps.localhost");
    let edge_port: u16 = env
        .server
        .edge_url
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let want = [
        "HTTP/1.1 101 Switching Protocols",
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
        "hello",
        "a second, longer message through the edge",
    ];
    assert_eq!(websocket(edge_port, &name, "").await, want);
    assert_eq!(websocket(tls_port, &name, &cert).await, want);

    // Off by default; bad input names the field.
    let r = c.get(&cdn).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["enabled"], false);
    assert_eq!(get(&env, &slug, "/a?cc=max-age=60", &[]).await.cache, "");
    for (body, field) in [
        (json!({ "enabled": "yes" }), "enabled"),
        (json!({ "enabled": true, "ttl": 5 }), "ttl"),
    ] {
        let r = c.put(&cdn, body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.json()["errors"][0]["field"], field, "{}", r.text());
    }
    for prefix in ["assets/", "/a b", ""] {
        let r = c
            .post(&format!("{cdn}/purge"), json!({ "prefix": prefix }))
            .await;
        assert_eq!(r.status, 400, "{prefix}: {}", r.text());
        assert_eq!(r.json()["errors"][0]["field"], "prefix", "{}", r.text());
    }
    let r = c.put(&cdn, json!({ "enabled": true })).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["enabled"], true);

    // Fresh answers are hits with their age; no-store and private are not kept.
    for (path, stored) in [
        ("/a?cc=max-age=60", true),
        ("/s?cc=max-age=0,s-maxage=60", true),
        ("/n?cc=no-store", false),
        ("/p?cc=private,max-age=60", false),
    ] {
        let first = get(&env, &slug, path, &[]).await;
        assert_eq!(
            (first.status, first.cache.as_str()),
            (200, "MISS"),
            "{path}"
        );
        let second = get(&env, &slug, path, &[]).await;
        if stored {
            assert_eq!(second.cache, "HIT", "{path}");
            assert_eq!(second.body, first.body, "{path}");
            assert!(second.age.is_some_and(|a| a < 60), "{path}: {second:?}");
        } else {
            assert_eq!(second.cache, "MISS", "{path}");
            assert_ne!(second.body, first.body, "{path}: the app answers again");
        }
    }

    // ETag: a stale response is revalidated (the app answers 304), and a
    // client's own matching If-None-Match gets a 304.
    let first = get(&env, &slug, "/e?cc=no-cache&etag=v1", &[]).await;
    let again = get(&env, &slug, "/e?cc=no-cache&etag=v1", &[]).await;
    assert_eq!(
        (again.cache.as_str(), again.body.as_str()),
        ("REVALIDATED", first.body.as_str())
    );
    let own = get(
        &env,
        &slug,
        "/e?cc=no-cache&etag=v1",
        &[("if-none-match", "\"v1\"")],
    )
    .await;
    assert_eq!((own.status, own.body.as_str()), (304, ""));

    // Vary: one stored answer per language.
    let vary = "/v?cc=max-age=60&vary=accept-language";
    let fr = get(&env, &slug, vary, &[("accept-language", "fr")]).await;
    let en = get(&env, &slug, vary, &[("accept-language", "en")]).await;
    assert_eq!((fr.cache.as_str(), en.cache.as_str()), ("MISS", "MISS"));
    let fr_again = get(&env, &slug, vary, &[("accept-language", "fr")]).await;
    assert_eq!(
        (fr_again.cache.as_str(), fr_again.body.as_str()),
        ("HIT", fr.body.as_str())
    );

    // A purge by prefix drops what is under it only.
    let r = c
        .post(&format!("{cdn}/purge"), json!({ "prefix": "/a" }))
        .await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(
        get(&env, &slug, "/a?cc=max-age=60", &[]).await.cache,
        "MISS"
    );
    assert_eq!(
        get(&env, &slug, "/s?cc=max-age=0,s-maxage=60", &[])
            .await
            .cache,
        "HIT"
    );

    // The counters.
    let stats = c.get(&cdn).await.json()["stats"].clone();
    eprintln!("cdn: {stats}");
    assert_eq!(stats["hits"], 4, "{stats}");
    assert_eq!(stats["revalidated"], 2, "{stats}");
    assert!(stats["hitRatio"].as_f64().unwrap() > 0.3, "{stats}");
    assert!(stats["bytesServed"].as_u64().unwrap() > 0, "{stats}");
    assert!(stats["entries"].as_u64().unwrap() >= 3, "{stats}");
    // Its bytes in the edge's memory, within its fair share of it.
    let memory = stats["memoryBytes"].as_u64().unwrap();
    assert!(memory > 0, "{stats}");
    assert!(
        stats["memoryShareBytes"].as_u64().unwrap() >= memory,
        "{stats}"
    );

    // Another deployment going live purges the app.
    let r = c
        .post(
            &format!("/apps/{app_id}/deployments"),
            json!({ "image": image }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let deployment = env.settled(&app_id, &id(&r.json())).await;
    assert_eq!(deployment["status"], "live", "{deployment}");
    let after = crate::until(&c, &cdn, "the new deployment's CDN", |v: &Value| {
        v["stats"]["entries"] == 0
    })
    .await;
    assert_eq!(after["enabled"], true);
    assert_eq!(
        get(&env, &slug, "/s?cc=max-age=0,s-maxage=60", &[])
            .await
            .cache,
        "MISS"
    );

    // Each change is an event of the app.
    let events = c.get("/events?type=app.cdn.*&limit=50").await.json();
    let kinds: Vec<&str> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    for kind in ["app.cdn.updated", "app.cdn.purged"] {
        assert!(kinds.contains(&kind), "{kind} in {events}");
    }
}
