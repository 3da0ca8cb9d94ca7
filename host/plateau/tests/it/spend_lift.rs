//! A spend budget's limit lifts by itself once the spend is back under
//! 100%: raised past what was spent, the budget resumes the apps its
//! `pause_apps` action paused (`spend.limit.lifted`), as a new month
//! does, without `POST /spend/resume`.

use std::time::Duration;

use plateau_testkit::{Backend, ServerOptions};
use serde_json::json;

use crate::spend::{events_of, inject};
use crate::{create_org, eventually, start_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raised_budget_resumes_what_it_paused() {
    let s =
        start_with(ServerOptions::new(Backend::Sqlite).env("PLATEAU_ALARMS_EVALUATE_MS", "200"))
            .await;
    let c = s
        .client()
        .with_token(&create_org(&s, "lifter", "free").await);
    let org = c.get("/me").await.json()["organization"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = c.post("/apps", json!({ "name": "Worker" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let app_id = r.json()["id"].as_str().unwrap().to_owned();
    let r = c
        .post(
            "/spend/budgets",
            json!({ "amountCents": 100, "actions": ["pause_apps"] }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let budget_id = r.json()["id"].as_str().unwrap().to_owned();

    // Free includes 750 node-hours: 860 are 110 cents, past the budget.
    inject(&s, &org, None, "cch_a", "compute_hours", &[(0, 860.0)]).await;
    let within = Duration::from_secs(30);
    eventually("the app paused", within, || async {
        let spend = c.get("/spend").await.json();
        (spend["paused"].as_array().unwrap().len() == 1).then_some(())
    })
    .await;
    assert_eq!(
        c.get(&format!("/apps/{app_id}")).await.json()["status"],
        "paused"
    );

    // Raised past the spend: the limit lifts and the app resumes.
    let r = c
        .patch(
            &format!("/spend/budgets/{budget_id}"),
            json!({ "amountCents": 500 }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let lifted = eventually("the limit lifted", within, || async {
        events_of(&c, "spend.limit.lifted", &budget_id).await.pop()
    })
    .await;
    assert_eq!(lifted["data"]["resumedApps"], json!([app_id]), "{lifted}");
    let spend = c.get("/spend").await.json();
    assert_eq!(spend["paused"], json!([]), "{spend}");
    assert_eq!(spend["budgets"][0]["limited"], false, "{spend}");
    assert_eq!(
        c.get(&format!("/apps/{app_id}")).await.json()["status"],
        "created"
    );

    // Spent past the raised budget, it pauses again: the action is not
    // off for the month as after a resume by hand.
    inject(&s, &org, None, "cch_a", "compute_hours", &[(0, 500.0)]).await;
    eventually("the app paused again", within, || async {
        let spend = c.get("/spend").await.json();
        (spend["paused"].as_array().unwrap().len() == 1).then_some(())
    })
    .await;
    assert_eq!(
        events_of(&c, "spend.limit.reached", &budget_id).await.len(),
        2
    );
}
