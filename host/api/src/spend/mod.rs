//! Spend budgets (spec section 4.10): what a month costs an organisation
//! or one of its projects, against a budget, with notices at thresholds
//! and the actions the user chose for 100% ([`Action`]).
//!
//! **What spend is.** The cost `GET /usage` bills past the plan: each
//! metric's quantity this month (UTC) beyond what the plan includes, at
//! the price table's list price (`plateau_core::prices`); the plan's flat
//! price is not spend (it is due whatever happens). A project's spend is
//! its share of that: each metric's overage split by the project's share
//! of the metric's quantity, so the projects' spends add up to the
//! organisation's. A project inside the plan's inclusions spends nothing.
//!
//! The evaluation ([`evaluate`]) runs in the alarms' pass; the actions
//! are taken and undone through [`AppsControl`] (the apps crate's), and
//! new resources are refused by [`guard`]. A limit is lifted, and what it
//! paused resumed, by `POST /spend/resume`, or by the evaluation once the
//! spend is back under 100% (the budget was raised, or a new month
//! began).

pub mod evaluate;
pub mod guard;

use futures::future::BoxFuture;
use plateau_core::{Plan, prices};
use plateau_store::Tx;

/// The thresholds a budget notifies at unless told otherwise.
pub const DEFAULT_THRESHOLDS: [i64; 3] = [50, 80, 100];
/// The most thresholds one budget has, and the highest percent.
pub const MAX_THRESHOLDS: usize = 10;
pub const MAX_PERCENT: i64 = 1000;

/// What happens when a budget's spend reaches 100%.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Pause the organisation's (or the project's) apps.
    PauseApps,
    /// Refuse new projects, apps, databases, caches and buckets.
    RefuseNew,
}

impl Action {
    pub const ALL: [&'static str; 2] = ["pause_apps", "refuse_new"];

    pub fn parse(s: &str) -> Option<Action> {
        match s {
            "pause_apps" => Some(Action::PauseApps),
            "refuse_new" => Some(Action::RefuseNew),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::PauseApps => "pause_apps",
            Action::RefuseNew => "refuse_new",
        }
    }

    /// The actions of a stored budget (a JSON array).
    pub fn of(stored: &str) -> Vec<Action> {
        serde_json::from_str::<Vec<String>>(stored)
            .unwrap_or_default()
            .iter()
            .filter_map(|s| Action::parse(s))
            .collect()
    }
}

/// An app a budget paused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PausedApp {
    pub id: String,
    pub name: String,
}

/// Pausing and resuming apps, which the apps crate owns (what a paused
/// app's status is, and what it resumes to). Both run in the caller's
/// transaction and record the app's own event.
pub trait AppsControl: Send + Sync {
    /// Pauses the organisation's apps (one project's, when given) that are
    /// not paused; answers those it paused.
    fn pause<'a>(
        &'a self,
        tx: &'a mut Tx,
        org_id: &'a str,
        project_id: Option<&'a str>,
        now: i64,
    ) -> BoxFuture<'a, plateau_store::Result<Vec<PausedApp>>>;

    /// Resumes one app if it is still paused; false when it is not (or is
    /// gone).
    fn resume<'a>(
        &'a self,
        tx: &'a mut Tx,
        org_id: &'a str,
        app_id: &'a str,
        now: i64,
    ) -> BoxFuture<'a, plateau_store::Result<bool>>;
}

/// The organisation's spend, in cents, from its month's totals per metric.
pub fn org_cents(plan: Plan, totals: &[(String, f64)]) -> f64 {
    totals
        .iter()
        .filter_map(|(metric, q)| Some(prices::of(metric)?.overage_cents(plan, *q)))
        .sum()
}

/// A project's spend: each metric's overage split by the project's share
/// of the organisation's quantity.
pub fn project_cents(plan: Plan, org: &[(String, f64)], project: &[(String, f64)]) -> f64 {
    project
        .iter()
        .filter_map(|(metric, q)| {
            let price = prices::of(metric)?;
            let total = org.iter().find(|(m, _)| m == metric).map(|(_, t)| *t)?;
            (total > 0.0).then(|| price.overage_cents(plan, total) * (q / total).min(1.0))
        })
        .sum()
}

/// Spend as a percent of the budget.
pub fn percent(spent_cents: f64, amount_cents: i64) -> f64 {
    spent_cents / amount_cents.max(1) as f64 * 100.0
}

/// The highest of `thresholds` that `percent` reached; 0 for none.
pub fn reached(thresholds: &[i64], percent: f64) -> i64 {
    thresholds
        .iter()
        .copied()
        .filter(|t| percent >= *t as f64)
        .max()
        .unwrap_or(0)
}

/// What an evaluation does about a budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The threshold to notify, when one is newly reached this month.
    pub notify: Option<i64>,
    /// Whether to take the 100% actions now.
    pub limit: bool,
    /// Whether to undo them: the budget is limited but its spend is back
    /// under 100%, because the budget was raised or a new month began.
    pub lift: bool,
    /// The threshold notified this month after the evaluation.
    pub notified: i64,
}

/// What a budget in `state` should do at `percent` in `period`.
pub fn decide(state: &BudgetState<'_>, period: &str, percent: f64) -> Decision {
    let notified = if state.period == period {
        state.notified
    } else {
        0
    };
    let now_reached = reached(state.thresholds, percent);
    let notify = (now_reached > notified).then_some(now_reached);
    let limit =
        percent >= 100.0 && state.has_actions && !state.limited && state.resumed_period != period;
    Decision {
        notify,
        limit,
        lift: state.limited && percent < 100.0,
        notified: notified.max(now_reached),
    }
}

/// The parts of a stored budget [`decide`] reads.
pub struct BudgetState<'a> {
    pub thresholds: &'a [i64],
    pub period: &'a str,
    pub notified: i64,
    pub has_actions: bool,
    pub limited: bool,
    pub resumed_period: &'a str,
}

#[cfg(test)]
mod tests;
