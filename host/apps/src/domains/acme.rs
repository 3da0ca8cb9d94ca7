//! Certificates for verified custom domains, over ACME (RFC 8555, with
//! instant-acme) from `PLATEAU_ACME_DIRECTORY`, obtained and renewed by
//! the agent (never the API process). Every second it looks for verified
//! domains without a certificate, or whose certificate expires within
//! [`AcmeConfig::renew_before`], holds one for an issuance with a lease in
//! the database (so one host issues it), publishes the HTTP-01 answer
//! (the database for every edge, its own edge at once), and stores the
//! chain and its new key sealed. A failure is recorded with the CA's
//! reason and tried again after a backoff that doubles from a minute up
//! to six hours.
//!
//! The ACME account is one per directory, created on first use and kept
//! sealed in the database, so every host issues under it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use instant_acme::{
    Account, AccountCredentials, AuthorizationStatus, ChallengeType, Identifier, NewAccount,
    NewOrder, OrderStatus, RetryPolicy,
};
use plateau_core::time;
use plateau_seal::Sealer;
use plateau_store::Db;
use plateau_store::apps::domains;
use plateau_store::events::{self, Actor, NewEvent};
use serde_json::json;
use tokio::sync::Mutex;

use super::sync::{DomainSync, cert_context};

/// How often due domains are looked for.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// How long an issuance holds its domain.
const LEASE: Duration = Duration::from_secs(300);
/// The first wait after a failed issuance, doubled after each failure.
const FIRST_BACKOFF: Duration = Duration::from_secs(60);
/// The longest wait between two tries.
const MAX_BACKOFF: Duration = Duration::from_secs(6 * 3600);

/// Where certificates come from.
#[derive(Clone, Debug)]
pub struct AcmeConfig {
    /// The directory URL (`PLATEAU_ACME_DIRECTORY`).
    pub directory: String,
    /// A PEM file with the root the ACME server's own HTTPS chains to
    /// (`PLATEAU_ACME_CA_ROOT`); none: the system's roots.
    pub ca_root: Option<PathBuf>,
    /// The account's contact (`PLATEAU_ACME_EMAIL`).
    pub email: Option<String>,
    /// Renew a certificate this long before it expires.
    pub renew_before: Duration,
}

/// The agent's issuer; cheap to clone.
#[derive(Clone)]
pub struct Issuer {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    sealer: Arc<Sealer>,
    sync: DomainSync,
    config: AcmeConfig,
    account: Mutex<Option<Account>>,
}

impl Issuer {
    pub fn new(db: Db, sealer: Arc<Sealer>, sync: DomainSync, config: AcmeConfig) -> Issuer {
        Issuer {
            inner: Arc::new(Inner {
                db,
                sealer,
                sync,
                config,
                account: Mutex::new(None),
            }),
        }
    }

    /// Issues and renews until the task is dropped.
    pub async fn keep_issuing(self) {
        loop {
            if let Err(e) = self.issue_due().await {
                tracing::warn!(error = %e, "domains: looking for certificates to issue");
            }
            tokio::time::sleep(LOOK_EVERY).await;
        }
    }

    async fn issue_due(&self) -> plateau_store::Result<()> {
        let now = wall_ms();
        let renew_by = now + self.inner.config.renew_before.as_millis() as i64;
        for domain in domains::due(&self.inner.db, now, renew_by).await? {
            let until = now + LEASE.as_millis() as i64;
            if domains::claim(&self.inner.db, &domain, now, until).await? {
                let issuer = self.clone();
                tokio::spawn(async move { issuer.issue(&domain).await });
            }
        }
        Ok(())
    }

    /// One issuance of `domain`, which this host holds; its outcome is
    /// recorded either way.
    async fn issue(&self, domain: &str) {
        let started = std::time::Instant::now();
        let outcome = self.order(domain).await;
        let db = &self.inner.db;
        let Ok(Some(row)) = domains::get_any(db, domain).await else {
            return;
        };
        let now = wall_ms();
        let recorded = async {
            let mut tx = db.begin().await?;
            let event = match &outcome {
                Ok((pem, expires_at)) => {
                    let sealed = self
                        .inner
                        .sealer
                        .seal(&cert_context(domain), pem)
                        .map_err(|e| plateau_store::Error::Invalid(e.to_string()))?;
                    domains::store_certificate(&mut tx, domain, &sealed, now, *expires_at).await?;
                    tracing::info!(
                        domain,
                        seconds = started.elapsed().as_secs_f64(),
                        "domains: certificate issued"
                    );
                    event(&row, "app.domain.certificate_issued").data(
                        json!({ "domain": domain, "expiresAt": time::to_rfc3339(*expires_at) }),
                    )
                }
                Err(error) => {
                    let wait = backoff(row.cert_attempts);
                    let next_at = now + wait.as_millis() as i64;
                    domains::record_failure(&mut tx, domain, error, next_at, now).await?;
                    tracing::warn!(
                        domain,
                        error,
                        retry_in_s = wait.as_secs(),
                        "domains: issuance failed"
                    );
                    event(&row, "app.domain.certificate_failed")
                        .data(json!({ "domain": domain, "error": error }))
                }
            };
            events::record(&mut tx, &event, time::now_ms()).await?;
            tx.commit_last().await
        };
        if let Err(e) = recorded.await {
            tracing::warn!(domain, error = %e, "domains: recording an issuance");
        }
        if let Err(e) = self.inner.sync.sync().await {
            tracing::warn!(error = %e, "domains: following the database");
        }
    }

    /// Orders a certificate for `domain`: the chain and its key as PEM
    /// text, and when it expires (ms).
    async fn order(&self, domain: &str) -> Result<(Vec<u8>, i64), String> {
        let account = self.account().await?;
        let ids = [Identifier::Dns(domain.to_owned())];
        let mut order = account
            .new_order(&NewOrder::new(&ids))
            .await
            .map_err(|e| format!("new order: {e}"))?;
        let mut authorizations = order.authorizations();
        while let Some(authz) = authorizations.next().await {
            let mut authz = authz.map_err(|e| format!("authorization: {e}"))?;
            match authz.status {
                AuthorizationStatus::Pending => {}
                AuthorizationStatus::Valid => continue,
                other => return Err(format!("the authorization is {other:?}")),
            }
            let mut challenge = authz
                .challenge(ChallengeType::Http01)
                .ok_or("the CA offers no http-01 challenge")?;
            let token = challenge.token.clone();
            let answer = challenge.key_authorization().as_str().to_owned();
            domains::set_challenge(&self.inner.db, domain, Some((&token, &answer)))
                .await
                .map_err(|e| e.to_string())?;
            self.inner.sync.edge().add_challenge(&token, &answer);
            challenge
                .set_ready()
                .await
                .map_err(|e| format!("challenge: {e}"))?;
        }
        let retries = RetryPolicy::new().timeout(Duration::from_secs(120));
        let status = order
            .poll_ready(&retries)
            .await
            .map_err(|e| format!("waiting for validation: {e}"))?;
        if status != OrderStatus::Ready {
            let why = order
                .state()
                .error
                .as_ref()
                .map_or_else(|| format!("{status:?}"), |p| p.to_string());
            return Err(format!("the CA did not validate {domain}: {why}"));
        }
        let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
        let mut params =
            rcgen::CertificateParams::new(vec![domain.to_owned()]).map_err(|e| e.to_string())?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        let csr = params.serialize_request(&key).map_err(|e| e.to_string())?;
        order
            .finalize_csr(csr.der())
            .await
            .map_err(|e| format!("finalize: {e}"))?;
        let chain = order
            .poll_certificate(&retries)
            .await
            .map_err(|e| format!("certificate: {e}"))?;
        let expires_at = not_after(&chain)?;
        let mut pem = chain.into_bytes();
        pem.push(b'\n');
        pem.extend_from_slice(key.serialize_pem().as_bytes());
        Ok((pem, expires_at))
    }

    /// The account of the directory: the stored one, or a new one.
    async fn account(&self) -> Result<Account, String> {
        let mut held = self.inner.account.lock().await;
        if let Some(account) = held.as_ref() {
            return Ok(account.clone());
        }
        let config = &self.inner.config;
        let context = format!("acme-account:{}", config.directory);
        let builder = || match &config.ca_root {
            Some(root) => Account::builder_with_root(root),
            None => Account::builder(),
        };
        let db = &self.inner.db;
        let stored = domains::acme_account(db, &config.directory)
            .await
            .map_err(|e| e.to_string())?;
        let credentials = match stored {
            Some(sealed) => sealed,
            None => {
                let contact = config.email.as_ref().map(|e| format!("mailto:{e}"));
                let contacts: Vec<&str> = contact.iter().map(String::as_str).collect();
                let new = NewAccount {
                    contact: &contacts,
                    terms_of_service_agreed: true,
                    only_return_existing: false,
                };
                let (_, credentials) = builder()
                    .map_err(|e| format!("acme client: {e}"))?
                    .create(&new, config.directory.clone(), None)
                    .await
                    .map_err(|e| format!("creating the ACME account: {e}"))?;
                let text = serde_json::to_vec(&credentials).map_err(|e| e.to_string())?;
                let sealed = self
                    .inner
                    .sealer
                    .seal(&context, &text)
                    .map_err(|e| e.to_string())?;
                domains::keep_acme_account(db, &config.directory, &sealed, time::now_ms())
                    .await
                    .map_err(|e| e.to_string())?
            }
        };
        let text = self
            .inner
            .sealer
            .open(&context, &credentials)
            .map_err(|e| format!("opening the ACME account: {e}"))?;
        let credentials: AccountCredentials =
            serde_json::from_slice(&text).map_err(|e| format!("the ACME account: {e}"))?;
        let account = builder()
            .map_err(|e| format!("acme client: {e}"))?
            .from_credentials(credentials)
            .await
            .map_err(|e| format!("the ACME account: {e}"))?;
        *held = Some(account.clone());
        Ok(account)
    }
}

fn event(row: &domains::Domain, kind: &str) -> NewEvent {
    NewEvent::audited(&row.org_id, kind, "dns", "update", &Actor::system())
        .resource("app", &row.app_id)
}

/// The wait after `failures` failed tries in a row (before this one).
fn backoff(failures: i64) -> Duration {
    let doubled = FIRST_BACKOFF.saturating_mul(1 << failures.clamp(0, 16) as u32);
    doubled.min(MAX_BACKOFF)
}

/// Certificates expire in wall-clock time, whatever the host's clock
/// setting says.
fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// When the leaf of a PEM chain expires, in ms.
fn not_after(chain: &str) -> Result<i64, String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(chain.as_bytes())
        .map_err(|e| format!("the issued chain: {e}"))?;
    let cert = pem
        .parse_x509()
        .map_err(|e| format!("the issued certificate: {e}"))?;
    Ok(cert.validity().not_after.timestamp() * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_six_hours() {
        assert_eq!(backoff(0), Duration::from_secs(60));
        assert_eq!(backoff(1), Duration::from_secs(120));
        assert_eq!(backoff(3), Duration::from_secs(480));
        assert_eq!(backoff(9), MAX_BACKOFF);
        assert_eq!(backoff(1000), MAX_BACKOFF);
    }
}
