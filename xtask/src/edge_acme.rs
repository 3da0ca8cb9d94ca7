//! The certificate figure of `bench edge`: custom domains of an app
//! verified one after another, each issued a certificate by pebble
//! (Debian's, the ACME test CA) over HTTP-01 at the edge, with a DNS
//! server of the bench's own as the platform's resolver and pebble's. For
//! each, the time from the verify request to the first HTTPS answer on
//! the domain (curl checking the chain against pebble's root); p50.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use plateau_testkit::Client;
use plateau_testkit::dns::{DnsAnswer, DnsServer};
use plateau_testkit::pebble::Pebble;

use crate::harness::percentile;

/// How many domains are issued a certificate.
const ISSUANCES: usize = 5;
/// How long one issuance may take before the bench gives up.
const GIVE_UP: Duration = Duration::from_secs(90);

/// pebble and the DNS server it and the platform resolve names with.
pub struct Acme {
    dns: DnsServer,
    pebble: Pebble,
    http_port: u16,
    tls_port: u16,
}

impl Acme {
    /// pebble validating HTTP-01 at the edge's `http_port`.
    pub async fn start(http_port: u16, tls_port: u16) -> Acme {
        let dns = DnsServer::start().await;
        let pebble = Pebble::start(dns.addr, http_port, tls_port).await;
        Acme {
            dns,
            pebble,
            http_port,
            tls_port,
        }
    }

    /// The server's settings that point it at pebble and the DNS server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "PLATEAU_EDGE_LISTEN",
                format!("127.0.0.1:{}", self.http_port),
            ),
            ("PLATEAU_DNS_RESOLVER", self.dns.addr.to_string()),
            ("PLATEAU_ACME_DIRECTORY", self.pebble.directory.clone()),
            (
                "PLATEAU_ACME_CA_ROOT",
                self.pebble.ca_file.to_string_lossy().into_owned(),
            ),
        ]
    }

    /// Attaches [`ISSUANCES`] domains to `app` in turn, sets their records,
    /// verifies each and waits for its first HTTPS answer; prints each
    /// time and the p50.
    pub async fn issue(&self, api: &Client, app: &str, scratch: &Path) -> anyhow::Result<()> {
        println!(
            "\ncertificate issuance (pebble, HTTP-01), from verify to the first HTTPS answer:"
        );
        let root = scratch.join("pebble-root.pem");
        std::fs::write(&root, self.pebble.root_pem().await)?;
        let path = format!("/apps/{app}/domains");
        let mut seconds = Vec::new();
        for i in 0..ISSUANCES {
            let domain = format!("shop{i}.bench.test");
            let r = api
                .post(&path, serde_json::json!({ "domain": domain }))
                .await;
            if r.status != 201 {
                bail!("attaching {domain}: {} {}", r.status, r.text());
            }
            let attached = r.json();
            let txt = attached["records"]
                .as_array()
                .and_then(|records| records.iter().find(|r| r["type"] == "TXT"))
                .context("no TXT record to set")?;
            self.dns.add(&domain, DnsAnswer::Ip("127.0.0.1".parse()?));
            self.dns.add(
                txt["name"].as_str().context("the TXT record's name")?,
                DnsAnswer::Txt(txt["value"].as_str().context("its value")?.to_owned()),
            );
            let verified_at = Instant::now();
            let r = api.get(&format!("{path}?verify=1")).await;
            if r.status != 200 {
                bail!("verifying {domain}: {} {}", r.status, r.text());
            }
            loop {
                let Err(last) = curl_https(&root, &domain, self.tls_port).await else {
                    break;
                };
                if verified_at.elapsed() > GIVE_UP {
                    let listed = api.get(&path).await.text();
                    bail!("no HTTPS answer for {domain} after {GIVE_UP:?}: {last}; {listed}");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let took = verified_at.elapsed().as_secs_f64();
            println!("  {domain}: {took:.2} s");
            seconds.push(took);
        }
        seconds.sort_by(f64::total_cmp);
        println!(
            "  p50 {:.2} s, slowest {:.2} s ({} issuances)",
            percentile(&seconds, 0.50),
            seconds.last().copied().unwrap_or(0.0),
            seconds.len()
        );
        Ok(())
    }
}

/// `GET https://domain:port/` by curl against `root`; what failed.
async fn curl_https(root: &Path, domain: &str, port: u16) -> Result<(), String> {
    let out = tokio::process::Command::new("curl")
        .args(["--silent", "--show-error", "--fail", "--max-time", "10"])
        .arg("--cacert")
        .arg(root)
        .arg("--resolve")
        .arg(format!("{domain}:{port}:127.0.0.1"))
        .arg("--output")
        .arg("/dev/null")
        .arg(format!("https://{domain}:{port}/"))
        .output()
        .await
        .map_err(|e| format!("curl: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}
