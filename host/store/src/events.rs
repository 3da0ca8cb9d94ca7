//! The per-organisation event timeline, and the audit log derived from it.
//!
//! Every mutation records its event with [`record`] inside the transaction
//! that makes the change, so the timeline never disagrees with the data.
//! Events flagged `audit` (security and configuration changes) form the
//! audit log. Event data never holds a secret.

use plateau_core::id::new_id;
use sqlx::FromRow;

use crate::db::Deferred;
use crate::query::{Bind, Conditions, Keyset, Listed, Order, bind_all};
use crate::{Db, Result, Tx};

/// Who did something.
#[derive(Clone, Debug, Default)]
pub struct Actor {
    /// `user`, `token`, `admin`, `system` or `plugin`.
    pub kind: String,
    /// The token id, user id or plugin name.
    pub id: Option<String>,
    /// The user a token acts for.
    pub user_id: Option<String>,
    /// Source address of the request.
    pub ip: Option<String>,
}

impl Actor {
    pub fn system() -> Actor {
        Actor {
            kind: "system".to_owned(),
            ..Actor::default()
        }
    }

    pub fn admin(ip: Option<String>) -> Actor {
        Actor {
            kind: "admin".to_owned(),
            id: Some("operator".to_owned()),
            ip,
            ..Actor::default()
        }
    }
}

#[derive(Clone, Debug)]
pub struct NewEvent {
    pub org_id: String,
    /// `resource.verb`: `project.created`.
    pub kind: String,
    /// Audit category: members, tokens, resources, integrations, settings, ...
    pub category: String,
    /// create, update, delete, revoke, ...
    pub action: String,
    pub audit: bool,
    pub actor: Actor,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    pub data: serde_json::Value,
}

impl NewEvent {
    /// An audited event (security or configuration change) without a
    /// resource or data; add them with [`NewEvent::resource`] and
    /// [`NewEvent::data`].
    pub fn audited(org_id: &str, kind: &str, category: &str, action: &str, actor: &Actor) -> Self {
        NewEvent {
            org_id: org_id.to_owned(),
            kind: kind.to_owned(),
            category: category.to_owned(),
            action: action.to_owned(),
            audit: true,
            actor: actor.clone(),
            resource_type: None,
            resource_id: None,
            data: serde_json::Value::Object(Default::default()),
        }
    }

    /// An event of the timeline only, not of the audit log: something the
    /// platform noticed (an alarm's change) rather than a change made.
    pub fn noticed(org_id: &str, kind: &str, category: &str, action: &str, actor: &Actor) -> Self {
        NewEvent {
            audit: false,
            ..NewEvent::audited(org_id, kind, category, action, actor)
        }
    }

    pub fn resource(mut self, resource_type: &str, id: &str) -> Self {
        self.resource_type = Some(resource_type.to_owned());
        self.resource_id = Some(id.to_owned());
        self
    }

    pub fn data(mut self, data: serde_json::Value) -> Self {
        self.data = data;
        self
    }
}

#[derive(Clone, Debug, FromRow)]
pub struct Event {
    pub id: String,
    pub org_id: String,
    #[sqlx(rename = "type")]
    pub kind: String,
    pub category: String,
    pub action: String,
    pub audit: i64,
    pub actor_type: String,
    pub actor_id: Option<String>,
    pub actor_user_id: Option<String>,
    pub actor_ip: Option<String>,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    pub data: String,
    pub created_at: i64,
}

const COLUMNS: &str = "id, org_id, type, category, action, audit, actor_type, actor_id, \
                       actor_user_id, actor_ip, resource_type, resource_id, data, created_at";

/// Records an event in the transaction of the change it describes.
pub async fn record(tx: &mut Tx, event: &NewEvent, now: i64) -> Result<String> {
    let id = new_id("evt");
    // Nothing reads the insert's result: it goes with the transaction's
    // next statement or its commit.
    let insert = Deferred::new(
        "INSERT INTO events (id, org_id, type, category, action, audit, actor_type, actor_id, \
         actor_user_id, actor_ip, resource_type, resource_id, data, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(id.as_str())
    .bind(event.org_id.as_str())
    .bind(event.kind.as_str())
    .bind(event.category.as_str())
    .bind(event.action.as_str())
    .bind(i64::from(event.audit))
    .bind(event.actor.kind.as_str())
    .bind(event.actor.id.clone())
    .bind(event.actor.user_id.clone())
    .bind(event.actor.ip.clone())
    .bind(event.resource_type.clone())
    .bind(event.resource_id.clone())
    .bind(event.data.to_string())
    .bind(now);
    tx.defer(insert).await?;
    if let (Some(resource), Some(token), true, true) = (
        event.resource_id.as_deref(),
        event.actor.id.as_deref(),
        event.action == "create",
        event.actor.kind == "token",
    ) {
        crate::token_spend::record_creator(tx, &event.org_id, resource, token).await?;
    }
    Ok(id)
}

/// Filters of the timeline and the audit log. Empty fields match all.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub audit_only: bool,
    /// Exact types, or prefixes ending in `*` (`project.*`).
    pub types: Vec<String>,
    pub category: Option<String>,
    pub action: Option<String>,
    /// A token, user, or plugin id; matches the actor or the user it acts for.
    pub actor: Option<String>,
    pub resource_type: Option<String>,
    /// Inclusive lower bound, milliseconds.
    pub from: Option<i64>,
    /// Exclusive upper bound, milliseconds.
    pub to: Option<i64>,
}

/// Events of an organisation, newest first.
pub async fn list(
    db: &Db,
    org_id: &str,
    filter: &Filter,
    keyset: &Keyset,
) -> Result<Listed<Event>> {
    crate::query::list(
        db.pool(),
        COLUMNS,
        "events",
        conditions(org_id, filter),
        keyset,
        "id",
        Order::Desc,
    )
    .await
}

/// Up to `limit` events of an organisation, newest first, older than the
/// event `before`: one page of a walk through every match (the audit
/// export), without [`list`]'s total. A page shorter than `limit` is the
/// last.
pub async fn page(
    db: &Db,
    org_id: &str,
    filter: &Filter,
    before: Option<&str>,
    limit: u32,
) -> Result<Vec<Event>> {
    let mut conds = conditions(org_id, filter);
    if let Some(before) = before {
        conds.push("id < ?", Bind::Text(before.to_owned()));
    }
    let sql = format!(
        "SELECT {COLUMNS} FROM events{} ORDER BY id DESC LIMIT {limit}",
        conds.where_sql()
    );
    Ok(bind_all(sqlx::query_as(&sql), conds.binds())
        .fetch_all(db.pool())
        .await?)
}

/// Events of organisation `org_id` after the event `after` (an id) and
/// made at or before `settled` (milliseconds), oldest first, at most
/// `limit`: what a log drain has not forwarded yet. `settled` leaves out the
/// newest, whose transaction may not have committed.
pub async fn after(
    db: &Db,
    org_id: &str,
    after: &str,
    settled: i64,
    limit: i64,
) -> Result<Vec<Event>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM events WHERE org_id = $1 AND id > $2 AND created_at <= $3 \
         ORDER BY id LIMIT $4"
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(after)
        .bind(settled)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

/// The WHERE clause of `filter` on an organisation's events.
fn conditions(org_id: &str, filter: &Filter) -> Conditions {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    if filter.audit_only {
        conds.push_raw("audit = 1");
    }
    if !filter.types.is_empty() {
        let mut alternatives = Vec::new();
        for kind in &filter.types {
            match kind.strip_suffix('*') {
                Some(prefix) => {
                    let p = conds.bind(Bind::Text(format!("{}%", escape_like(prefix))));
                    alternatives.push(format!("type LIKE {p} ESCAPE '\\'"));
                }
                None => {
                    let p = conds.bind(Bind::Text(kind.clone()));
                    alternatives.push(format!("type = {p}"));
                }
            }
        }
        conds.push_raw(&format!("({})", alternatives.join(" OR ")));
    }
    let exact = [
        ("category", &filter.category),
        ("action", &filter.action),
        ("resource_type", &filter.resource_type),
    ];
    for (column, value) in exact {
        if let Some(value) = value {
            conds.push(&format!("{column} = ?"), Bind::Text(value.clone()));
        }
    }
    if let Some(actor) = &filter.actor {
        let p = conds.bind(Bind::Text(actor.clone()));
        conds.push_raw(&format!("(actor_id = {p} OR actor_user_id = {p})"));
    }
    if let Some(from) = filter.from {
        conds.push("created_at >= ?", Bind::Int(from));
    }
    if let Some(to) = filter.to {
        conds.push("created_at < ?", Bind::Int(to));
    }
    conds
}

fn escape_like(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}
