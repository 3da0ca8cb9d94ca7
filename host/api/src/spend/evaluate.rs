//! The budgets' evaluation, in the alarms' pass: each budget's spend this
//! month, the threshold it newly reached (`spend.threshold.reached`), and
//! at 100% the actions its user chose (`spend.limit.reached`, apps paused
//! through [`AppsControl`]), and their undoing once the spend is back
//! under 100% (`spend.limit.lifted`, the apps it paused resumed). What it
//! notified and did is a compare-and-set
//! in the transaction that records the events, the paused apps and the
//! `spend.email.requested` notice, so several API processes act once.

use plateau_core::{Plan, time};
use plateau_store::Db;
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::spend::{self, Budget, Next};
use plateau_store::{orgs, usage};
use serde_json::json;

use super::{Action, AppsControl, BudgetState, Decision, PausedApp};
use crate::notify::{self, Notice};

const PAGE: i64 = 200;

/// The month (`YYYY-MM`, UTC) of `now`.
pub fn period(now: i64) -> String {
    time::to_date(now)[..7].to_owned()
}

/// This month's spend of the organisation, or of one of its projects, in
/// cents.
pub async fn spent(
    db: &Db,
    org_id: &str,
    project_id: Option<&str>,
    plan: Plan,
    now: i64,
) -> plateau_store::Result<f64> {
    let (start, _) = time::month_bounds(now);
    let (from, to) = (time::to_date(start), time::to_date(now));
    let org = usage::totals(db, org_id, &from, &to).await?;
    Ok(match project_id {
        None => super::org_cents(plan, &org),
        Some(project) => {
            let own = spend::project_totals(db, org_id, project, &from, &to).await?;
            super::project_cents(plan, &org, &own)
        }
    })
}

/// The organisation's plan, read for the evaluator.
pub async fn plan_of(db: &Db, org_id: &str) -> plateau_store::Result<Option<Plan>> {
    Ok(orgs::get(db, org_id)
        .await?
        .and_then(|o| o.plan.parse::<Plan>().ok()))
}

/// Evaluates every budget once; answers how many acted.
pub async fn evaluate_all(
    db: &Db,
    apps: Option<&dyn AppsControl>,
    now: i64,
) -> plateau_store::Result<usize> {
    let mut after = String::new();
    let mut acted = 0;
    loop {
        let page = spend::page(db, &after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = last.id.clone();
        for budget in &page {
            match evaluate(db, apps, budget, now).await {
                Ok(true) => acted += 1,
                Ok(false) => {}
                Err(e) => tracing::warn!(budget = %budget.id, error = %e, "evaluating a budget"),
            }
        }
    }
    Ok(acted)
}

/// Evaluates one budget; true when it notified or acted.
async fn evaluate(
    db: &Db,
    apps: Option<&dyn AppsControl>,
    b: &Budget,
    now: i64,
) -> plateau_store::Result<bool> {
    let Some(plan) = plan_of(db, &b.org_id).await? else {
        return Ok(false);
    };
    let spent = plateau_core::prices::round_cents(
        spent(db, &b.org_id, b.project_id.as_deref(), plan, now).await?,
    );
    let period = period(now);
    let thresholds: Vec<i64> = serde_json::from_str(&b.thresholds).unwrap_or_default();
    let actions = Action::of(&b.actions);
    let percent = super::percent(spent, b.amount_cents);
    let decision = super::decide(
        &BudgetState {
            thresholds: &thresholds,
            period: &b.period,
            notified: b.notified_percent,
            has_actions: !actions.is_empty(),
            limited: b.limited_at.is_some(),
            resumed_period: &b.resumed_period,
        },
        &period,
        percent,
    );
    if decision.notify.is_none() && !decision.limit && !decision.lift && b.period == period {
        spend::observed(db, &b.id, spent, now).await?;
        return Ok(false);
    }
    let next = Next {
        period: period.clone(),
        notified_percent: decision.notified,
        limited_at: if decision.limit {
            Some(now)
        } else if decision.lift {
            None
        } else {
            b.limited_at
        },
        spent_cents: spent,
    };
    let mut tx = db.begin().await?;
    if !spend::transition(&mut tx, b, &next, now).await? {
        return Ok(false);
    }
    let data = json!({
        "budgetId": b.id,
        "projectId": b.project_id,
        "period": period,
        "amountCents": b.amount_cents,
        "spentCents": spent,
        "percent": plateau_core::prices::round_cents(percent),
    });
    let actor = Actor::system();
    if let Some(threshold) = decision.notify {
        let mut data = data.clone();
        data["threshold"] = json!(threshold);
        let event = NewEvent::noticed(
            &b.org_id,
            "spend.threshold.reached",
            "spend",
            "notify",
            &actor,
        )
        .resource("spend_budget", &b.id)
        .data(data);
        events::record(&mut tx, &event, now).await?;
    }
    let mut paused: Vec<PausedApp> = Vec::new();
    if decision.limit {
        if actions.contains(&Action::PauseApps)
            && let Some(apps) = apps
        {
            paused = apps
                .pause(&mut tx, &b.org_id, b.project_id.as_deref(), now)
                .await?;
            for app in &paused {
                spend::add_paused(&mut tx, &b.org_id, &b.id, &app.id, &app.name, now).await?;
            }
        }
        let mut data = data.clone();
        data["actions"] = json!(actions.iter().map(|a| a.as_str()).collect::<Vec<_>>());
        data["pausedApps"] = json!(paused.iter().map(|a| &a.id).collect::<Vec<_>>());
        let event = NewEvent::noticed(&b.org_id, "spend.limit.reached", "spend", "notify", &actor)
            .resource("spend_budget", &b.id)
            .data(data);
        events::record(&mut tx, &event, now).await?;
    }
    if decision.lift {
        let mut resumed = Vec::new();
        for p in spend::take_paused(&mut tx, &b.org_id, &b.id).await? {
            if let Some(apps) = apps
                && apps.resume(&mut tx, &b.org_id, &p.app_id, now).await?
            {
                resumed.push(p.app_id);
            }
        }
        let mut data = data.clone();
        data["resumedApps"] = json!(resumed);
        let event = NewEvent::noticed(&b.org_id, "spend.limit.lifted", "spend", "notify", &actor)
            .resource("spend_budget", &b.id)
            .data(data);
        events::record(&mut tx, &event, now).await?;
    }
    if let Some(email) = email(db, b, &decision, spent, &actions, &paused).await? {
        events::record(&mut tx, &email, now).await?;
    }
    tx.commit().await?;
    Ok(decision.notify.is_some() || decision.limit || decision.lift)
}

async fn email(
    db: &Db,
    b: &Budget,
    decision: &Decision,
    spent: f64,
    actions: &[Action],
    paused: &[PausedApp],
) -> plateau_store::Result<Option<NewEvent>> {
    if decision.notify.is_none() && !decision.limit {
        return Ok(None);
    }
    let to: Vec<String> = serde_json::from_str(&b.notify_emails).unwrap_or_default();
    let whose = match &b.project_id {
        Some(project) => format!("project {project}"),
        None => "the organisation".to_owned(),
    };
    let reached = decision.notified;
    let mut text = format!(
        "The monthly spend of {whose} is {spent} cents, {reached}% or more of its budget of {} cents.",
        b.amount_cents
    );
    if decision.limit {
        let done: Vec<String> = actions
            .iter()
            .map(|a| match a {
                Action::PauseApps => format!(
                    "paused {} app(s): {}",
                    paused.len(),
                    paused
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Action::RefuseNew => "new resources are refused".to_owned(),
            })
            .collect();
        text.push_str(&format!(
            "\n\nAs you chose: {}. Undo it with POST /spend/resume.",
            done.join("; ")
        ));
    }
    text.push_str(
        "\n\nSee it with GET /spend; turn these emails off with PUT /notifications/preferences {\"category\": \"spend\", \"emailEnabled\": false}.",
    );
    let notice = Notice {
        org_id: &b.org_id,
        category: "spend",
        resource_type: "spend_budget",
        resource_id: &b.id,
        subject: format!("Spend at {reached}% of the budget of {whose}"),
        text,
    };
    notify::email(db, &to, notice).await
}
