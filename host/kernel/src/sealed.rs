//! Passwords of managed resources, sealed under the host's key for the
//! store (base64). The sealing context names the service, the
//! organisation, the resource and which password it is, so a sealed value
//! copied to another row does not open.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_seal::Sealer;

/// Seals and opens one service's passwords.
pub struct Passwords {
    sealer: std::sync::Arc<Sealer>,
    /// `cache`, `database`: the first part of every context.
    service: &'static str,
}

/// Why a sealed password did not open.
#[derive(Debug, thiserror::Error)]
#[error("sealed password: {0}")]
pub struct SealError(String);

impl Passwords {
    pub fn new(sealer: std::sync::Arc<Sealer>, service: &'static str) -> Self {
        Passwords { sealer, service }
    }

    fn context(&self, org_id: &str, id: &str, which: &str) -> String {
        format!("{}\u{1f}{org_id}\u{1f}{id}\u{1f}{which}", self.service)
    }

    /// `password` sealed for resource `id` of `org_id`, as `which`
    /// (`user`, `owner`, `admin`...).
    pub fn seal(
        &self,
        org_id: &str,
        id: &str,
        which: &str,
        password: &str,
    ) -> Result<String, SealError> {
        let sealed = self
            .sealer
            .seal(&self.context(org_id, id, which), password.as_bytes())
            .map_err(|e| SealError(e.to_string()))?;
        Ok(BASE64.encode(sealed))
    }

    /// What [`Passwords::seal`] sealed with the same names.
    pub fn open(
        &self,
        org_id: &str,
        id: &str,
        which: &str,
        sealed: &str,
    ) -> Result<String, SealError> {
        let bytes = BASE64
            .decode(sealed)
            .map_err(|e| SealError(e.to_string()))?;
        let plain = self
            .sealer
            .open(&self.context(org_id, id, which), &bytes)
            .map_err(|e| SealError(e.to_string()))?;
        String::from_utf8(plain).map_err(|e| SealError(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_opens_only_with_the_names_it_was_sealed_with() {
        let key = Sealer::generate_key().unwrap();
        let caches = Passwords::new(std::sync::Arc::new(Sealer::new(&key)), "cache");
        let databases = Passwords::new(std::sync::Arc::new(Sealer::new(&key)), "database");
        let sealed = caches.seal("org_1", "cch_1", "user", "hunter2").unwrap();
        assert_eq!(
            caches.open("org_1", "cch_1", "user", &sealed).unwrap(),
            "hunter2"
        );
        assert!(caches.open("org_1", "cch_1", "admin", &sealed).is_err());
        assert!(caches.open("org_1", "cch_2", "user", &sealed).is_err());
        assert!(caches.open("org_2", "cch_1", "user", &sealed).is_err());
        assert!(databases.open("org_1", "cch_1", "user", &sealed).is_err());
    }
}
