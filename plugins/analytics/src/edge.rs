//! Page views the app edge reported, for apps whose analytics are on
//! (`PUT /apps/{id}/analytics`): the agent hands them over in durable
//! jobs (`edge:<id>`, one per organisation and batch, `{"views": [...]}`)
//! and [`run`] counts them as the ingest route counts the script's. A page
//! view belongs to the organisation's site of its host name, else to the
//! site tied to its app; one of neither, an answer of 400 or more, a bot,
//! or a day whose salt is gone is not counted.
//!
//! `client` is the agent's SHA-256 of the client's address (the address
//! never reaches the database); it takes the address's place in the
//! visitor hash.

use plateau_sdk::jobs::Job;
use plateau_sdk::{ApiError, Bucket, parse_json};
use serde::Deserialize;

use crate::event::{self, EventInput};
use crate::rollup::{self, PageView};
use crate::sites::{DomainEntry, Site, app_key, domain_key, site_key};
use crate::{agent, day, visitor};

/// The key prefix of the agent's jobs.
pub const JOB: &str = "edge:";

#[derive(Deserialize)]
struct Batch {
    views: Vec<EdgeView>,
}

#[derive(Deserialize)]
struct EdgeView {
    app: String,
    host: String,
    path: String,
    #[serde(default)]
    query: String,
    #[serde(default)]
    referrer: String,
    #[serde(default)]
    ua: String,
    client: String,
    status: u16,
    at: u64,
}

/// The organisation's site `view` counts for.
fn site_for(org: &str, bucket: &Bucket, view: &EdgeView) -> Result<Option<Site>, ApiError> {
    let by_domain: Option<DomainEntry> = Bucket::global()?.get(&domain_key(&view.host))?;
    let id = match by_domain.filter(|e| e.organization_id == org) {
        Some(entry) => Some(entry.site_id),
        None => bucket.get::<String>(&app_key(&view.app))?,
    };
    let Some(id) = id else {
        return Ok(None);
    };
    Ok(bucket
        .get::<Site>(&site_key(&id))?
        .filter(|s| s.app_id.as_ref().is_none_or(|app| *app == view.app)))
}

/// Counts the page views of one job; answers how many counted.
pub fn run(job: &Job) -> Result<usize, ApiError> {
    let org = job
        .organization_id
        .as_deref()
        .ok_or_else(|| ApiError::bad_request("an edge job belongs to an organisation"))?;
    let batch: Batch = parse_json(job.payload.as_bytes())?;
    let bucket = Bucket::organization(org)?;
    let mut counted = 0;
    for view in batch.views {
        if view.status >= 400 {
            continue;
        }
        let Some(agent) = agent::parse(&view.ua) else {
            continue;
        };
        let Some(site) = site_for(org, &bucket, &view)? else {
            continue;
        };
        let query = if view.query.is_empty() {
            String::new()
        } else {
            format!("?{}", view.query)
        };
        let input = EventInput {
            name: "pageview".to_owned(),
            url: format!("https://{}{}{query}", view.host, view.path),
            domain: site.domain.clone(),
            referrer: Some(view.referrer).filter(|r| !r.is_empty()),
        };
        let Ok(facts) = event::facts(&input, &site.domain) else {
            continue;
        };
        let Some(salt) = visitor::salt(day::of_millis(view.at))? else {
            continue;
        };
        let page = PageView {
            visitor: visitor::hash(&salt, &site.id, &view.client, &view.ua),
            site: site.id,
            at: view.at,
            facts,
            agent,
        };
        rollup::record(&bucket, &page)?;
        counted += 1;
    }
    Ok(counted)
}
