//! The data plane's half of custom domains: the edge's table of verified
//! domains, their certificates and the HTTP-01 answers of issuances in
//! progress, followed from the database every second and whenever the API
//! asks (a detach answers once the edge stopped serving the domain).
//! Certificates are opened and parsed once per issuance, not per sync.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plateau_edge::{DomainRoute, Edge};
use plateau_seal::Sealer;
use plateau_store::Db;
use plateau_store::apps::domains;
use rustls::sign::CertifiedKey;

/// How often the edge follows the database's domains.
pub const SYNC_EVERY: Duration = Duration::from_secs(1);

/// The context a domain's certificate and key are sealed under.
pub fn cert_context(domain: &str) -> String {
    format!("app-domain-cert:{domain}")
}

/// Keeps one edge's domains in step with the database; cheap to clone.
#[derive(Clone)]
pub struct DomainSync {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    sealer: Arc<Sealer>,
    edge: Arc<Edge>,
    /// Parsed certificates by domain, with the issuance they came from.
    parsed: Mutex<HashMap<String, (i64, Arc<CertifiedKey>)>>,
    /// One sync at a time.
    turn: tokio::sync::Mutex<()>,
}

impl DomainSync {
    pub fn new(db: Db, sealer: Arc<Sealer>, edge: Arc<Edge>) -> DomainSync {
        DomainSync {
            inner: Arc::new(Inner {
                db,
                sealer,
                edge,
                parsed: Mutex::new(HashMap::new()),
                turn: tokio::sync::Mutex::new(()),
            }),
        }
    }

    pub fn edge(&self) -> &Arc<Edge> {
        &self.inner.edge
    }

    /// Replaces the edge's domains and challenges with the database's.
    pub async fn sync(&self) -> plateau_store::Result<()> {
        let _turn = self.inner.turn.lock().await;
        let served = domains::served(&self.inner.db).await?;
        let mut table = HashMap::new();
        let mut challenges = HashMap::new();
        let mut parsed = self.inner.parsed.lock().unwrap_or_else(|e| e.into_inner());
        let mut kept = HashMap::new();
        for row in served {
            let cert = match (&row.cert_sealed, row.cert_issued_at) {
                (Some(sealed), Some(issued)) => match parsed.remove(&row.domain) {
                    Some((at, cert)) if at == issued => Some(cert),
                    _ => self.open(&row.domain, sealed),
                }
                .inspect(|cert| {
                    kept.insert(row.domain.clone(), (issued, cert.clone()));
                }),
                _ => None,
            };
            if let (Some(token), Some(answer)) = (row.challenge_token, row.challenge_answer) {
                challenges.insert(token, answer);
            }
            table.insert(
                row.domain,
                DomainRoute {
                    slug: row.slug,
                    cert,
                },
            );
        }
        *parsed = kept;
        drop(parsed);
        self.inner.edge.set_domains(table);
        self.inner.edge.set_challenges(challenges);
        Ok(())
    }

    fn open(&self, domain: &str, sealed: &[u8]) -> Option<Arc<CertifiedKey>> {
        let pem = match self.inner.sealer.open(&cert_context(domain), sealed) {
            Ok(pem) => pem,
            Err(e) => {
                tracing::warn!(domain, error = %e, "domains: opening a certificate");
                return None;
            }
        };
        match plateau_edge::tls::certified_key(&pem) {
            Ok(cert) => Some(cert),
            Err(e) => {
                tracing::warn!(domain, error = %e, "domains: a stored certificate");
                None
            }
        }
    }

    /// Follows the database every [`SYNC_EVERY`] until the task is dropped.
    pub async fn keep_following(self) {
        loop {
            if let Err(e) = self.sync().await {
                tracing::warn!(error = %e, "domains: following the database");
            }
            tokio::time::sleep(SYNC_EVERY).await;
        }
    }
}
