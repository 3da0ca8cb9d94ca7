//! What a month's invoice costs, and how redeemed reward credit lowers it
//! (spec sections 4.1 and 4.3).
//!
//! A month costs the plan's flat price plus the overage of the price
//! table (`GET /usage`). Credit redeemed in a month lowers that month's
//! invoice first (the next invoice, the one still open), and what the
//! invoice does not take carries into the following months
//! (`plateau_core::rewards::apply_credit`). Past months are priced at the
//! organisation's current plan: the platform keeps no history of plans.

use plateau_core::rewards::{self, Month};
use plateau_core::{Plan, prices, time};
use plateau_store::rewards::redemptions;
use plateau_store::{Db, usage};

/// The overage of a month's totals per metric, in whole cents: each
/// metric's cost rounded to the cent, the sum rounded (what `GET /usage`
/// bills).
pub fn metered_cents(plan: Plan, totals: &[(String, f64)]) -> i64 {
    prices::PRICES
        .iter()
        .map(|price| {
            let quantity = totals
                .iter()
                .find(|(m, _)| m == price.metric)
                .map_or(0.0, |(_, q)| *q);
            prices::round_cents(price.overage_cents(plan, quantity))
        })
        .sum::<f64>()
        .round() as i64
}

/// The month (`YYYY-MM`, UTC) of `now`.
pub fn period(now: i64) -> String {
    time::to_date(now)[..7].to_owned()
}

/// Redeemed credit against the organisation's invoices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Credit {
    /// What this month's invoice takes.
    pub this_period_cents: i64,
    /// What is left for later months.
    pub remaining_cents: i64,
}

/// How the organisation's redeemed credit falls on its invoices up to
/// this month, whose plan costs `plan_cents` a month.
pub async fn credit(
    db: &Db,
    org_id: &str,
    plan: Plan,
    plan_cents: i64,
    now: i64,
) -> plateau_store::Result<Credit> {
    let redeemed = redemptions::credit_by_period(db, org_id).await?;
    let Some((first, _)) = redeemed.first() else {
        return Ok(Credit::default());
    };
    let current = period(now);
    let totals = usage::monthly_totals(db, org_id, first).await?;
    let mut months = Vec::new();
    let mut p = first.clone();
    // A redemption's month is never after the current one; the bound
    // keeps a wrong clock from looping.
    while p <= current && months.len() < 1200 {
        let of_month: Vec<(String, f64)> = totals
            .iter()
            .filter(|(m, _, _)| *m == p)
            .map(|(_, metric, q)| (metric.clone(), *q))
            .collect();
        months.push(Month {
            cost_cents: plan_cents + metered_cents(plan, &of_month),
            credit_cents: redeemed
                .iter()
                .find(|(r, _)| *r == p)
                .map_or(0, |(_, c)| *c),
            period: p.clone(),
        });
        p = rewards::next_period(&p);
    }
    let (taken, left) = rewards::apply_credit(&months);
    let this_period_cents = match (months.last(), taken.last()) {
        (Some(m), Some(t)) if m.period == current => *t,
        _ => 0,
    };
    Ok(Credit {
        this_period_cents,
        remaining_cents: left,
    })
}
