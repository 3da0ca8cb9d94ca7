//! Pebble (Debian's `pebble`), Let's Encrypt's RFC 8555 test CA, as the
//! ACME directory of a test: its own HTTPS under a CA made here with
//! rcgen ([`Pebble::ca_pem`], for the platform's `PLATEAU_ACME_CA_ROOT`),
//! its DNS questions sent to the test's server, and its HTTP-01
//! validations sent to the port the test names (the edge's). The root
//! it issues under is read from its management port ([`Pebble::root_pem`]).
//! The process is killed when this is dropped.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use crate::postgres::free_port;

pub struct Pebble {
    /// The ACME directory URL.
    pub directory: String,
    /// The PEM file of the CA its own HTTPS chains to.
    pub ca_file: PathBuf,
    management: u16,
    child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl Pebble {
    /// Starts pebble resolving names with `dns`, validating HTTP-01 on
    /// `http_port` and TLS-ALPN-01 on `tls_port`.
    pub async fn start(dns: SocketAddr, http_port: u16, tls_port: u16) -> Pebble {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ca_key = KeyPair::generate().expect("a key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "plateau test pebble listener CA");
        let ca = ca_params.self_signed(&ca_key).expect("the CA");
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().expect("a key");
        let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("leaf params")
            .signed_by(&key, &issuer)
            .expect("the listener's certificate");
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();
        std::fs::write(dir.path().join("cert.pem"), leaf.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        let (listen, management) = (free_port(), free_port());
        let config = serde_json::json!({ "pebble": {
            "listenAddress": format!("127.0.0.1:{listen}"),
            "managementListenAddress": format!("127.0.0.1:{management}"),
            "certificate": dir.path().join("cert.pem"),
            "privateKey": dir.path().join("key.pem"),
            "httpPort": http_port,
            "tlsPort": tls_port,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
        }});
        let config_file = dir.path().join("pebble.json");
        std::fs::write(&config_file, config.to_string()).unwrap();
        let child = tokio::process::Command::new("pebble")
            .arg("-config")
            .arg(&config_file)
            .arg("-dnsserver")
            .arg(dns.to_string())
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("pebble runs (install Debian's pebble package)");
        let pebble = Pebble {
            directory: format!("https://127.0.0.1:{listen}/dir"),
            ca_file,
            management,
            child,
            _dir: dir,
        };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", listen))
                .await
                .is_ok()
                && tokio::net::TcpStream::connect(("127.0.0.1", management))
                    .await
                    .is_ok()
            {
                return pebble;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("pebble did not listen on 127.0.0.1:{listen}");
    }

    /// The root pebble issues certificates under, as PEM text.
    pub async fn root_pem(&self) -> String {
        let out = tokio::process::Command::new("curl")
            .args(["--silent", "--show-error", "--fail", "--cacert"])
            .arg(&self.ca_file)
            .arg(format!("https://127.0.0.1:{}/roots/0", self.management))
            .output()
            .await
            .expect("curl runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("PEM is text")
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}
