//! Reads and writes shared by the routes: the page, components in order,
//! a component's change of status with its uptime days, and the version
//! that every write bumps so the public answers cached under it go stale.

use plateau_sdk::{ApiError, Bucket, Namespace};

use crate::record::{
    self, Component, ComponentStatus, DAY_MS, DayTotals, Incident, Page, SlugEntry, UPTIME_DAYS,
};
use crate::uptime;

/// The key of the version counter that every write bumps.
pub const VERSION: &str = "ver";

pub fn org_bucket(org: &str) -> Result<Bucket, ApiError> {
    Ok(Bucket::open(Namespace::Organization(org.to_owned()))?)
}

/// Marks every cached public answer stale; call with every write.
pub fn touch(bucket: &Bucket) -> Result<(), ApiError> {
    bucket.increment(VERSION, 1)?;
    Ok(())
}

/// The current version (0 before any write).
pub fn version(bucket: &Bucket) -> Result<i64, ApiError> {
    Ok(bucket
        .get_raw(VERSION)?
        .and_then(|raw| {
            std::str::from_utf8(&raw)
                .ok()
                .and_then(|s| s.trim().parse().ok())
        })
        .unwrap_or(0))
}

pub fn page(bucket: &Bucket) -> Result<Option<Page>, ApiError> {
    Ok(bucket.get(record::PAGE)?)
}

/// The page, or 404 telling how to create it.
pub fn require_page(bucket: &Bucket) -> Result<Page, ApiError> {
    page(bucket)?.ok_or_else(|| {
        ApiError::not_found(
            "the organisation has no status page yet: create it with PUT /status-pages/page",
        )
    })
}

/// The organisation whose page `slug` names, if any.
pub fn organization_of(slug: &str) -> Result<Option<String>, ApiError> {
    if !crate::input::is_slug(slug) {
        return Ok(None);
    }
    let entry: Option<SlugEntry> = Bucket::global()?.get(&record::slug_key(slug))?;
    Ok(entry.map(|e| e.organization_id))
}

/// Every component, by position then name.
pub fn components(bucket: &Bucket) -> Result<Vec<Component>, ApiError> {
    let mut all: Vec<Component> = bucket
        .list_all(record::COMPONENTS)?
        .iter()
        .map(|e| e.json())
        .collect::<Result<_, _>>()?;
    all.sort_by(|a, b| (a.position, &a.name).cmp(&(b.position, &b.name)));
    Ok(all)
}

pub fn component(bucket: &Bucket, id: &str) -> Result<Component, ApiError> {
    bucket
        .get(&record::component_key(id))?
        .ok_or_else(|| ApiError::not_found(format!("component {id} does not exist")))
}

pub fn incident(bucket: &Bucket, id: &str) -> Result<Incident, ApiError> {
    bucket
        .get(&record::incident_key(id))?
        .ok_or_else(|| ApiError::not_found(format!("incident {id} does not exist")))
}

/// Incidents and maintenance not resolved or completed, newest first.
pub fn open_incidents(bucket: &Bucket) -> Result<Vec<Incident>, ApiError> {
    let mut open = Vec::new();
    for entry in bucket.list_all(record::OPEN)? {
        let id = &entry.key[record::OPEN.len()..];
        if let Some(incident) = bucket.get::<Incident>(&record::incident_key(id))? {
            open.push(incident);
        }
    }
    open.sort_by_key(|i| std::cmp::Reverse(i.created_at));
    Ok(open)
}

/// The `limit` newest incidents and maintenance.
pub fn recent_incidents(bucket: &Bucket, limit: u32) -> Result<Vec<Incident>, ApiError> {
    let page = bucket.list(record::HISTORY, None, limit)?;
    let mut out = Vec::new();
    for entry in page.entries {
        let id = entry.key.rsplit('/').next().unwrap_or_default();
        if let Some(incident) = bucket.get::<Incident>(&record::incident_key(id))? {
            out.push(incident);
        }
    }
    Ok(out)
}

/// Moves `component` to `status` at `now` (the caller writes it): the
/// time it spent in its old status goes to its uptime days. False when
/// the status is unchanged.
pub fn set_status(
    bucket: &Bucket,
    component: &mut Component,
    status: ComponentStatus,
    now: u64,
) -> Result<bool, ApiError> {
    if component.status == status {
        return Ok(false);
    }
    account(bucket, component, now)?;
    component.status = status;
    component.status_since = now;
    component.updated_at = now;
    Ok(true)
}

/// Books the time since `status_since` into the component's days.
fn account(bucket: &Bucket, component: &Component, now: u64) -> Result<(), ApiError> {
    if component.status == ComponentStatus::Operational {
        return Ok(());
    }
    for (day, ms) in uptime::split(component.status_since, now) {
        let key = record::day_key(&component.id, day);
        let mut totals: DayTotals = bucket.get(&key)?.unwrap_or_default();
        uptime::add(&mut totals, component.status, ms);
        bucket.set(&key, &totals)?;
    }
    // Days that left the window go.
    let oldest = (now / DAY_MS).saturating_sub(UPTIME_DAYS);
    let prefix = record::day_prefix(&component.id);
    for entry in bucket.list(&prefix, None, 8)?.entries {
        let day: u64 = entry.key[prefix.len()..].parse().unwrap_or(u64::MAX);
        if day < oldest {
            bucket.delete(&entry.key)?;
        }
    }
    Ok(())
}

/// A component's last [`UPTIME_DAYS`] days up to `now`, oldest first, each
/// with the part of it the component knew; its ongoing status counted.
pub fn bars(
    bucket: &Bucket,
    component: &Component,
    now: u64,
) -> Result<Vec<(uptime::Bar, u64)>, ApiError> {
    let today = now / DAY_MS;
    let first = today + 1 - UPTIME_DAYS;
    let mut totals = vec![DayTotals::default(); UPTIME_DAYS as usize];
    let prefix = record::day_prefix(&component.id);
    for entry in bucket.list_all(&prefix)? {
        let day: u64 = entry.key[prefix.len()..].parse().unwrap_or(0);
        if day >= first && day <= today {
            totals[(day - first) as usize] = entry.json()?;
        }
    }
    for (day, ms) in uptime::split(component.status_since, now) {
        if day >= first {
            uptime::add(&mut totals[(day - first) as usize], component.status, ms);
        }
    }
    Ok(totals
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let day = first + i as u64;
            let start = (day * DAY_MS).max(component.created_at);
            let end = ((day + 1) * DAY_MS).min(now);
            let known = end.saturating_sub(start);
            (uptime::Bar::of(day, t, known), known)
        })
        .collect())
}
