//! A cluster's own certificate authority: made once at creation with
//! rcgen, it signs the one server certificate every process of the cluster
//! presents. Only the CA certificate leaves the host (clients trust it);
//! the CA key is dropped once it has signed.

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use crate::Result;

/// File names inside a cluster's `tls` directory.
pub const CA_FILE: &str = "ca.crt";
pub const CERT_FILE: &str = "server.crt";
pub const KEY_FILE: &str = "server.key";

/// Makes the CA and the server certificate for `address` (and `localhost`,
/// `127.0.0.1`), and writes them into `dir`.
pub fn issue(dir: &Path, cluster_id: &str, address: &str) -> Result<()> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, format!("plateau cache {cluster_id} CA"));
    ca.distinguished_name = name;
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);

    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    if !names.iter().any(|n| n == address) {
        names.push(address.to_owned());
    }
    let server_key = KeyPair::generate()?;
    let mut server = CertificateParams::new(names)?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, format!("plateau cache {cluster_id}"));
    server.distinguished_name = name;
    let server_cert = server.signed_by(&server_key, &issuer)?;

    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(CA_FILE), ca_cert.pem())?;
    std::fs::write(dir.join(CERT_FILE), server_cert.pem())?;
    write_private(&dir.join(KEY_FILE), server_key.serialize_pem().as_bytes())?;
    Ok(())
}

/// Writes a file only its owner reads.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    Ok(())
}
