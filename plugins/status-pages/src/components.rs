//! `/status-pages/components`: the parts of the service a page shows,
//! each set by hand or fed by a check or heartbeat. A fed component
//! follows the timeline events its source records on every change of
//! state (`checks.check.{up,degraded,down}`,
//! `heartbeats.heartbeat.{up,late,down}`), which [`on_event`] hears: a
//! plugin cannot read another plugin's storage, so the events are the
//! feed, and a component linked to a source takes its status from the
//! source's next change (or the `status` given with the link).

use plateau_sdk::serde_json::json;
use plateau_sdk::{ApiError, Bucket, Event, NewEvent, Params, Problem, Request, Response, clock};

use crate::input::{Check, ComponentInput};
use crate::record::{self, Component, ComponentStatus, Source, SourceKind};
use crate::store;
use crate::views::ComponentView;

fn plan_of(req: &Request) -> String {
    req.caller.plan.clone().unwrap_or_else(|| "free".to_owned())
}

fn check_input(input: &ComponentInput, creating: bool) -> Result<(), ApiError> {
    let mut check = Check::default();
    match &input.name {
        Some(name) => check.text("name", name, 100),
        None if creating => check.fail("name", "is required"),
        None => {}
    }
    if let Some(d) = &input.description
        && d.chars().count() > 500
    {
        check.fail("description", "must be at most 500 characters");
    }
    if let Some(Some(source)) = &input.source {
        let ok = (1..=64).contains(&source.id.len())
            && source
                .id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            check.fail("source.id", "must be the id of a check or heartbeat");
        }
    }
    check.done()
}

/// `GET /status-pages/components`: every component, by position.
pub fn list(_req: &Request, _: &Params) -> Result<Response, ApiError> {
    let all = store::components(&Bucket::caller()?)?;
    let items: Vec<ComponentView> = all.iter().map(ComponentView::from).collect();
    let total = items.len();
    Ok(Response::ok(
        &json!({ "items": items, "nextCursor": null, "total": total }),
    ))
}

/// `POST /status-pages/components`.
pub fn create(req: &Request, _: &Params) -> Result<Response, ApiError> {
    let input: ComponentInput = req.json()?;
    check_input(&input, true)?;
    let bucket = Bucket::caller()?;
    let plan = plan_of(req);
    let limit = record::component_limit(&plan);
    if bucket.count(record::COMPONENTS)? >= limit {
        let problem = Problem::new(
            409,
            "plan_limit_reached",
            format!("the {plan} plan allows {limit} components: delete one or upgrade the plan"),
        );
        return Ok(Response::from_problem(&problem));
    }
    let now = clock::now_millis();
    let component = Component {
        id: plateau_sdk::ids::new_id("cmp", now),
        name: input.name.unwrap_or_default().trim().to_owned(),
        description: input.description.unwrap_or_default().trim().to_owned(),
        position: input.position.unwrap_or(0),
        source: input.source.flatten(),
        status: input.status.unwrap_or(ComponentStatus::Operational),
        status_since: now,
        created_at: now,
        updated_at: now,
    };
    if let Some(source) = &component.source {
        bucket.set(&record::source_key(source, &component.id), "")?;
    }
    bucket.set(&record::component_key(&component.id), &component)?;
    store::touch(&bucket)?;
    event(&component, "created", "create")?;
    Ok(Response::created(&ComponentView::from(&component)))
}

/// `GET /status-pages/components/{id}`.
pub fn get(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let component = store::component(&Bucket::caller()?, &params["id"])?;
    Ok(Response::ok(&ComponentView::from(&component)))
}

/// `PATCH /status-pages/components/{id}`: the fields sent change.
pub fn update(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let input: ComponentInput = req.json()?;
    check_input(&input, false)?;
    let bucket = Bucket::caller()?;
    let key = record::component_key(&params["id"]);
    let raw = bucket.get_raw(&key)?.ok_or_else(|| {
        ApiError::not_found(format!("component {} does not exist", &params["id"]))
    })?;
    let mut component: Component = plateau_sdk::serde_json::from_slice(&raw)
        .map_err(|e| ApiError::internal(format!("a stored component is unreadable: {e}")))?;
    let now = clock::now_millis();
    if let Some(name) = input.name {
        component.name = name.trim().to_owned();
    }
    if let Some(d) = input.description {
        component.description = d.trim().to_owned();
    }
    if let Some(p) = input.position {
        component.position = p;
    }
    if let Some(source) = input.source {
        if let Some(old) = &component.source {
            bucket.delete(&record::source_key(old, &component.id))?;
        }
        if let Some(new) = &source {
            bucket.set(&record::source_key(new, &component.id), "")?;
        }
        component.source = source;
    }
    if let Some(status) = input.status {
        store::set_status(&bucket, &mut component, status, now)?;
    }
    component.updated_at = now;
    let new = plateau_sdk::serde_json::to_vec(&component)
        .map_err(|e| ApiError::internal(format!("a component does not serialize: {e}")))?;
    if !bucket.compare_and_swap(&key, Some(&raw), Some(&new))? {
        return Err(ApiError::conflict(
            "the component changed meanwhile: retry the request",
        ));
    }
    store::touch(&bucket)?;
    event(&component, "updated", "update")?;
    Ok(Response::ok(&ComponentView::from(&component)))
}

/// `DELETE /status-pages/components/{id}`, with its uptime days.
pub fn delete(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let component = store::component(&bucket, &params["id"])?;
    if let Some(source) = &component.source {
        bucket.delete(&record::source_key(source, &component.id))?;
    }
    for entry in bucket.list_all(&record::day_prefix(&component.id))? {
        bucket.delete(&entry.key)?;
    }
    bucket.delete(&record::component_key(&component.id))?;
    store::touch(&bucket)?;
    event(&component, "deleted", "delete")?;
    Ok(Response::no_content())
}

fn event(component: &Component, verb: &str, action: &str) -> Result<(), ApiError> {
    NewEvent::new(format!("status-pages.component.{verb}"), action)
        .resource("status_component", &component.id)
        .data(&json!({ "name": component.name, "status": component.status }))
        .audit()
        .emit()?;
    Ok(())
}

/// The status a source's event sets, if it is one of the feeding events.
pub fn fed_status(event_type: &str) -> Option<(SourceKind, ComponentStatus)> {
    use ComponentStatus::{DegradedPerformance, MajorOutage, Operational};
    Some(match event_type {
        "checks.check.up" => (SourceKind::Check, Operational),
        "checks.check.degraded" => (SourceKind::Check, DegradedPerformance),
        "checks.check.down" => (SourceKind::Check, MajorOutage),
        "heartbeats.heartbeat.up" => (SourceKind::Heartbeat, Operational),
        "heartbeats.heartbeat.late" => (SourceKind::Heartbeat, DegradedPerformance),
        "heartbeats.heartbeat.down" => (SourceKind::Heartbeat, MajorOutage),
        _ => return None,
    })
}

/// A check's or heartbeat's change of state: every component it feeds
/// takes the status (each in one compare-and-swap, with its uptime days).
pub fn on_event(event: &Event) -> Result<(), String> {
    let Some((kind, status)) = fed_status(&event.event_type) else {
        return Ok(());
    };
    let (Some(source_id), org) = (&event.resource_id, &event.organization_id) else {
        return Ok(());
    };
    feed(org, kind, source_id, status).map_err(|e| e.to_string())
}

fn feed(org: &str, kind: SourceKind, id: &str, status: ComponentStatus) -> Result<(), ApiError> {
    let bucket = store::org_bucket(org)?;
    let prefix = record::source_prefix(kind, id);
    let now = clock::now_millis();
    let mut changed = false;
    for entry in bucket.list_all(&prefix)? {
        let component_id = &entry.key[prefix.len()..];
        let key = record::component_key(component_id);
        let Some(raw) = bucket.get_raw(&key)? else {
            continue;
        };
        let mut component: Component = plateau_sdk::serde_json::from_slice(&raw)
            .map_err(|e| ApiError::internal(format!("a stored component is unreadable: {e}")))?;
        let linked = component.source.as_ref()
            == Some(&Source {
                kind,
                id: id.to_owned(),
            });
        if !linked || !store::set_status(&bucket, &mut component, status, now)? {
            continue;
        }
        let new = plateau_sdk::serde_json::to_vec(&component)
            .map_err(|e| ApiError::internal(format!("a component does not serialize: {e}")))?;
        if !bucket.compare_and_swap(&key, Some(&raw), Some(&new))? {
            return Err(ApiError::conflict("a component changed meanwhile"));
        }
        NewEvent::new("status-pages.component.updated", "update")
            .organization(org)
            .resource("status_component", &component.id)
            .data(&json!({
                "name": component.name,
                "status": component.status,
                "source": component.source,
            }))
            .emit()?;
        changed = true;
    }
    if changed {
        store::touch(&bucket)?;
    }
    Ok(())
}
