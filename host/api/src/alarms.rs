//! Threshold alarms (spec sections 4.7 and 6): the rule an alarm states
//! ([`Rule`]: a metric of the series store summed over the last
//! `windowDays` days, today included, as a quantity or as its cost at
//! list price, above or below a threshold), its [`State`], and the
//! evaluation the API process runs every `PLATEAU_ALARMS_EVALUATE_MS`
//! ([`evaluate_all`]), in one pass with the anomaly monitors
//! ([`crate::anomalies`]) and the spend budgets ([`crate::spend`]).
//!
//! A change of state is a compare-and-set in the transaction that records
//! its event: `alarm.triggered` when the rule starts to hold,
//! `alarm.resolved` when it stops (never for the first evaluation that
//! finds it not holding). When the organisation's `alarms` email
//! preference is on and the alarm lists `notifyEmails`, the same
//! transaction records `alarms.email.requested`, which the email plugin
//! sends through the organisation's relay; webhooks subscribe to the
//! `alarm.*` events themselves. Several API processes on one database may
//! evaluate at once: the compare-and-set lets one of them emit each event.

use plateau_core::{prices, time};
use plateau_store::Db;
use plateau_store::alarms::{self, Alarm};
use plateau_store::events::{self, Actor, NewEvent};
use serde_json::json;

use crate::notify::{self, Notice};

/// The most alarms an organisation may have.
pub const MAX_ALARMS: i64 = 100;
/// The longest window, in days.
pub const MAX_WINDOW_DAYS: i64 = 31;
/// How many alarms one page of the evaluation reads.
const PAGE: i64 = 200;
const DAY_MS: i64 = 86_400_000;

/// Where an alarm stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Not evaluated since it was created or changed.
    Pending,
    Ok,
    Triggered,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Ok => "ok",
            State::Triggered => "triggered",
        }
    }

    pub fn parse(s: &str) -> State {
        match s {
            "ok" => State::Ok,
            "triggered" => State::Triggered,
            _ => State::Pending,
        }
    }
}

/// Which side of the threshold triggers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    Above,
    Below,
}

impl Comparison {
    pub const ALL: [&'static str; 2] = ["above", "below"];

    pub fn parse(s: &str) -> Option<Comparison> {
        match s {
            "above" => Some(Comparison::Above),
            "below" => Some(Comparison::Below),
            _ => None,
        }
    }
}

/// What of the metric is compared: its quantity, or its cost in cents at
/// list price (`plateau_core::prices`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    Quantity,
    Cost,
}

impl Measure {
    pub const ALL: [&'static str; 2] = ["quantity", "cost"];

    pub fn parse(s: &str) -> Option<Measure> {
        match s {
            "quantity" => Some(Measure::Quantity),
            "cost" => Some(Measure::Cost),
            _ => None,
        }
    }
}

/// An alarm's rule, parsed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    pub measure: Measure,
    pub comparison: Comparison,
    pub threshold: f64,
}

impl Rule {
    /// The rule of a stored alarm; `None` for one that no longer parses
    /// (a metric dropped from the price table), which is never evaluated.
    pub fn of(alarm: &Alarm) -> Option<Rule> {
        Some(Rule {
            measure: Measure::parse(&alarm.measure)?,
            comparison: Comparison::parse(&alarm.comparison)?,
            threshold: alarm.threshold,
        })
    }

    /// What the rule compares, from the window's summed quantity.
    pub fn value(&self, metric: &str, quantity: f64) -> Option<f64> {
        match self.measure {
            Measure::Quantity => Some(quantity),
            Measure::Cost => Some(prices::round_cents(
                prices::of(metric)?.list_cents(quantity),
            )),
        }
    }

    /// Whether `value` is on the triggering side (strictly).
    pub fn holds(&self, value: f64) -> bool {
        match self.comparison {
            Comparison::Above => value > self.threshold,
            Comparison::Below => value < self.threshold,
        }
    }
}

/// The state after an evaluation that found `holds`, and the event that
/// change emits, if any.
pub fn next(current: State, holds: bool) -> (State, Option<&'static str>) {
    match (current, holds) {
        (State::Triggered, true) => (State::Triggered, None),
        (_, true) => (State::Triggered, Some("alarm.triggered")),
        (State::Triggered, false) => (State::Ok, Some("alarm.resolved")),
        (_, false) => (State::Ok, None),
    }
}

/// The first and last day of an alarm's window ending at `now`.
pub fn window(window_days: i64, now: i64) -> (String, String) {
    let first = now - (window_days.max(1) - 1) * DAY_MS;
    (time::to_date(first), time::to_date(now))
}

/// Evaluates every enabled alarm once; answers how many changed state.
pub async fn evaluate_all(db: &Db, now: i64) -> plateau_store::Result<usize> {
    let mut after = String::new();
    let mut changed = 0;
    loop {
        let page = alarms::enabled_page(db, &after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = last.id.clone();
        for alarm in &page {
            match evaluate(db, alarm, now).await {
                Ok(true) => changed += 1,
                Ok(false) => {}
                Err(e) => tracing::warn!(alarm = %alarm.id, error = %e, "evaluating an alarm"),
            }
        }
    }
    Ok(changed)
}

/// Evaluates one alarm; true when its state changed.
async fn evaluate(db: &Db, alarm: &Alarm, now: i64) -> plateau_store::Result<bool> {
    let Some(rule) = Rule::of(alarm) else {
        return Ok(false);
    };
    let (from, to) = window(alarm.window_days, now);
    let quantity = alarms::window_sum(db, alarm, &from, &to).await?;
    let Some(value) = rule.value(&alarm.metric, quantity) else {
        return Ok(false);
    };
    let (state, kind) = next(State::parse(&alarm.state), rule.holds(value));
    if state.as_str() == alarm.state {
        alarms::observed(db, &alarm.id, value, now).await?;
        return Ok(false);
    }
    let mut tx = db.begin().await?;
    if !alarms::transition(&mut tx, alarm, state.as_str(), value, now).await? {
        return Ok(false);
    }
    if let Some(kind) = kind {
        let data = json!({
            "name": alarm.name,
            "metric": alarm.metric,
            "measure": alarm.measure,
            "comparison": alarm.comparison,
            "threshold": alarm.threshold,
            "windowDays": alarm.window_days,
            "value": value,
            "projectId": alarm.project_id,
            "resourceId": alarm.resource_id,
        });
        let event = NewEvent::noticed(&alarm.org_id, kind, "alarms", "notify", &Actor::system())
            .resource("alarm", &alarm.id)
            .data(data);
        events::record(&mut tx, &event, now).await?;
        if let Some(email) = email_request(db, alarm, kind, value).await? {
            events::record(&mut tx, &email, now).await?;
        }
    }
    tx.commit().await?;
    Ok(true)
}

/// The `alarms.email.requested` event of a transition, when the alarm
/// lists addresses and the organisation's `alarms` email is on.
async fn email_request(
    db: &Db,
    alarm: &Alarm,
    kind: &str,
    value: f64,
) -> plateau_store::Result<Option<NewEvent>> {
    let to: Vec<String> = serde_json::from_str(&alarm.notify_emails).unwrap_or_default();
    let (verb, side) = if kind == "alarm.triggered" {
        ("triggered", alarm.comparison.as_str())
    } else {
        ("resolved", "back within")
    };
    let unit = if alarm.measure == "cost" {
        " cents"
    } else {
        ""
    };
    let subject = format!("Alarm {verb}: {}", alarm.name);
    let text = format!(
        "The alarm {} ({}) {verb}: {} over the last {} day(s) is {value}{unit}, {side} the threshold {}{unit}.\n\nSee it with GET /alarms/{}; change or silence it with PATCH /alarms/{} {{\"enabled\": false}}; turn these emails off with PUT /notifications/preferences {{\"category\": \"alarms\", \"emailEnabled\": false}}.",
        alarm.name, alarm.id, alarm.metric, alarm.window_days, alarm.threshold, alarm.id, alarm.id,
    );
    let notice = Notice {
        org_id: &alarm.org_id,
        category: "alarms",
        resource_type: "alarm",
        resource_id: &alarm.id,
        subject,
        text,
    };
    notify::email(db, &to, notice).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_emit_once() {
        assert_eq!(next(State::Pending, false), (State::Ok, None));
        assert_eq!(
            next(State::Pending, true),
            (State::Triggered, Some("alarm.triggered"))
        );
        assert_eq!(
            next(State::Ok, true),
            (State::Triggered, Some("alarm.triggered"))
        );
        assert_eq!(next(State::Triggered, true), (State::Triggered, None));
        assert_eq!(
            next(State::Triggered, false),
            (State::Ok, Some("alarm.resolved"))
        );
        assert_eq!(next(State::Ok, false), (State::Ok, None));
    }

    #[test]
    fn comparisons_are_strict() {
        let above = Rule {
            measure: Measure::Quantity,
            comparison: Comparison::Above,
            threshold: 5.0,
        };
        assert!(!above.holds(5.0));
        assert!(above.holds(5.5));
        let below = Rule {
            comparison: Comparison::Below,
            ..above
        };
        assert!(!below.holds(5.0));
        assert!(below.holds(4.0));
    }

    #[test]
    fn cost_is_priced_at_list() {
        let rule = Rule {
            measure: Measure::Cost,
            comparison: Comparison::Above,
            threshold: 1.0,
        };
        let price = prices::of("compute_hours").unwrap();
        assert_eq!(
            rule.value("compute_hours", 10.0),
            Some(prices::round_cents(price.list_cents(10.0)))
        );
        assert_eq!(rule.value("no_such_metric", 1.0), None);
    }

    #[test]
    fn windows_end_today() {
        let now = time::date_start_ms(time::parse_date("2026-03-10").unwrap()) + 3_600_000;
        assert_eq!(window(1, now), ("2026-03-10".into(), "2026-03-10".into()));
        assert_eq!(window(7, now), ("2026-03-04".into(), "2026-03-10".into()));
    }
}
