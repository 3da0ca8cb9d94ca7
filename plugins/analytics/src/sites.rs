//! Sites (`/analytics/sites`): a domain whose page views the plugin
//! counts, optionally tied to an app. A domain belongs to one site of one
//! organisation (the global bucket maps it to its site, because the
//! ingest route has no caller): another one gets 409.

use plateau_sdk::serde_json::json;
use plateau_sdk::{
    ApiError, Bucket, NewEvent, Page, Params, Request, Response, Validator, clock, ids, paginate_kv,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A site as stored and shown.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Site {
    pub id: String,
    /// The host name the page views are for, `example.com`.
    pub domain: String,
    /// The app whose edge traffic it counts, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_id: Option<String>,
    /// RFC 3339.
    pub created_at: String,
}

/// `POST /analytics/sites`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SiteInput {
    /// A host name: lowercase letters, digits, `-` and `.`, at most 253.
    pub domain: String,
    /// An app of the organisation (`app_...`).
    #[serde(default)]
    pub app_id: Option<String>,
}

/// Where the ingest route finds a domain's site.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainEntry {
    pub organization_id: String,
    pub site_id: String,
}

pub fn site_key(id: &str) -> String {
    format!("site/{id}")
}

/// In the organisation's bucket: the site tied to an app.
pub fn app_key(app_id: &str) -> String {
    format!("app/{app_id}")
}

pub fn domain_key(domain: &str) -> String {
    format!("dom/{domain}")
}

/// Whether `domain` is a host name as sites take it.
pub fn is_domain(domain: &str) -> bool {
    !domain.is_empty()
        && domain.len() <= 253
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// The caller's site `id`; 404 when the organisation has none.
pub fn find(id: &str) -> Result<Site, ApiError> {
    Bucket::caller()?
        .get(&site_key(id))?
        .ok_or_else(|| ApiError::not_found(format!("site {id} does not exist")))
}

pub fn list(req: &Request, _: &Params) -> Result<Response, ApiError> {
    let page: Page<Site> = paginate_kv(&Bucket::caller()?, "site/", &req.page_query()?)?;
    Ok(page.into_response())
}

pub fn get(_: &Request, params: &Params) -> Result<Response, ApiError> {
    Ok(Response::ok(&find(&params["id"])?))
}

pub fn create(req: &Request, _: &Params) -> Result<Response, ApiError> {
    let input: SiteInput = req.json()?;
    let domain = input.domain.trim().to_ascii_lowercase();
    let mut v = Validator::new();
    v.check(
        is_domain(&domain),
        "domain",
        "must be a host name such as example.com (letters, digits, - and .)",
    );
    if let Some(app) = &input.app_id {
        v.check(
            app.starts_with("app_") && app.len() <= 64,
            "appId",
            "must be an app id (app_...)",
        );
    }
    v.finish()?;
    let org = req.caller.organization()?.to_owned();
    let now = clock::now_millis();
    let site = Site {
        id: ids::new_id("site", now),
        domain: domain.clone(),
        app_id: input.app_id,
        created_at: clock::rfc3339(now),
    };
    let entry = DomainEntry {
        organization_id: org,
        site_id: site.id.clone(),
    };
    if !Bucket::global()?.insert_new(&domain_key(&domain), &entry)? {
        return Err(ApiError::conflict(format!(
            "domain {domain} is already a site: each domain is counted by one site"
        )));
    }
    let bucket = Bucket::caller()?;
    if let Some(app) = &site.app_id
        && !bucket.insert_new(&app_key(app), &site.id)?
    {
        return Err(ApiError::conflict(format!(
            "app {app} is already tied to a site: appId names one site's app"
        )));
    }
    bucket.set(&site_key(&site.id), &site)?;
    NewEvent::new("analytics.site.created", "create")
        .resource("analytics_site", &site.id)
        .data(&json!({ "domain": domain }))
        .audit()
        .emit()?;
    Ok(Response::json(201, &site))
}

pub fn delete(_: &Request, params: &Params) -> Result<Response, ApiError> {
    let site = find(&params["id"])?;
    Bucket::global()?.delete(&domain_key(&site.domain))?;
    let bucket = Bucket::caller()?;
    if let Some(app) = &site.app_id {
        bucket.delete(&app_key(app))?;
    }
    bucket.delete(&site_key(&site.id))?;
    NewEvent::new("analytics.site.deleted", "delete")
        .resource("analytics_site", &site.id)
        .data(&json!({ "domain": site.domain }))
        .audit()
        .emit()?;
    Ok(Response::new(204))
}

#[cfg(test)]
mod tests {
    use super::is_domain;

    #[test]
    fn domains_are_host_names() {
        assert!(is_domain("example.com"));
        assert!(is_domain("blog.my-site.io"));
        for bad in [
            "",
            "Example.com",
            "a..b",
            "-a.com",
            "a b.com",
            "https://a.com",
        ] {
            assert!(!is_domain(bad), "{bad}");
        }
    }
}
