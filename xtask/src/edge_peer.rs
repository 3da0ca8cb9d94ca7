//! The peers of `bench edge`: a certificate of the apps domain signed by
//! a CA of its own (openssl), and nginx terminating TLS with it in front of
//! an app's replicas.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::process::{Child, Command};

/// A certificate for `*.apps.localhost` signed by a CA of its own, by
/// openssl: the CA's PEM file (which clients trust), the certificate's and
/// its key's.
pub fn certificate(dir: &Path) -> anyhow::Result<(String, String, String)> {
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:*.apps.localhost\n",
    )?;
    let (ca, ca_key, csr) = (path("ca.pem"), path("ca.key"), path("leaf.csr"));
    let (cert, key, ext) = (path("cert.pem"), path("key.pem"), path("leaf.ext"));
    let steps: [Vec<&str>; 3] = [
        [
            &["req", "-x509"][..],
            &ec,
            &["-days", "1", "-subj", "/CN=edge bench CA"],
        ]
        .concat(),
        [&["req"][..], &ec, &["-subj", "/CN=*.apps.localhost"]].concat(),
        vec!["x509", "-req", "-in", csr.as_str(), "-CA", ca.as_str()]
            .into_iter()
            .chain(["-CAkey", ca_key.as_str(), "-CAcreateserial"])
            .collect(),
    ];
    let outputs: [Vec<&str>; 3] = [
        vec!["-keyout", ca_key.as_str(), "-out", ca.as_str()],
        vec!["-keyout", key.as_str(), "-out", csr.as_str()],
        vec![
            "-days",
            "1",
            "-extfile",
            ext.as_str(),
            "-out",
            cert.as_str(),
        ],
    ];
    for (step, output) in steps.iter().zip(&outputs) {
        let out = std::process::Command::new("openssl")
            .args(step)
            .args(output)
            .output()
            .context("running openssl")?;
        if !out.status.success() {
            bail!("openssl {step:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    Ok((ca, cert, key))
}

/// nginx terminating TLS in front of `replicas`, until dropped.
pub struct Nginx(Child);

impl Drop for Nginx {
    /// Its master stops its workers on SIGTERM (a SIGKILL would leave them).
    fn drop(&mut self) {
        if let Some(pid) = self.0.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
    }
}

impl Nginx {
    pub async fn start(
        dir: &Path,
        port: u16,
        cert: &str,
        key: &str,
        replicas: &[String],
    ) -> anyhow::Result<Nginx> {
        let dir = dir.join("nginx");
        std::fs::create_dir_all(&dir)?;
        let d = dir.display();
        let upstream: String = replicas
            .iter()
            .map(|r| format!("server {};", r.trim_start_matches("http://")))
            .collect();
        let conf = format!(
            "daemon off; worker_processes 2; pid {d}/nginx.pid; error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  upstream app {{ {upstream} }}
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert}; ssl_certificate_key {key};
    location / {{ proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Host $host; }}
  }}
}}
"
        );
        let file = dir.join("nginx.conf");
        std::fs::write(&file, conf)?;
        let child = Command::new("nginx")
            .arg("-c")
            .arg(&file)
            .arg("-p")
            .arg(&dir)
            .kill_on_drop(true)
            .spawn()
            .context("starting nginx (apt-get install nginx; cargo xtask test installs it)")?;
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Ok(Nginx(child));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("nginx did not listen on {port}: see {d}/error.log")
    }
}
