//! The detector on labelled synthetic series: weekly seasonality, trend
//! and noise, with injected spikes, dips and level shifts. Scoring is by
//! event: an injected spike is found when its day is flagged, a level
//! shift when one of its first five days is (the trend adopts the new
//! level after about four); a flag inside no event's window is a false
//! positive. Precision and recall are printed and held to a floor.

use super::*;

/// A small deterministic generator (xorshift64*), so the figures repeat.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn between(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }

    /// A standard normal draw (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = self.next().max(1e-12);
        let v = self.next();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// An injected event: the days on which flagging it counts.
#[derive(Clone, Copy, Debug)]
struct Event {
    first: usize,
    last: usize,
}

const DAYS: usize = 150;
/// The first day judged: four weeks of history.
const FROM: usize = 28;

/// One labelled series: `spikes` spikes or dips, `shifts` level shifts.
fn series(rng: &mut Rng, spikes: usize, shifts: usize) -> (Vec<f64>, Vec<Event>) {
    let level = rng.between(50.0, 5_000.0);
    let sigma = level * rng.between(0.01, 0.05);
    let slope = level * rng.between(-0.002, 0.01);
    // Weekends lower, mid-week a little higher, by a series' own amount.
    let amplitude = level * rng.between(0.0, 0.4);
    let pattern = [0.2, 0.3, 0.3, 0.2, 0.0, -0.5, -0.5];
    let mut values: Vec<f64> = (0..DAYS)
        .map(|d| level + slope * d as f64 + amplitude * pattern[d % 7] + sigma * rng.normal())
        .collect();
    // Event days, at least 12 apart, in the judged range.
    let mut days: Vec<usize> = Vec::new();
    while days.len() < spikes + shifts {
        let d = rng.between(FROM as f64, (DAYS - 6) as f64) as usize;
        if days.iter().all(|o| o.abs_diff(d) >= 12) {
            days.push(d);
        }
    }
    let mut events = Vec::new();
    for (i, &d) in days.iter().enumerate() {
        let sign = if rng.next() < 0.3 { -1.0 } else { 1.0 };
        if i < spikes {
            values[d] += sign * sigma * rng.between(7.0, 15.0);
            events.push(Event { first: d, last: d });
        } else {
            let step = sign * level * rng.between(0.25, 0.6);
            values[d..].iter_mut().for_each(|v| *v += step);
            events.push(Event {
                first: d,
                last: d + 4,
            });
        }
    }
    for v in &mut values {
        *v = v.max(0.0);
    }
    (values, events)
}

/// The days the detector flags, judging each from its past.
fn flagged(values: &[f64], sensitivity: Sensitivity) -> Vec<usize> {
    (FROM..values.len())
        .filter(|&d| judge(&values[..d], values[d]).is_some_and(|j| j.is_anomaly(sensitivity)))
        .collect()
}

/// Precision and recall over `runs` series, printed under `name`.
fn score(
    name: &str,
    seed: u64,
    runs: usize,
    spikes: usize,
    shifts: usize,
    s: Sensitivity,
) -> (f64, f64) {
    let mut rng = Rng(seed);
    let (mut found, mut events, mut hits, mut flags) = (0, 0, 0, 0);
    for _ in 0..runs {
        let (values, labels) = series(&mut rng, spikes, shifts);
        let days = flagged(&values, s);
        events += labels.len();
        found += labels
            .iter()
            .filter(|e| days.iter().any(|d| (e.first..=e.last).contains(d)))
            .count();
        flags += days.len();
        hits += days
            .iter()
            .filter(|d| labels.iter().any(|e| (e.first..=e.last).contains(*d)))
            .count();
    }
    let precision = if flags == 0 {
        1.0
    } else {
        hits as f64 / flags as f64
    };
    let recall = if events == 0 {
        1.0
    } else {
        found as f64 / events as f64
    };
    eprintln!(
        "{name} ({}): {events} events, {flags} flags over {} judged days; precision {precision:.3}, recall {recall:.3}",
        s.as_str(),
        runs * (DAYS - FROM),
    );
    (precision, recall)
}

#[test]
fn spikes_and_shifts_are_found_on_seasonal_trending_series() {
    for s in [Sensitivity::Low, Sensitivity::High] {
        score("spikes and shifts", 7, 40, 4, 1, s);
    }
    let (precision, recall) = score("spikes and shifts", 7, 40, 4, 1, Sensitivity::Medium);
    assert!(precision >= 0.8, "precision {precision}");
    assert!(recall >= 0.8, "recall {recall}");
    let (precision, recall) = score("spikes only", 11, 40, 5, 0, Sensitivity::Medium);
    assert!(precision >= 0.8 && recall >= 0.8, "{precision} {recall}");
    let (precision, recall) = score("level shifts only", 13, 40, 0, 2, Sensitivity::Medium);
    assert!(precision >= 0.8 && recall >= 0.8, "{precision} {recall}");
}

#[test]
fn seasonality_and_trend_alone_are_not_anomalies() {
    let mut rng = Rng(23);
    let (mut flags, mut days) = (0, 0);
    for _ in 0..40 {
        let (values, _) = series(&mut rng, 0, 0);
        flags += flagged(&values, Sensitivity::Medium).len();
        days += DAYS - FROM;
    }
    let rate = flags as f64 / days as f64;
    eprintln!("clean series: {flags} flags over {days} judged days ({rate:.4} per day)");
    assert!(rate < 0.01, "{rate}");
}

#[test]
fn a_weekend_dip_is_the_season_and_a_weekday_dip_is_not() {
    // Five busy days, two quiet ones, eight weeks.
    let week = [100.0, 100.0, 100.0, 100.0, 100.0, 20.0, 20.0];
    let history: Vec<f64> = (0..56).map(|d| week[d % 7]).collect();
    let weekend = judge(&history[..54], 20.0).unwrap();
    assert!(!weekend.is_anomaly(Sensitivity::High), "{weekend:?}");
    let weekday = judge(&history, 20.0).unwrap();
    assert!(weekday.is_anomaly(Sensitivity::Low), "{weekday:?}");
    assert_eq!(weekday.direction(), "dip");
    assert!((weekday.expected - 100.0).abs() < 1e-6, "{weekday:?}");
}

#[test]
fn a_trend_is_followed() {
    let history: Vec<f64> = (0..30).map(|d| 10.0 + 2.0 * d as f64).collect();
    let next = judge(&history, 70.0).unwrap();
    assert!((next.expected - 70.0).abs() < 1e-6, "{next:?}");
    assert!(!next.is_anomaly(Sensitivity::High));
    assert!(
        judge(&history, 120.0)
            .unwrap()
            .is_anomaly(Sensitivity::Medium)
    );
}

#[test]
fn short_histories_and_silence_are_not_judged() {
    assert_eq!(judge(&[1.0; 13], 50.0), None);
    let quiet = judge(&[0.0; 20], 0.0).unwrap();
    assert_eq!(quiet.score, 0.0);
    assert_eq!(Sensitivity::parse("medium"), Some(Sensitivity::Medium));
    assert_eq!(Sensitivity::parse("extreme"), None);
}
