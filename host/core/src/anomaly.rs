//! Anomaly detection on a daily series (issue 34): is one day's quantity
//! unusual given the weeks before it?
//!
//! The method is a robust seasonal-trend decomposition, judged one day
//! ahead so a day is decided from its past only:
//! 1. **trend**: a centred moving median over 7 days of the history (the
//!    last [`MAX_HISTORY`] days before the judged one);
//! 2. **weekly season**: for each day of the week, the median of what the
//!    history lies above or below its trend, centred to sum to zero; the
//!    trend is then taken again over the deseasonalised series (two
//!    passes, as STL's inner loop does);
//! 3. **expected value**: the last trend value with a full window (four
//!    days before the judged day), carried forward by the slope (the
//!    median of the trend's week-on-week changes, per day), plus the
//!    judged day's seasonal component, and never below zero;
//! 4. **score**: how far the day lies from that, in robust standard
//!    deviations of the history's residuals (1.4826 × their median
//!    absolute deviation, inflated by [`FORECAST_INFLATION`] because a
//!    forecast errs more than an in-sample fit, and at least 2% of the
//!    expected value so a flat series does not flag rounding).
//!
//! A day is an anomaly when the score's magnitude passes the
//! [`Sensitivity`]'s threshold. Medians rather than means make one
//! spike in the history change nothing; a level shift is flagged on the
//! days until the trend's median adopts the new level (about four).

/// Days in a season: usage follows the week.
pub const SEASON: usize = 7;
/// The fewest days of history a day is judged against: two weeks.
pub const MIN_HISTORY: usize = 14;
/// The most days of history read: eight weeks.
pub const MAX_HISTORY: usize = 56;
/// How much more a one-day-ahead forecast errs than the in-sample
/// residuals show (measured on the labelled series of the tests).
pub const FORECAST_INFLATION: f64 = 1.5;
/// 1.4826 × MAD estimates the standard deviation of normal noise.
const MAD_TO_SIGMA: f64 = 1.4826;
/// The smallest scale, as a share of the expected value.
const MIN_RELATIVE_SCALE: f64 = 0.02;

/// How unusual a day must be to be an anomaly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sensitivity {
    /// Scores past 5.
    Low,
    /// Scores past 3.5.
    Medium,
    /// Scores past 2.5.
    High,
}

impl Sensitivity {
    pub const ALL: [&'static str; 3] = ["low", "medium", "high"];

    pub fn parse(s: &str) -> Option<Sensitivity> {
        match s {
            "low" => Some(Sensitivity::Low),
            "medium" => Some(Sensitivity::Medium),
            "high" => Some(Sensitivity::High),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Sensitivity::Low => "low",
            Sensitivity::Medium => "medium",
            Sensitivity::High => "high",
        }
    }

    /// The score a day's magnitude must pass.
    pub fn threshold(self) -> f64 {
        match self {
            Sensitivity::Low => 5.0,
            Sensitivity::Medium => 3.5,
            Sensitivity::High => 2.5,
        }
    }
}

/// What the detector made of one day.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judgement {
    /// What the history predicts for the day.
    pub expected: f64,
    /// `(value - expected) / scale`: positive above, negative below.
    pub score: f64,
}

impl Judgement {
    pub fn is_anomaly(&self, sensitivity: Sensitivity) -> bool {
        self.score.abs() > sensitivity.threshold()
    }

    /// `spike` above what was expected, `dip` below.
    pub fn direction(&self) -> &'static str {
        if self.score >= 0.0 { "spike" } else { "dip" }
    }
}

/// Judges `value` as the day right after `history` (consecutive days,
/// oldest first; only the last [`MAX_HISTORY`] are read). `None` when
/// the history is shorter than [`MIN_HISTORY`].
pub fn judge(history: &[f64], value: f64) -> Option<Judgement> {
    let h = &history[history.len().saturating_sub(MAX_HISTORY)..];
    let n = h.len();
    if n < MIN_HISTORY {
        return None;
    }
    let half = SEASON / 2;
    let mut trend = moving_median(h);
    let mut season = [0.0; SEASON];
    for _ in 0..2 {
        for (slot, s) in season.iter_mut().enumerate() {
            let around: Vec<f64> = (slot..n).step_by(SEASON).map(|i| h[i] - trend[i]).collect();
            *s = median(around);
        }
        let mean = season.iter().sum::<f64>() / SEASON as f64;
        season.iter_mut().for_each(|s| *s -= mean);
        let deseasoned: Vec<f64> = (0..n).map(|i| h[i] - season[i % SEASON]).collect();
        trend = moving_median(&deseasoned);
    }
    // Indices whose trend had a full window.
    let (first, last) = (half, n - 1 - half);
    let slope = median(
        (first + SEASON..=last)
            .map(|i| (trend[i] - trend[i - SEASON]) / SEASON as f64)
            .collect(),
    );
    let residuals: Vec<f64> = (first..=last)
        .map(|i| h[i] - trend[i] - season[i % SEASON])
        .collect();
    let centre = median(residuals.clone());
    let mad = median(residuals.iter().map(|r| (r - centre).abs()).collect());
    let expected = (trend[last] + (n - last) as f64 * slope + season[n % SEASON]).max(0.0);
    let scale = (MAD_TO_SIGMA * mad * FORECAST_INFLATION)
        .max(MIN_RELATIVE_SCALE * expected)
        .max(1e-9);
    Some(Judgement {
        expected,
        score: (value - expected) / scale,
    })
}

/// The centred moving median over [`SEASON`] values, the window cut at
/// either end.
fn moving_median(values: &[f64]) -> Vec<f64> {
    let half = SEASON / 2;
    (0..values.len())
        .map(|i| {
            let from = i.saturating_sub(half);
            let to = (i + half + 1).min(values.len());
            median(values[from..to].to_vec())
        })
        .collect()
}

/// The median; 0 for nothing.
fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests;
