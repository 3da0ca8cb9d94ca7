//! The machine-readable answers, pure: `summary.json` and `status.json` in
//! the shape of Atlassian Statuspage's public API (v2), so aggregators
//! that read Statuspage pages read these, and the Atom feed of incidents
//! and maintenance (RFC 4287), one entry per incident.

use std::fmt::Write as _;

use plateau_sdk::clock::rfc3339;
use plateau_sdk::serde_json::{Value, json};

use crate::record::{Component, Incident, IncidentKind, Page};
use crate::render::{self, esc};

fn page_json(page: &Page, url: &str, updated: u64) -> Value {
    json!({
        "id": page.id,
        "name": page.name,
        "url": url,
        "time_zone": "Etc/UTC",
        "updated_at": rfc3339(updated),
    })
}

fn component_json(page: &Page, c: &Component) -> Value {
    json!({
        "id": c.id,
        "name": c.name,
        "status": c.status.as_str(),
        "created_at": rfc3339(c.created_at),
        "updated_at": rfc3339(c.updated_at),
        "position": c.position,
        "description": (!c.description.is_empty()).then_some(&c.description),
        "showcase": true,
        "start_date": Value::Null,
        "group_id": Value::Null,
        "page_id": page.id,
        "group": false,
        "only_show_if_degraded": false,
    })
}

fn incident_json(page: &Page, url: &str, i: &Incident, components: &[Component]) -> Value {
    let affected: Vec<Value> = components
        .iter()
        .filter(|c| i.component_ids.contains(&c.id))
        .map(|c| component_json(page, c))
        .collect();
    let updates: Vec<Value> = i
        .updates
        .iter()
        .map(|u| {
            json!({
                "id": u.id,
                "status": u.status,
                "body": u.body,
                "incident_id": i.id,
                "created_at": u.created_at,
                "updated_at": u.created_at,
                "display_at": u.created_at,
                "affected_components": u.affected_components.iter().map(|a| json!({
                    "code": a.id,
                    "name": components.iter().find(|c| c.id == a.id).map(|c| c.name.as_str()),
                    "old_status": Value::Null,
                    "new_status": a.status.as_str(),
                })).collect::<Vec<_>>(),
                "deliver_notifications": true,
                "custom_tweet": Value::Null,
                "tweet_id": Value::Null,
            })
        })
        .collect();
    let monitoring_at = i
        .updates
        .iter()
        .rev()
        .find(|u| u.status == "monitoring")
        .map(|u| u.created_at.clone());
    let mut v = json!({
        "id": i.id,
        "name": i.name,
        "status": i.status,
        "created_at": rfc3339(i.created_at),
        "updated_at": rfc3339(i.updated_at),
        "monitoring_at": monitoring_at,
        "resolved_at": i.resolved_at.map(rfc3339),
        "impact": if i.kind == IncidentKind::Maintenance { "maintenance" } else { i.impact.as_str() },
        "shortlink": url,
        "started_at": rfc3339(i.scheduled_for.unwrap_or(i.created_at)),
        "page_id": page.id,
        "incident_updates": updates,
        "components": affected,
    });
    if i.kind == IncidentKind::Maintenance {
        v["scheduled_for"] = json!(i.scheduled_for.map(rfc3339));
        v["scheduled_until"] = json!(i.scheduled_until.map(rfc3339));
    }
    v
}

fn status_json(components: &[Component], open: &[Incident], now: u64) -> Value {
    let (indicator, description) = render::indicator(components, open, now);
    // Statuspage's indicator has no `maintenance`: it says `maintenance`
    // only in the description's words.
    let indicator = if indicator == "maintenance" {
        "none"
    } else {
        indicator
    };
    json!({ "indicator": indicator, "description": description })
}

/// `summary.json`: the page, its components, its unresolved incidents,
/// its upcoming and ongoing maintenance, and the overall status.
pub fn summary(
    page: &Page,
    url: &str,
    components: &[Component],
    open: &[Incident],
    now: u64,
) -> Value {
    let updated = components
        .iter()
        .map(|c| c.updated_at)
        .chain(open.iter().map(|i| i.updated_at))
        .chain([page.updated_at])
        .max()
        .unwrap_or(page.updated_at);
    let incidents: Vec<Value> = open
        .iter()
        .filter(|i| i.kind == IncidentKind::Incident)
        .map(|i| incident_json(page, url, i, components))
        .collect();
    let maintenances: Vec<Value> = open
        .iter()
        .filter(|i| i.kind == IncidentKind::Maintenance)
        .map(|i| incident_json(page, url, i, components))
        .collect();
    json!({
        "page": page_json(page, url, updated),
        "components": components.iter().map(|c| component_json(page, c)).collect::<Vec<_>>(),
        "incidents": incidents,
        "scheduled_maintenances": maintenances,
        "status": status_json(components, open, now),
    })
}

/// `status.json`: the page and the overall status only.
pub fn status(
    page: &Page,
    url: &str,
    components: &[Component],
    open: &[Incident],
    now: u64,
) -> Value {
    json!({
        "page": page_json(page, url, page.updated_at),
        "status": status_json(components, open, now),
    })
}

/// The Atom feed of the `recent` incidents and maintenance, newest first.
pub fn atom(page: &Page, url: &str, recent: &[Incident]) -> String {
    let updated = recent
        .iter()
        .map(|i| i.updated_at)
        .max()
        .unwrap_or(page.updated_at);
    let mut x = String::new();
    let _ = write!(
        x,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\" xml:lang=\"en\">\
         <id>tag:plateau,status-page:{id}</id><title>{name} status history</title>\
         <link rel=\"alternate\" type=\"text/html\" href=\"{url}\"/>\
         <link rel=\"self\" type=\"application/atom+xml\" href=\"{url}/history.atom\"/>\
         <updated>{updated}</updated><author><name>{name}</name></author>",
        id = esc(&page.id),
        name = esc(&page.name),
        url = esc(url),
        updated = rfc3339(updated),
    );
    for i in recent {
        let mut html = String::new();
        for u in &i.updates {
            let _ = write!(
                html,
                "<p><small>{}</small><br><strong>{}</strong> - {}</p>",
                esc(&u.created_at),
                esc(&render::title_case(&u.status)),
                esc(&u.body)
            );
        }
        let _ = write!(
            x,
            "<entry><id>tag:plateau,status-incident:{id}</id><published>{published}</published>\
             <updated>{updated}</updated><link rel=\"alternate\" type=\"text/html\" href=\"{url}#{id}\"/>\
             <title>{title}</title><content type=\"html\">{content}</content></entry>",
            id = esc(&i.id),
            published = rfc3339(i.created_at),
            updated = rfc3339(i.updated_at),
            url = esc(url),
            title = esc(&i.name),
            content = esc(&html),
        );
    }
    x.push_str("</feed>\n");
    x
}
