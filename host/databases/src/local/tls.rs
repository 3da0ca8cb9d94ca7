//! TLS on every endpoint of a local cluster: its own certificate
//! authority, made once at creation with rcgen, signs the one server
//! certificate (for the cluster's address, `localhost` and `127.0.0.1`)
//! that every member and the pooler present. The write endpoint passes
//! bytes through, so a session on `writeUri` is TLS end to end with the
//! leader. Only the CA certificate leaves the host (`caCertificate` in
//! the connection details); the CA key is dropped once it has signed.
//!
//! The files live in `<cluster>/tls/` (the pooler reads them there) and
//! each member's data directory has copies (`server.crt`, `server.key`
//! and [`SETTINGS`], which its `plateau.conf` includes), so a standby
//! copied from the leader's data directory has them too. Plain
//! connections stay accepted: the host's own sessions and replication
//! need no certificate, and a client asking for `verify-full` cannot be
//! downgraded.

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use super::LocalProvider;
use crate::{Error, Result};

pub const CA_FILE: &str = "ca.crt";
pub const CERT_FILE: &str = "server.crt";
pub const KEY_FILE: &str = "server.key";
/// The server's TLS settings, in its data directory (`include_if_exists`
/// in `plateau.conf`, so a data directory without them runs without TLS).
pub const SETTINGS: &str = "plateau-tls.conf";

fn tls_error(e: rcgen::Error) -> Error {
    Error::Unavailable(format!("issuing the cluster's certificate: {e}"))
}

/// The CA certificate, the server certificate and its key (PEM) for
/// `address`.
fn issue(cluster: &str, address: &str) -> Result<(String, String, String)> {
    let ca_key = KeyPair::generate().map_err(tls_error)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(tls_error)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, format!("plateau database {cluster} CA"));
    ca.distinguished_name = name;
    let ca_cert = ca.self_signed(&ca_key).map_err(tls_error)?;
    let issuer = Issuer::new(ca, ca_key);

    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    if !names.iter().any(|n| n == address) {
        names.push(address.to_owned());
    }
    let key = KeyPair::generate().map_err(tls_error)?;
    let mut server = CertificateParams::new(names).map_err(tls_error)?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, format!("plateau database {cluster}"));
    server.distinguished_name = name;
    let cert = server.signed_by(&key, &issuer).map_err(tls_error)?;
    Ok((ca_cert.pem(), cert.pem(), key.serialize_pem()))
}

/// The lines of [`SETTINGS`].
pub fn settings() -> String {
    format!(
        "# Written by Plateau: the cluster's certificate.\n\
         ssl = on\n\
         ssl_cert_file = '{CERT_FILE}'\n\
         ssl_key_file = '{KEY_FILE}'\n\
         ssl_min_protocol_version = 'TLSv1.2'\n"
    )
}

impl LocalProvider {
    pub(super) fn tls_dir(&self, cluster: &str) -> std::path::PathBuf {
        self.cluster_dir(cluster).join("tls")
    }

    /// Issues the cluster's certificates into `<cluster>/tls` (once) and
    /// gives the data directory `data` its copies.
    pub(super) fn ensure_tls(&self, cluster: &str, address: &str, data: &Path) -> Result<()> {
        let dir = self.tls_dir(cluster);
        if !dir.join(KEY_FILE).exists() {
            let (ca, cert, key) = issue(cluster, address)?;
            self.mkdir(&dir)?;
            self.write_private(&dir.join(CA_FILE), &ca)?;
            self.write_private(&dir.join(CERT_FILE), &cert)?;
            self.write_private(&dir.join(KEY_FILE), &key)?;
        }
        for file in [CERT_FILE, KEY_FILE] {
            let text = std::fs::read_to_string(dir.join(file))?;
            self.write_private(&data.join(file), &text)?;
        }
        self.write_private(&data.join(SETTINGS), &settings())
    }

    /// The cluster's CA certificate (PEM); none for a cluster made before
    /// clusters had TLS.
    pub fn ca_certificate(&self, cluster: &str) -> Option<String> {
        std::fs::read_to_string(self.tls_dir(cluster).join(CA_FILE)).ok()
    }
}
