//! Custom domains end to end: a DNS server the test controls is the
//! platform's resolver and pebble's (Debian's `pebble`, the ACME test
//! CA); a domain is attached (its records answered), refused to another
//! organisation (409), verified once its records are set, issued a
//! certificate by pebble over HTTP-01 at the edge, and then served over
//! HTTPS, HTTP/1.1 and HTTP/2 both, with curl checking the chain against
//! pebble's root; plain HTTP redirects to HTTPS; detaching stops serving
//! it at once. Prints the time from verify to the first HTTPS answer.

use std::path::Path;
use std::time::{Duration, Instant};

use plateau_testkit::dns::{DnsAnswer, DnsServer};
use plateau_testkit::pebble::Pebble;
use plateau_testkit::{Backend, ServerOptions};
use serde_json::{Value, json};

use super::{Apps, id};

const DOMAIN: &str = "shop.example.test";

/// curl fetching `https://DOMAIN:port/` against `root`: (exit code,
/// HTTP version, body).
async fn curl_https(root: &Path, port: u16, http: &str) -> (i32, String, String) {
    let out = tokio::process::Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "10", http])
        .arg("--cacert")
        .arg(root)
        .arg("--resolve")
        .arg(format!("{DOMAIN}:{port}:127.0.0.1"))
        .args(["--write-out", "\n%{http_version}"])
        .arg(format!("https://{DOMAIN}:{port}/"))
        .output()
        .await
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, version) = text.rsplit_once('\n').unwrap_or(("", &text));
    (
        out.status.code().unwrap_or(-1),
        version.to_owned(),
        body.to_owned(),
    )
}

fn domain<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["domain"] == name)
        .unwrap_or_else(|| panic!("{name} is listed: {list}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_domain_with_https_from_acme() {
    let dns = DnsServer::start().await;
    let (http_port, tls_port) = (plateau_testkit::free_port(), plateau_testkit::free_port());
    let pebble = Pebble::start(dns.addr, http_port, tls_port).await;
    let options = ServerOptions::new(Backend::Sqlite)
        .env("PLATEAU_EDGE_LISTEN", &format!("127.0.0.1:{http_port}"))
        .env("PLATEAU_EDGE_TLS_LISTEN", &format!("127.0.0.1:{tls_port}"))
        .env("PLATEAU_DNS_RESOLVER", &dns.addr.to_string())
        .env("PLATEAU_ACME_DIRECTORY", &pebble.directory)
        .env("PLATEAU_ACME_CA_ROOT", pebble.ca_file.to_str().unwrap());
    let env = Apps::start_with(options).await;
    let c = env.client();
    let app = env.deployed("Shop", &env.v1).await;
    let app_id = id(&app);
    let path = format!("/apps/{app_id}/domains");

    // Bad input names the field.
    for bad in [
        "hello.apps.localhost",
        "not a domain",
        "localhost",
        "10.0.0.1",
    ] {
        let r = c.post(&path, json!({ "domain": bad })).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        assert_eq!(r.json()["errors"][0]["field"], "domain", "{bad}");
    }

    // Attaching answers the records to set.
    let r = c
        .post(&path, json!({ "domain": "Shop.Example.Test." }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let attached = r.json();
    assert_eq!(attached["domain"], DOMAIN);
    assert_eq!(attached["status"], "pending");
    let records = attached["records"].as_array().unwrap();
    let record = |kind: &str| {
        records
            .iter()
            .find(|r| r["type"] == kind)
            .unwrap_or_else(|| panic!("a {kind} record in {attached}"))
    };
    assert_eq!(
        record("CNAME")["value"],
        format!("{}.apps.localhost", app["slug"].as_str().unwrap())
    );
    assert_eq!(record("A")["value"], "127.0.0.1");
    let txt = record("TXT");
    assert_eq!(txt["name"], format!("_plateau-challenge.{DOMAIN}"));

    // The same domain again, and from another organisation: 409.
    let r = c.post(&path, json!({ "domain": DOMAIN })).await;
    assert_eq!(r.status, 409, "{}", r.text());
    let other = crate::create_org(&env.server, "squatter", "pro").await;
    let them = plateau_testkit::Client::new(&env.server.url).with_token(&other);
    let r = them.post("/apps", json!({ "name": "Squat" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = them
        .post(
            &format!("/apps/{}/domains", id(&r.json())),
            json!({ "domain": DOMAIN }),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(
        r.json()["detail"]
            .as_str()
            .unwrap()
            .contains("another organisation"),
        "{}",
        r.text()
    );

    // Without its records the domain stays pending and says what is missing.
    let r = c.post(&format!("{path}/verify"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let listed = r.json();
    assert_eq!(domain(&listed, DOMAIN)["status"], "pending");
    assert!(
        domain(&listed, DOMAIN)["dnsDetail"]
            .as_str()
            .unwrap()
            .contains("TXT"),
        "{listed}"
    );

    // With them it verifies, and pebble issues a certificate.
    dns.add(DOMAIN, DnsAnswer::Ip("127.0.0.1".parse().unwrap()));
    dns.add(
        txt["name"].as_str().unwrap(),
        DnsAnswer::Txt(txt["value"].as_str().unwrap().to_owned()),
    );
    let verified_at = Instant::now();
    let r = c.get(&format!("{path}?verify=1")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_ne!(
        domain(&r.json(), DOMAIN)["status"],
        "pending",
        "{}",
        r.text()
    );
    let root_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path().join("pebble-root.pem");
    std::fs::write(&root, pebble.root_pem().await).unwrap();
    let mut last = (0, String::new(), String::new());
    let mut served = false;
    while verified_at.elapsed() < Duration::from_secs(90) {
        last = curl_https(&root, tls_port, "--http1.1").await;
        if last.0 == 0 {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let listed = c.get(&path).await.json();
    assert!(served, "no HTTPS answer for {DOMAIN}: {last:?}; {listed}");
    eprintln!(
        "domains: verify to first HTTPS answer (pebble, HTTP-01): {:.2} s",
        verified_at.elapsed().as_secs_f64()
    );
    assert_eq!(last.2, "hello from v1", "{last:?}");
    assert_eq!(last.1, "1.1");
    let d = domain(&listed, DOMAIN);
    assert_eq!(d["status"], "active", "{listed}");
    assert_eq!(d["certificate"]["status"], "issued", "{listed}");

    // HTTP/2 through ALPN, verified against pebble's root.
    let (code, version, body) = curl_https(&root, tls_port, "--http2").await;
    assert_eq!(
        (code, version.as_str(), body.as_str()),
        (0, "2", "hello from v1")
    );

    // Plain HTTP to the domain redirects to HTTPS.
    let out = tokio::process::Command::new("curl")
        .args([
            "--silent",
            "--output",
            "/dev/null",
            "--write-out",
            "%{http_code} %{redirect_url}",
        ])
        .arg("--resolve")
        .arg(format!("{DOMAIN}:{http_port}:127.0.0.1"))
        .arg(format!("http://{DOMAIN}:{http_port}/path?q=1"))
        .output()
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("308 https://{DOMAIN}:{tls_port}/path?q=1")
    );

    // Every change is audited under dns.
    let audit = c.get("/audit?category=dns").await;
    assert_eq!(audit.status, 200, "{}", audit.text());
    let types = crate::event_types(&audit.json())
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    for kind in [
        "app.domain.attached",
        "app.domain.verified",
        "app.domain.certificate_issued",
    ] {
        assert!(types.iter().any(|t| t == kind), "{kind} in {types:?}");
    }

    // Detaching stops serving the domain before it answers.
    let r = c.delete(&format!("{path}?domain={DOMAIN}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let (code, _, _) = curl_https(&root, tls_port, "--http1.1").await;
    assert_ne!(code, 0, "HTTPS still served after detaching");
    let r = c.get(&path).await;
    assert_eq!(r.json()["items"], json!([]));
    let r = c.delete(&format!("{path}?domain={DOMAIN}")).await;
    assert_eq!(r.status, 404, "{}", r.text());
    drop(pebble);
}
