//! Anomaly monitors (spec sections 4.7 and 6): each enabled monitor's
//! daily series is judged by [`plateau_core::anomaly`] one complete day
//! (UTC) at a time, in the same evaluation pass as the alarms
//! (`PLATEAU_ALARMS_EVALUATE_MS`, [`evaluate_all`]).
//!
//! The series store keeps daily points only, so only daily series are
//! judged: there is no hourly series to watch. Today is never judged (it
//! is not over, and would look like a dip). On its first evaluation a
//! monitor judges the last [`LOOK_BACK_DAYS`] complete days, then each
//! new day once; after a pause of the evaluator it catches up on at most
//! that many days. The days before the series' first point are not
//! history (a resource created last week has no zero usage before).
//!
//! A judged span is recorded by moving `checked_day` forward by
//! compare-and-set in the transaction that records its anomalies, one
//! `anomaly.detected` event each, and one `anomalies.email.requested`
//! for `notifyEmails` while the `anomalies` email preference is on: among
//! several API processes, one reports each day.

use plateau_core::anomaly::{self, Judgement, Sensitivity};
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_store::Db;
use plateau_store::anomalies::{self, Anomaly, Monitor};
use plateau_store::events::{self, Actor, NewEvent};
use serde_json::json;

use crate::notify::{self, Notice};

/// The most monitors an organisation may have.
pub const MAX_MONITORS: i64 = 50;
/// Complete days a new monitor judges on its first evaluation, and the
/// most one evaluation catches up on.
pub const LOOK_BACK_DAYS: i64 = 7;
const PAGE: i64 = 200;
const DAY_MS: i64 = 86_400_000;

/// Judges every enabled monitor's new complete days; answers how many
/// anomalies were found.
pub async fn evaluate_all(db: &Db, now: i64) -> plateau_store::Result<usize> {
    let mut after = String::new();
    let mut found = 0;
    loop {
        let page = anomalies::enabled_page(db, &after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = last.id.clone();
        for monitor in &page {
            match evaluate(db, monitor, now).await {
                Ok(n) => found += n,
                Err(e) => tracing::warn!(monitor = %monitor.id, error = %e, "judging a monitor"),
            }
        }
    }
    Ok(found)
}

/// The days to judge: from the day after `checked_day` (or
/// [`LOOK_BACK_DAYS`] ago) to yesterday, as day starts in ms.
pub fn days_to_judge(checked_day: &str, now: i64) -> Vec<i64> {
    let yesterday = now - now.rem_euclid(DAY_MS) - DAY_MS;
    let earliest = yesterday - (LOOK_BACK_DAYS - 1) * DAY_MS;
    let first = time::parse_date(checked_day)
        .map(|d| time::date_start_ms(d) + DAY_MS)
        .unwrap_or(earliest)
        .max(earliest);
    (0..)
        .map(|i| first + i * DAY_MS)
        .take_while(|d| *d <= yesterday)
        .collect()
}

/// Judges each of `days` against the series before it; `series` holds
/// `(day, quantity)` from at least [`anomaly::MAX_HISTORY`] days before
/// the first, days without a point absent. The days before the series'
/// first point are not history.
pub fn judge_days(series: &[(String, f64)], days: &[i64]) -> Vec<(i64, f64, Judgement)> {
    let Some((first_point, _)) = series.first() else {
        return Vec::new();
    };
    let Some(start) = time::parse_date(first_point).map(time::date_start_ms) else {
        return Vec::new();
    };
    let Some(&end) = days.iter().max() else {
        return Vec::new();
    };
    let len = ((end - start) / DAY_MS + 1).max(0) as usize;
    let mut dense = vec![0.0; len];
    for (day, quantity) in series {
        if let Some(at) = time::parse_date(day).map(time::date_start_ms)
            && let Some(slot) = dense.get_mut(((at - start) / DAY_MS) as usize)
        {
            *slot += quantity;
        }
    }
    days.iter()
        .filter(|d| **d >= start)
        .filter_map(|&d| {
            let i = ((d - start) / DAY_MS) as usize;
            anomaly::judge(&dense[..i], dense[i]).map(|j| (d, dense[i], j))
        })
        .collect()
}

/// Judges one monitor's new days; answers how many anomalies it recorded.
async fn evaluate(db: &Db, m: &Monitor, now: i64) -> plateau_store::Result<usize> {
    let Some(sensitivity) = Sensitivity::parse(&m.sensitivity) else {
        return Ok(0);
    };
    let days = days_to_judge(&m.checked_day, now);
    let (Some(&first), Some(&last)) = (days.first(), days.last()) else {
        return Ok(0);
    };
    let from = time::to_date(first - anomaly::MAX_HISTORY as i64 * DAY_MS);
    let series = anomalies::daily(db, m, &from, &time::to_date(last)).await?;
    let found: Vec<Anomaly> = judge_days(&series, &days)
        .into_iter()
        .filter(|(_, _, j)| j.is_anomaly(sensitivity))
        .map(|(day, value, j)| Anomaly {
            id: new_id("anm"),
            org_id: m.org_id.clone(),
            monitor_id: m.id.clone(),
            metric: m.metric.clone(),
            project_id: m.project_id.clone(),
            resource_id: m.resource_id.clone(),
            day: time::to_date(day),
            value,
            expected: round(j.expected),
            score: round(j.score),
            direction: j.direction().to_owned(),
            detected_at: now,
        })
        .collect();
    let mut tx = db.begin().await?;
    if !anomalies::advance(&mut tx, m, &time::to_date(last)).await? {
        return Ok(0);
    }
    for a in &found {
        anomalies::insert_anomaly(&mut tx, a).await?;
        let event = NewEvent::noticed(
            &m.org_id,
            "anomaly.detected",
            "anomalies",
            "notify",
            &Actor::system(),
        )
        .resource("anomaly_monitor", &m.id)
        .data(json!({
            "anomalyId": a.id,
            "name": m.name,
            "metric": a.metric,
            "day": a.day,
            "value": a.value,
            "expected": a.expected,
            "score": a.score,
            "direction": a.direction,
            "sensitivity": m.sensitivity,
            "projectId": a.project_id,
            "resourceId": a.resource_id,
        }));
        events::record(&mut tx, &event, now).await?;
    }
    if !found.is_empty()
        && let Some(email) = email(db, m, &found).await?
    {
        events::record(&mut tx, &email, now).await?;
    }
    tx.commit().await?;
    Ok(found.len())
}

/// Rounds to four decimals, as the API shows figures.
fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

async fn email(db: &Db, m: &Monitor, found: &[Anomaly]) -> plateau_store::Result<Option<NewEvent>> {
    let to: Vec<String> = serde_json::from_str(&m.notify_emails).unwrap_or_default();
    let lines: Vec<String> = found
        .iter()
        .map(|a| {
            format!(
                "- {}: {} {} where about {} was expected (score {})",
                a.day, a.direction, a.value, a.expected, a.score
            )
        })
        .collect();
    let text = format!(
        "The anomaly monitor {} ({}) found unusual days of {}:\n{}\n\nList them with GET /anomalies?monitorId={}; change or silence the monitor with PATCH /anomalies/monitors/{} {{\"enabled\": false}}; turn these emails off with PUT /notifications/preferences {{\"category\": \"anomalies\", \"emailEnabled\": false}}.",
        m.name,
        m.id,
        m.metric,
        lines.join("\n"),
        m.id,
        m.id,
    );
    let notice = Notice {
        org_id: &m.org_id,
        category: "anomalies",
        resource_type: "anomaly_monitor",
        resource_id: &m.id,
        subject: format!("Anomaly in {}: {}", m.metric, m.name),
        text,
    };
    notify::email(db, &to, notice).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(day: &str) -> i64 {
        time::date_start_ms(time::parse_date(day).unwrap())
    }

    #[test]
    fn a_new_monitor_looks_back_a_week_then_takes_each_day_once() {
        let now = at("2026-03-10") + 3_600_000;
        let days = days_to_judge("", now);
        assert_eq!(days.len(), 7);
        assert_eq!(time::to_date(days[0]), "2026-03-03");
        assert_eq!(time::to_date(days[6]), "2026-03-09");
        assert!(days_to_judge("2026-03-09", now).is_empty());
        assert_eq!(days_to_judge("2026-03-08", now), vec![at("2026-03-09")]);
        assert_eq!(days_to_judge("2026-01-01", now).len(), 7);
    }

    #[test]
    fn missing_days_are_zero_and_the_series_starts_at_its_first_point() {
        // Three weeks of 10 a day from March 1st but for one missing day,
        // then a spike on the 22nd.
        let mut series: Vec<(String, f64)> = (1..=21)
            .filter(|d| *d != 12)
            .map(|d| (format!("2026-03-{d:02}"), 10.0))
            .collect();
        series.push(("2026-03-22".into(), 60.0));
        let judged = judge_days(&series, &[at("2026-03-22"), at("2026-03-12")]);
        assert_eq!(judged.len(), 1, "the 12th has too short a history");
        let (day, value, j) = judged[0];
        assert_eq!((day, value), (at("2026-03-22"), 60.0));
        assert!(j.is_anomaly(Sensitivity::Low), "{j:?}");
        // Days before the first point are not judged at all.
        assert!(judge_days(&series, &[at("2026-02-20")]).is_empty());
    }
}
