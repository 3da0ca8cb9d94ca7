//! Uptime, pure: the time a component spent in a status, cut into days
//! ([`split`]), and a day's bar from its totals ([`Bar`]). Uptime counts a
//! major outage whole and a partial outage at 30%, as Statuspage does;
//! degraded performance and maintenance are shown but not counted as down.

use crate::record::{ComponentStatus, DAY_MS, DayTotals};

/// Adds `ms` of `status` to `totals`.
pub fn add(totals: &mut DayTotals, status: ComponentStatus, ms: u64) {
    match status {
        ComponentStatus::Operational => {}
        ComponentStatus::MajorOutage => totals.major_ms += ms,
        ComponentStatus::PartialOutage => totals.partial_ms += ms,
        ComponentStatus::DegradedPerformance => totals.degraded_ms += ms,
        ComponentStatus::UnderMaintenance => totals.maintenance_ms += ms,
    }
}

/// The interval `[from, to)` as (day, milliseconds in that day), at most
/// the last [`crate::record::UPTIME_DAYS`] days of it.
pub fn split(from: u64, to: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if to <= from {
        return out;
    }
    let from = from.max(to.saturating_sub(crate::record::UPTIME_DAYS * DAY_MS));
    let mut at = from;
    while at < to {
        let day = at / DAY_MS;
        let end = ((day + 1) * DAY_MS).min(to);
        out.push((day, end - at));
        at = end;
    }
    out
}

/// One day of a component's bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    pub day: u64,
    /// None before the component existed.
    pub uptime: Option<f64>,
    /// The worst status seen that day.
    pub worst: ComponentStatus,
}

impl Bar {
    /// The bar of `day` from its totals; `known_ms` is the part of the day
    /// the component existed (and that has passed).
    pub fn of(day: u64, totals: &DayTotals, known_ms: u64) -> Bar {
        if known_ms == 0 {
            return Bar {
                day,
                uptime: None,
                worst: ComponentStatus::Operational,
            };
        }
        let down = totals.major_ms as f64 + 0.3 * totals.partial_ms as f64;
        let uptime = (1.0 - down / known_ms as f64).clamp(0.0, 1.0);
        let worst = if totals.major_ms > 0 {
            ComponentStatus::MajorOutage
        } else if totals.partial_ms > 0 {
            ComponentStatus::PartialOutage
        } else if totals.degraded_ms > 0 {
            ComponentStatus::DegradedPerformance
        } else if totals.maintenance_ms > 0 {
            ComponentStatus::UnderMaintenance
        } else {
            ComponentStatus::Operational
        };
        Bar {
            day,
            uptime: Some(uptime),
            worst,
        }
    }
}

/// The uptime over several bars, weighted by the time each knew.
pub fn overall(bars: &[(Bar, u64)]) -> Option<f64> {
    let known: u64 = bars.iter().map(|(_, k)| k).sum();
    if known == 0 {
        return None;
    }
    let up: f64 = bars
        .iter()
        .filter_map(|(b, k)| b.uptime.map(|u| u * *k as f64))
        .sum();
    Some(up / known as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_cut_at_midnight() {
        let start = 10 * DAY_MS + DAY_MS - 1000;
        assert_eq!(split(start, 11 * DAY_MS + 500), vec![(10, 1000), (11, 500)]);
        assert!(split(5, 5).is_empty());
        // Only the last 90 days are kept.
        let parts = split(0, 200 * DAY_MS);
        assert_eq!(parts.len(), 90);
        assert_eq!(parts[0], (110, DAY_MS));
    }

    #[test]
    fn a_bar_counts_major_whole_and_partial_at_thirty_percent() {
        let mut t = DayTotals::default();
        add(&mut t, ComponentStatus::MajorOutage, DAY_MS / 10);
        add(&mut t, ComponentStatus::PartialOutage, DAY_MS / 10);
        add(&mut t, ComponentStatus::DegradedPerformance, DAY_MS / 2);
        let bar = Bar::of(3, &t, DAY_MS);
        assert!((bar.uptime.unwrap() - 0.87).abs() < 1e-9);
        assert_eq!(bar.worst, ComponentStatus::MajorOutage);
        assert_eq!(Bar::of(3, &DayTotals::default(), 0).uptime, None);
        let all = overall(&[
            (bar, DAY_MS),
            (Bar::of(4, &DayTotals::default(), DAY_MS), DAY_MS),
        ]);
        assert!((all.unwrap() - 0.935).abs() < 1e-9);
    }
}
