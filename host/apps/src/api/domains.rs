//! `/apps/{id}/domains`: attach a custom domain (answering the DNS records
//! to set), list, detach (`?domain=`), and verify (`POST .../verify`, or
//! `GET ...?verify=1`): the records are checked through the operator's
//! resolver, and a verified domain is routed by the edge and gets its
//! certificate from the agent. A domain belongs to one app: attaching one
//! that another app holds answers 409. Every change is an audited event
//! of the `dns` category.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_api::routes::{Pairs, param};
use plateau_core::time;
use plateau_store::apps::App;
use plateau_store::apps::domains::{self as db, Domain};
use plateau_store::events::{self, NewEvent};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{load, load_live_in};
use crate::Apps;
use crate::domains::{self, DnsRecord, dns};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachDomain {
    /// The domain to serve the app at: `www.example.com`.
    pub domain: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificateView {
    /// none, issued or failed.
    pub status: String,
    pub issued_at: Option<String>,
    pub expires_at: Option<String>,
    /// Why the last issuance failed.
    pub error: Option<String>,
    /// When the next try is due, after a failure.
    pub next_attempt_at: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainView {
    pub domain: String,
    /// pending (waiting for its DNS records), issuing (verified, its
    /// certificate on its way) or active (served over HTTPS).
    pub status: String,
    /// The records to set: one of the routing records, and the TXT.
    pub records: Vec<DnsRecord>,
    pub verified_at: Option<String>,
    /// What the last check found missing.
    pub dns_detail: Option<String>,
    pub certificate: CertificateView,
    pub created_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct DomainList {
    pub items: Vec<DomainView>,
}

fn view(apps: &Apps, app: &App, d: Domain) -> DomainView {
    let config = apps.config();
    let host_name = format!("{}.{}", app.slug, config.domain);
    let records = domains::records(
        &d.domain,
        &host_name,
        &d.token,
        &config.domains.edge_addresses,
    );
    let issued = d.cert_issued_at.is_some();
    let status = match (d.verified_at, issued) {
        (None, _) => "pending",
        (Some(_), false) => "issuing",
        (Some(_), true) => "active",
    };
    let cert_status = match (issued, &d.cert_error) {
        (true, _) => "issued",
        (false, Some(_)) => "failed",
        (false, None) => "none",
    };
    DomainView {
        status: status.to_owned(),
        records,
        verified_at: d.verified_at.map(time::to_rfc3339),
        dns_detail: d.dns_detail,
        certificate: CertificateView {
            status: cert_status.to_owned(),
            issued_at: d.cert_issued_at.map(time::to_rfc3339),
            expires_at: d.cert_expires_at.map(time::to_rfc3339),
            next_attempt_at: d
                .cert_error
                .as_ref()
                .map(|_| time::to_rfc3339(d.cert_next_at)),
            error: d.cert_error,
        },
        created_at: time::to_rfc3339(d.created_at),
        domain: d.domain,
    }
}

fn event(app: &App, kind: &str, action: &str, caller: &Caller, domain: &str) -> NewEvent {
    NewEvent::audited(&app.org_id, kind, "dns", action, &caller.actor())
        .resource("app", &app.id)
        .data(json!({ "domain": domain }))
}

/// The app's domains; with `?verify=1` their records are checked first.
#[utoipa::path(get, path = "/apps/{id}/domains", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id"),
           ("verify" = Option<String>, Query, pattern = "^[01]$", description = "1: check the DNS records of every domain first")),
    responses((status = 200, description = "the domains", body = DomainList)))]
pub async fn list(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    pairs: Pairs,
) -> Result<Json<DomainList>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    match param(&pairs, "verify") {
        None | Some("0") | Some("false") => {}
        Some("1") | Some("true") => {
            check_all(&apps, &caller, &id).await?;
        }
        Some(_) => return Err(ApiError::invalid("verify", "must be 1 or 0")),
    }
    let items = db::list(apps.db(), &app.id)
        .await?
        .into_iter()
        .map(|d| view(&apps, &app, d))
        .collect();
    Ok(Json(DomainList { items }))
}

/// Attach `domain`; the answer lists the DNS records to set.
#[utoipa::path(post, path = "/apps/{id}/domains", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = AttachDomain,
    responses((status = 201, description = "attached, waiting for its records", body = DomainView),
              (status = 409, description = "another app holds the domain", body = plateau_api::error::Problem)))]
pub async fn attach(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<AttachDomain>,
) -> Result<(StatusCode, Json<DomainView>), ApiError> {
    let name = input
        .domain
        .ok_or_else(|| ApiError::invalid("domain", "send the domain to attach"))?;
    let name = domains::check_name(&name, &apps.config().domain)
        .map_err(|message| ApiError::invalid("domain", message))?;
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    if let Some(holder) = db::holder_in(&mut tx, &name).await? {
        let detail = if holder.app_id == app.id {
            format!("{name} is attached to this app already")
        } else if holder.org_id == app.org_id {
            format!(
                "{name} is attached to app {}; detach it there first",
                holder.app_id
            )
        } else {
            format!("{name} is attached by another organisation")
        };
        return Err(ApiError::conflict("domain_taken", detail));
    }
    let domain = Domain {
        domain: name.clone(),
        app_id: app.id.clone(),
        org_id: app.org_id.clone(),
        token: domains::new_token(),
        verified_at: None,
        dns_detail: None,
        cert_expires_at: None,
        cert_issued_at: None,
        cert_error: None,
        cert_attempts: 0,
        cert_next_at: 0,
        created_at: now,
        updated_at: now,
    };
    db::insert(&mut tx, &domain)
        .await
        .map_err(|e| match e.is_unique_violation() {
            true => ApiError::conflict("domain_taken", format!("{name} was attached meanwhile")),
            false => e.into(),
        })?;
    let e = event(&app, "app.domain.attached", "create", &caller, &name);
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    Ok((StatusCode::CREATED, Json(view(&apps, &app, domain))))
}

/// Detach a domain (`?domain=NAME`): the edge stops serving it before
/// this answers.
#[utoipa::path(delete, path = "/apps/{id}/domains", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id"),
           ("domain" = String, Query, description = "the domain to detach")),
    responses((status = 200, description = "the detached domain", body = DomainView)))]
pub async fn detach(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    pairs: Pairs,
) -> Result<Json<DomainView>, ApiError> {
    let name = param(&pairs, "domain")
        .ok_or_else(|| ApiError::invalid("domain", "name the domain with ?domain=NAME"))?;
    let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    let held = db::holder_in(&mut tx, &name)
        .await?
        .filter(|d| d.app_id == app.id)
        .ok_or_else(|| ApiError::not_found(format!("app {id} has no domain {name}")))?;
    db::delete(&mut tx, &app.id, &name).await?;
    let e = event(&app, "app.domain.detached", "delete", &caller, &name);
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    if let Some(agent) = apps.agent() {
        agent.sync_domains().await;
    }
    Ok(Json(view(&apps, &app, held)))
}

/// Check the records of every domain of the app now; a verified domain
/// is routed and its certificate requested (a failed issuance is tried
/// again at once).
#[utoipa::path(post, path = "/apps/{id}/domains/verify", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "the domains after the check", body = DomainList)))]
pub async fn verify(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<DomainList>, ApiError> {
    let app = check_all(&apps, &caller, &id).await?;
    let items = db::list(apps.db(), &app.id)
        .await?
        .into_iter()
        .map(|d| view(&apps, &app, d))
        .collect();
    Ok(Json(DomainList { items }))
}

/// Checks the records of the app's domains and records what was seen.
async fn check_all(apps: &Apps, caller: &Caller, id: &str) -> Result<App, ApiError> {
    let app = load(apps.db(), caller, id).await?;
    let config = apps.config();
    let attached = db::list(apps.db(), &app.id).await?;
    if attached.is_empty() {
        return Ok(app);
    }
    let resolver = dns::resolver(&config.domains).map_err(ApiError::Unavailable)?;
    let host_name = format!("{}.{}", app.slug, config.domain);
    let mut newly = false;
    for d in attached {
        let seen = dns::check(
            &resolver,
            &d.domain,
            &host_name,
            &d.token,
            &config.domains.edge_addresses,
        )
        .await;
        let now = time::now_ms();
        let mut tx = apps.db().begin().await?;
        let app = load_live_in(&mut tx, caller, id).await?;
        match seen {
            dns::Checked::Verified => {
                db::set_checked(&mut tx, &d.domain, Some(now), None, now).await?;
                db::retry_now(&mut tx, &d.domain).await?;
                if d.verified_at.is_none() {
                    newly = true;
                    let e = event(&app, "app.domain.verified", "update", caller, &d.domain);
                    events::record(&mut tx, &e, now).await?;
                }
            }
            dns::Checked::Missing(detail) => {
                db::set_checked(&mut tx, &d.domain, None, Some(&detail), now).await?;
            }
        }
        tx.commit_last().await?;
    }
    if newly && let Some(agent) = apps.agent() {
        agent.sync_domains().await;
    }
    Ok(app)
}
