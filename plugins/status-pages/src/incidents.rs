//! `/status-pages/incidents`: incidents and scheduled maintenance (an
//! incident with `scheduledFor`), each a record holding its updates. An
//! update may set components' statuses; resolving (or completing) without
//! naming components returns the hand-set ones it affected to operational,
//! and maintenance going `in_progress` puts its components under
//! maintenance. Each update is told to subscribers by a `notify:` job.

use plateau_sdk::serde_json::json;
use plateau_sdk::{ApiError, Bucket, NewEvent, Params, Request, Response, clock};

use crate::input::{
    Check, IMPACTS, INCIDENT_STATUSES, IncidentInput, MAINTENANCE_STATUSES, UpdateInput, parse_time,
};
use crate::record::{self, Affected, ComponentStatus, Incident, IncidentKind, MAX_UPDATES, Update};
use crate::views::IncidentView;
use crate::{notify, store};

fn statuses(kind: IncidentKind) -> &'static [&'static str] {
    match kind {
        IncidentKind::Incident => &INCIDENT_STATUSES,
        IncidentKind::Maintenance => &MAINTENANCE_STATUSES,
    }
}

fn check_components(
    check: &mut Check,
    bucket: &Bucket,
    affected: &[Affected],
) -> Result<(), ApiError> {
    for (i, a) in affected.iter().enumerate() {
        if bucket.get_raw(&record::component_key(&a.id))?.is_none() {
            check.fail(
                &format!("components[{i}].id"),
                "is not a component of the page",
            );
        }
    }
    Ok(())
}

/// `GET /status-pages/incidents`: newest first, paginated.
pub fn list(req: &Request, _: &Params) -> Result<Response, ApiError> {
    let query = req.page_query()?;
    let bucket = Bucket::caller()?;
    let page = bucket.list(record::HISTORY, query.cursor.as_deref(), query.page_size())?;
    let mut items = Vec::new();
    for entry in page.entries {
        let id = entry.key.rsplit('/').next().unwrap_or_default();
        if let Some(incident) = bucket.get::<Incident>(&record::incident_key(id))? {
            items.push(IncidentView::from(&incident));
        }
    }
    let total = bucket.count(record::HISTORY)?;
    Ok(Response::ok(
        &json!({ "items": items, "nextCursor": page.next_cursor, "total": total }),
    ))
}

/// `GET /status-pages/incidents/{id}`.
pub fn get(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let incident = store::incident(&Bucket::caller()?, &params["id"])?;
    Ok(Response::ok(&IncidentView::from(&incident)))
}

/// `POST /status-pages/incidents`.
pub fn create(req: &Request, _: &Params) -> Result<Response, ApiError> {
    let input: IncidentInput = req.json()?;
    let bucket = Bucket::caller()?;
    let kind = if input.scheduled_for.is_some() {
        IncidentKind::Maintenance
    } else {
        IncidentKind::Incident
    };
    let mut check = Check::default();
    check.text("name", &input.name, 200);
    check.text("body", &input.body, 5000);
    let status = input
        .status
        .clone()
        .unwrap_or_else(|| statuses(kind)[0].to_owned());
    check.one_of("status", &status, statuses(kind));
    let impact = input.impact.clone().unwrap_or_else(|| "minor".to_owned());
    check.one_of("impact", &impact, &IMPACTS);
    let scheduled_for = input.scheduled_for.as_deref().map(parse_time);
    let scheduled_until = input.scheduled_until.as_deref().map(parse_time);
    match (scheduled_for, scheduled_until) {
        (Some(None), _) => check.fail("scheduledFor", "must be an RFC 3339 time"),
        (_, Some(None)) => check.fail("scheduledUntil", "must be an RFC 3339 time"),
        (Some(Some(_)), None) => check.fail("scheduledUntil", "is required with scheduledFor"),
        (None, Some(_)) => check.fail("scheduledFor", "is required with scheduledUntil"),
        (Some(Some(from)), Some(Some(until))) if until <= from => {
            check.fail("scheduledUntil", "must be after scheduledFor")
        }
        _ => {}
    }
    check_components(&mut check, &bucket, &input.components)?;
    check.done()?;
    store::require_page(&bucket)?;
    let now = clock::now_millis();
    let mut incident = Incident {
        id: plateau_sdk::ids::new_id("inc", now),
        kind,
        name: input.name.trim().to_owned(),
        status: String::new(),
        impact,
        component_ids: input.components.iter().map(|a| a.id.clone()).collect(),
        scheduled_for: scheduled_for.flatten(),
        scheduled_until: scheduled_until.flatten(),
        created_at: now,
        updated_at: now,
        resolved_at: None,
        updates: Vec::new(),
    };
    let update = apply(
        &bucket,
        &mut incident,
        &status,
        &input.body,
        input.components,
        now,
    )?;
    bucket.set(&record::history_key(now, &incident.id), "")?;
    finish(
        &bucket,
        &incident,
        &update,
        input.notify.unwrap_or(true),
        "created",
    )?;
    Ok(Response::created(&IncidentView::from(&incident)))
}

/// `POST /status-pages/incidents/{id}/updates`.
pub fn add_update(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let input: UpdateInput = req.json()?;
    let bucket = Bucket::caller()?;
    let mut incident = store::incident(&bucket, &params["id"])?;
    let mut check = Check::default();
    check.text("body", &input.body, 5000);
    let status = input
        .status
        .clone()
        .unwrap_or_else(|| incident.status.clone());
    check.one_of("status", &status, statuses(incident.kind));
    check_components(&mut check, &bucket, &input.components)?;
    if incident.updates.len() >= MAX_UPDATES {
        check.fail(
            "body",
            format!("an incident keeps at most {MAX_UPDATES} updates"),
        );
    }
    check.done()?;
    let now = clock::now_millis();
    let update = apply(
        &bucket,
        &mut incident,
        &status,
        &input.body,
        input.components,
        now,
    )?;
    let verb = if incident.is_open() {
        "updated"
    } else {
        "resolved"
    };
    finish(
        &bucket,
        &incident,
        &update,
        input.notify.unwrap_or(true),
        verb,
    )?;
    Ok(Response::created(&IncidentView::from(&incident)))
}

/// `DELETE /status-pages/incidents/{id}`: gone from the page and its feeds.
pub fn delete(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let incident = store::incident(&bucket, &params["id"])?;
    bucket.delete(&record::incident_key(&incident.id))?;
    bucket.delete(&record::history_key(incident.created_at, &incident.id))?;
    bucket.delete(&record::open_key(&incident.id))?;
    store::touch(&bucket)?;
    NewEvent::new("status-pages.incident.deleted", "delete")
        .resource("status_incident", &incident.id)
        .data(&json!({ "name": incident.name }))
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// Records an update on `incident` with its status, and sets the
/// components' statuses it names (or implies).
fn apply(
    bucket: &Bucket,
    incident: &mut Incident,
    status: &str,
    body: &str,
    mut affected: Vec<Affected>,
    now: u64,
) -> Result<Update, ApiError> {
    let closing = matches!(status, "resolved" | "completed");
    if affected.is_empty() {
        let implied = match status {
            "in_progress" => Some(ComponentStatus::UnderMaintenance),
            _ if closing => Some(ComponentStatus::Operational),
            _ => None,
        };
        if let Some(to) = implied {
            for id in &incident.component_ids {
                let hand_set = bucket
                    .get::<record::Component>(&record::component_key(id))?
                    .is_some_and(|c| c.source.is_none() || to == ComponentStatus::UnderMaintenance);
                if hand_set {
                    affected.push(Affected {
                        id: id.clone(),
                        status: to,
                    });
                }
            }
        }
    }
    for a in &affected {
        let mut component = store::component(bucket, &a.id)?;
        if store::set_status(bucket, &mut component, a.status, now)? {
            bucket.set(&record::component_key(&component.id), &component)?;
        }
        if !incident.component_ids.contains(&a.id) {
            incident.component_ids.push(a.id.clone());
        }
    }
    let update = Update {
        id: plateau_sdk::ids::new_id("upd", now),
        status: status.to_owned(),
        body: body.trim().to_owned(),
        created_at: clock::rfc3339(now),
        affected_components: affected,
    };
    incident.status = status.to_owned();
    incident.updated_at = now;
    incident.resolved_at = closing.then_some(now);
    incident.updates.insert(0, update.clone());
    Ok(update)
}

/// Writes the incident with its open index, bumps the version, records the
/// event and asks for the subscribers' notification.
fn finish(
    bucket: &Bucket,
    incident: &Incident,
    update: &Update,
    notify: bool,
    verb: &str,
) -> Result<(), ApiError> {
    bucket.set(&record::incident_key(&incident.id), incident)?;
    if incident.is_open() {
        bucket.set(&record::open_key(&incident.id), "")?;
    } else {
        bucket.delete(&record::open_key(&incident.id))?;
    }
    store::touch(bucket)?;
    let noun = match incident.kind {
        IncidentKind::Incident => "incident",
        IncidentKind::Maintenance => "maintenance",
    };
    NewEvent::new(format!("status-pages.{noun}.{verb}"), "update")
        .resource("status_incident", &incident.id)
        .data(&json!({
            "name": incident.name,
            "status": incident.status,
            "impact": incident.impact,
            "update": update.body,
        }))
        .audit()
        .emit()?;
    if notify {
        notify::schedule(&incident.id, &update.id)?;
    }
    Ok(())
}
