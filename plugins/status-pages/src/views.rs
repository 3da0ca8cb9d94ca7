//! The shapes the management API answers (typed in the OpenAPI document).

use plateau_sdk::clock::rfc3339;
use serde::Serialize;
use utoipa::ToSchema;

use crate::record::{
    Component, ComponentStatus, Incident, IncidentKind, Page, Source, Subscriber, Update,
};

/// The organisation's status page and its public addresses.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageView {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub description: String,
    pub homepage_url: Option<String>,
    /// The public HTML page.
    pub public_url: String,
    /// Statuspage's `summary.json` of the page.
    pub summary_url: String,
    /// The Atom feed of incidents and maintenance.
    pub feed_url: String,
    pub created_at: String,
    pub updated_at: String,
}

impl PageView {
    /// `base` is the API base URL (`…/api/v1`).
    pub fn new(page: &Page, base: &str) -> PageView {
        let public_url = public_url(base, &page.slug);
        PageView {
            id: page.id.clone(),
            name: page.name.clone(),
            slug: page.slug.clone(),
            description: page.description.clone(),
            homepage_url: page.homepage_url.clone(),
            summary_url: format!("{public_url}/api/v2/summary.json"),
            feed_url: format!("{public_url}/history.atom"),
            public_url,
            created_at: rfc3339(page.created_at),
            updated_at: rfc3339(page.updated_at),
        }
    }
}

/// The public page of `slug` under the API base URL.
pub fn public_url(base: &str, slug: &str) -> String {
    format!("{base}/status-pages/public/{slug}")
}

/// A component.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentView {
    pub id: String,
    pub name: String,
    pub description: String,
    pub position: u32,
    pub source: Option<Source>,
    pub status: ComponentStatus,
    pub status_since: String,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&Component> for ComponentView {
    fn from(c: &Component) -> ComponentView {
        ComponentView {
            id: c.id.clone(),
            name: c.name.clone(),
            description: c.description.clone(),
            position: c.position,
            source: c.source.clone(),
            status: c.status,
            status_since: rfc3339(c.status_since),
            created_at: rfc3339(c.created_at),
            updated_at: rfc3339(c.updated_at),
        }
    }
}

/// An incident or scheduled maintenance, with its updates newest first.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IncidentView {
    pub id: String,
    pub kind: IncidentKind,
    pub name: String,
    pub status: String,
    pub impact: String,
    pub component_ids: Vec<String>,
    pub scheduled_for: Option<String>,
    pub scheduled_until: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub resolved_at: Option<String>,
    pub updates: Vec<Update>,
}

impl From<&Incident> for IncidentView {
    fn from(i: &Incident) -> IncidentView {
        IncidentView {
            id: i.id.clone(),
            kind: i.kind,
            name: i.name.clone(),
            status: i.status.clone(),
            impact: i.impact.clone(),
            component_ids: i.component_ids.clone(),
            scheduled_for: i.scheduled_for.map(rfc3339),
            scheduled_until: i.scheduled_until.map(rfc3339),
            created_at: rfc3339(i.created_at),
            updated_at: rfc3339(i.updated_at),
            resolved_at: i.resolved_at.map(rfc3339),
            updates: i.updates.clone(),
        }
    }
}

/// A subscriber; a webhook's secret only in the answer that created it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriberView {
    pub id: String,
    /// `email` or `webhook`.
    pub kind: String,
    pub email: Option<String>,
    pub url: Option<String>,
    /// An email address counts once its owner followed the link sent to it.
    pub confirmed: bool,
    pub created_at: String,
    pub confirmed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl From<&Subscriber> for SubscriberView {
    fn from(s: &Subscriber) -> SubscriberView {
        SubscriberView {
            id: s.id.clone(),
            kind: if s.email.is_some() {
                "email"
            } else {
                "webhook"
            }
            .to_owned(),
            email: s.email.clone(),
            url: s.url.clone(),
            confirmed: s.confirmed,
            created_at: rfc3339(s.created_at),
            confirmed_at: s.confirmed_at.map(rfc3339),
            secret: None,
        }
    }
}
