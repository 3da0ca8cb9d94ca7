//! Email notices of the host's own watchers (alarms, anomalies, spend): the
//! `{category}.email.requested` event the email plugin sends through the
//! organisation's relay, recorded only while the organisation's email
//! preference for `category` is on and someone is listed to receive it.

use plateau_store::events::{Actor, NewEvent};
use plateau_store::{Db, prefs};
use serde_json::json;

/// What to email about which resource.
pub struct Notice<'a> {
    pub org_id: &'a str,
    /// `alarms`, `anomalies` or `spend` (a category of the preferences).
    pub category: &'static str,
    pub resource_type: &'a str,
    pub resource_id: &'a str,
    pub subject: String,
    pub text: String,
}

/// The event that asks for `notice` to be emailed to `to`, or `None` when
/// nobody is listed or the organisation turned the category's email off.
pub async fn email(
    db: &Db,
    to: &[String],
    notice: Notice<'_>,
) -> plateau_store::Result<Option<NewEvent>> {
    if to.is_empty() {
        return Ok(None);
    }
    let enabled = prefs::list(db, notice.org_id)
        .await?
        .into_iter()
        .any(|(category, on, _)| category == notice.category && on);
    if !enabled {
        return Ok(None);
    }
    let kind = format!("{}.email.requested", notice.category);
    Ok(Some(
        NewEvent::noticed(
            notice.org_id,
            &kind,
            notice.category,
            "request",
            &Actor::system(),
        )
        .resource(notice.resource_type, notice.resource_id)
        .data(json!({ "to": to, "subject": notice.subject, "text": notice.text })),
    ))
}
