//! The spend rules: what is spend, which threshold notifies once a
//! month, and when the 100% actions run.

use super::*;

fn state<'a>(notified: i64, limited: bool, resumed: &'a str) -> BudgetState<'a> {
    BudgetState {
        thresholds: &DEFAULT_THRESHOLDS,
        period: "2026-11",
        notified,
        has_actions: true,
        limited,
        resumed_period: resumed,
    }
}

#[test]
fn spend_is_the_overage_and_projects_share_it() {
    let org = vec![
        ("compute_hours".to_owned(), 850.0),
        ("app_requests".to_owned(), 10.0),
    ];
    // Free includes 750 node-hours at 1 cent each past them.
    assert_eq!(org_cents(Plan::Free, &org), 100.0);
    assert_eq!(org_cents(Plan::Pro, &org), 0.0);
    let project = vec![("compute_hours".to_owned(), 425.0)];
    assert_eq!(project_cents(Plan::Free, &org, &project), 50.0);
    assert_eq!(project_cents(Plan::Free, &org, &[]), 0.0);
    assert_eq!(percent(50.0, 200), 25.0);
}

#[test]
fn each_threshold_notifies_once_a_month() {
    assert_eq!(reached(&DEFAULT_THRESHOLDS, 49.9), 0);
    assert_eq!(reached(&DEFAULT_THRESHOLDS, 85.0), 80);
    let d = decide(&state(0, false, ""), "2026-11", 85.0);
    assert_eq!((d.notify, d.limit, d.notified), (Some(80), false, 80));
    let d = decide(&state(80, false, ""), "2026-11", 90.0);
    assert_eq!((d.notify, d.limit), (None, false));
    // A new month starts over.
    let d = decide(&state(80, false, ""), "2026-12", 60.0);
    assert_eq!((d.notify, d.notified), (Some(50), 50));
    // A budget lowered below what was spent notifies nothing new until
    // a higher threshold.
    let d = decide(&state(100, true, ""), "2026-11", 40.0);
    assert_eq!((d.notify, d.limit, d.notified), (None, false, 100));
}

#[test]
fn a_limit_lifts_once_the_spend_is_back_under_the_budget() {
    // Raised past the spend, or a new month: the actions are undone.
    assert!(decide(&state(100, true, ""), "2026-11", 40.0).lift);
    assert!(decide(&state(100, true, ""), "2026-12", 0.0).lift);
    // Still at or past 100%, or never limited: nothing to undo.
    assert!(!decide(&state(100, true, ""), "2026-11", 100.0).lift);
    assert!(!decide(&state(80, false, ""), "2026-11", 40.0).lift);
}

#[test]
fn the_actions_run_once_and_not_again_after_a_resume() {
    let d = decide(&state(80, false, ""), "2026-11", 100.0);
    assert_eq!((d.notify, d.limit), (Some(100), true));
    assert!(!decide(&state(100, true, ""), "2026-11", 150.0).limit);
    assert!(!decide(&state(100, false, "2026-11"), "2026-11", 150.0).limit);
    assert!(decide(&state(100, false, "2026-11"), "2026-12", 150.0).limit);
    let none = BudgetState {
        has_actions: false,
        ..state(0, false, "")
    };
    assert!(!decide(&none, "2026-11", 150.0).limit);
    assert_eq!(
        Action::of(r#"["refuse_new","nope"]"#),
        vec![Action::RefuseNew]
    );
}
