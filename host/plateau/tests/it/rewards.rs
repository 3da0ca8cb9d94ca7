//! `/rewards` on each backend (its SQL differs): the operator configures lines; a
//! claim is accepted only when the platform's records show the action (a
//! `project.created` event, a month's usage in the series store) and a
//! line asking for review waits for the operator's session (a token, even
//! the owner's, is refused with 403); a referral link counts clicks and
//! the sign-up the operator credits with its code; redemption refuses a
//! gift card under 5 dollars naming `amountCents`, and credit lowers the
//! period's cost in `GET /usage`. Another organisation sees none of it.

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};

use crate::admin::login;
use crate::spend::inject;
use crate::{create_org, event_types, start};

fn field_of(r: &plateau_testkit::Response) -> String {
    r.json()["errors"][0]["field"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn balance(c: &Client) -> i64 {
    c.get("/rewards").await.json()["balanceCents"]
        .as_i64()
        .unwrap()
}

async fn line(admin: &Client, body: Value) -> Value {
    let r = admin.post("/admin/rewards/lines", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

crate::on_both_backends!(rewards_are_verified_reviewed_redeemed_and_isolated);

async fn rewards_are_verified_reviewed_redeemed_and_isolated(backend: Backend) {
    let s = start(backend).await;
    let admin = s.anonymous().with_cookie(&login(&s).await);
    let c = s
        .client()
        .with_token(&create_org(&s, "earner", "free").await);
    let org = c.get("/me").await.json()["organization"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // The operator's lines; bad ones name their field, and a token, even
    // the owner's, does not open the operator's routes.
    for (body, field) in [
        (
            json!({ "key": "x", "title": "X", "kind": "nope", "amountCents": 1 }),
            "kind",
        ),
        (
            json!({ "key": "x", "title": "X", "kind": "usage", "amountCents": 1, "threshold": 1 }),
            "metric",
        ),
        (
            json!({ "key": "x", "title": "X", "kind": "resource", "amountCents": 0, "resourceType": "app" }),
            "amountCents",
        ),
        (
            json!({ "key": "Bad Key", "title": "X", "kind": "referral", "amountCents": 1 }),
            "key",
        ),
    ] {
        let r = admin.post("/admin/rewards/lines", body).await;
        assert_eq!(
            (r.status, field_of(&r)),
            (400, field.to_owned()),
            "{}",
            r.text()
        );
    }
    let project_line = json!({ "key": "first-project", "title": "Make a project", "kind": "event",
        "eventType": "project.created", "amountCents": 700, "maxClaims": 2 });
    let r = s
        .client()
        .post("/admin/rewards/lines", project_line.clone())
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "admin_session_required")
    );
    line(&admin, project_line.clone()).await;
    assert_eq!(
        admin
            .post("/admin/rewards/lines", project_line)
            .await
            .status,
        409
    );
    line(
        &admin,
        json!({ "key": "heavy-user", "title": "Use 10 compute hours in a month",
        "kind": "usage", "metric": "compute_hours", "threshold": 10, "amountCents": 300,
        "requiresReview": true }),
    )
    .await;
    line(
        &admin,
        json!({ "key": "referral", "title": "Bring an organisation",
        "kind": "referral", "amountCents": 250 }),
    )
    .await;
    let lines = c.get("/rewards/lines").await.json();
    assert_eq!(lines["items"].as_array().unwrap().len(), 3, "{lines}");

    // Bad claims name their field.
    for (body, field) in [
        (json!({}), "reason"),
        (json!({ "reason": "nope" }), "reason"),
        (json!({ "reason": "referral" }), "reason"),
        (
            json!({ "reason": "heavy-user", "details": { "period": "2099-01" } }),
            "details.period",
        ),
        (
            json!({ "reason": "first-project", "details": { "resourceId": 5 } }),
            "details.resourceId",
        ),
    ] {
        let r = c.post("/rewards", body).await;
        assert_eq!(
            (r.status, field_of(&r)),
            (400, field.to_owned()),
            "{}",
            r.text()
        );
    }

    // Gated by the records: no project made yet, then one.
    let r = c
        .post("/rewards", json!({ "reason": "first-project" }))
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "not_verified"),
        "{}",
        r.text()
    );
    assert_eq!(
        c.post("/projects", json!({ "name": "shop" })).await.status,
        201
    );
    let r = c
        .post("/rewards", json!({ "reason": "first-project" }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let claimed = r.json();
    assert_eq!(
        (claimed["status"].as_str(), claimed["amountCents"].as_i64()),
        (Some("approved"), Some(700))
    );
    assert!(
        claimed["evidence"]
            .as_str()
            .unwrap()
            .starts_with("event:evt_"),
        "{claimed}"
    );
    // The same event backs one claim.
    let r = c
        .post("/rewards", json!({ "reason": "first-project" }))
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "not_verified"),
        "{}",
        r.text()
    );
    assert_eq!(balance(&c).await, 700);

    // A usage line: the month's compute hours, then the operator's review.
    let r = c.post("/rewards", json!({ "reason": "heavy-user" })).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "not_verified"),
        "{}",
        r.text()
    );
    inject(&s, &org, None, "cch_reward", "compute_hours", &[(0, 12.0)]).await;
    let r = c.post("/rewards", json!({ "reason": "heavy-user" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let pending = r.json();
    assert_eq!(pending["status"], "pending");
    let id = pending["id"].as_str().unwrap().to_owned();
    let review = format!("/rewards/submissions/{id}/review");
    let r = s
        .client()
        .post(&review, json!({ "action": "approve" }))
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "admin_session_required"),
        "{}",
        r.text()
    );
    let r = c.post(&review, json!({ "action": "approve" })).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        s.anonymous()
            .post(&review, json!({ "action": "approve" }))
            .await
            .status,
        401
    );
    assert_eq!(
        balance(&c).await,
        700,
        "nothing is credited before the review"
    );
    let r = admin.post(&review, json!({ "action": "maybe" })).await;
    assert_eq!((r.status, field_of(&r)), (400, "action".to_owned()));
    let r = admin
        .post(&review, json!({ "action": "approve", "note": "fine" }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "approved");
    assert_eq!(
        admin
            .post(&review, json!({ "action": "reject" }))
            .await
            .status,
        409
    );
    assert_eq!(balance(&c).await, 1000);

    // A referral: a counted click, then the sign-up the operator credits.
    let referral = c.get("/rewards/referral").await.json();
    let code = referral["code"].as_str().unwrap().to_owned();
    assert!(
        referral["link"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/api/v1/referrals/{code}"))
    );
    let raw = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let visit = raw
        .get(format!("{}/api/v1/referrals/{code}", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(visit.status().as_u16(), 302);
    let location = visit.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.ends_with(&format!("ref={code}")), "{location}");
    assert_eq!(
        s.anonymous().get("/referrals/zzzzzzzzzzzz").await.status,
        404
    );
    let r = admin
        .post(
            "/admin/organizations",
            json!({ "name": "Nope", "referralCode": "zzzzzzzzzzzz" }),
        )
        .await;
    assert_eq!(
        (r.status, field_of(&r)),
        (400, "referralCode".to_owned()),
        "{}",
        r.text()
    );
    let r = admin
        .post(
            "/admin/organizations",
            json!({ "name": "Referred", "plan": "starter", "referralCode": code }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let referred = s
        .anonymous()
        .with_token(r.json()["owner"]["token"].as_str().unwrap());
    let referral = c.get("/rewards/referral").await.json();
    assert_eq!(
        (
            referral["clicks"].as_i64(),
            referral["signups"].as_i64(),
            referral["earnedCents"].as_i64()
        ),
        (Some(1), Some(1), Some(250)),
        "{referral}"
    );
    assert_eq!(balance(&c).await, 1250);

    // Tenants: the referred organisation sees none of the earner's
    // submissions, and its claims need its own records.
    let theirs = referred.get("/rewards").await.json();
    assert_eq!(
        (
            theirs["balanceCents"].as_i64(),
            theirs["submissions"].as_array().map(Vec::len)
        ),
        (Some(0), Some(0)),
        "{theirs}"
    );
    let r = referred
        .post("/rewards", json!({ "reason": "heavy-user" }))
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "not_verified"),
        "{}",
        r.text()
    );

    // Redemption: a gift card under 5 dollars names amountCents; more
    // than the balance is refused; a gift card waits for the operator.
    for (body, field) in [
        (
            json!({ "type": "giftcard", "amountCents": 499 }),
            "amountCents",
        ),
        (json!({ "type": "giftcard" }), "amountCents"),
        (json!({ "type": "credit", "amountCents": 0 }), "amountCents"),
        (json!({ "type": "cash", "amountCents": 100 }), "type"),
    ] {
        let r = c.post("/rewards/redeem", body).await;
        assert_eq!(
            (r.status, field_of(&r)),
            (400, field.to_owned()),
            "{}",
            r.text()
        );
    }
    let r = c
        .post(
            "/rewards/redeem",
            json!({ "type": "credit", "amountCents": 5000 }),
        )
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "insufficient_balance"),
        "{}",
        r.text()
    );
    let r = c
        .post(
            "/rewards/redeem",
            json!({ "type": "giftcard", "amountCents": 500 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let card = r.json()["redemption"]["id"].as_str().unwrap().to_owned();
    assert_eq!(balance(&c).await, 750);
    let pending = admin
        .get("/admin/rewards/giftcards?status=pending")
        .await
        .json();
    assert!(
        pending["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["id"] == card.as_str()),
        "{pending}"
    );
    let r = admin
        .post(
            &format!("/admin/rewards/giftcards/{card}"),
            json!({ "action": "cancel", "note": "out of stock" }),
        )
        .await;
    assert_eq!(
        (r.status, r.json()["status"].as_str()),
        (200, Some("cancelled")),
        "{}",
        r.text()
    );
    assert_eq!(balance(&c).await, 1250, "a cancelled gift card comes back");

    // Credit lowers the period's cost: the referred organisation (starter,
    // 12 dollars a month) earns with a project and redeems 300 cents.
    let before = referred.get("/usage").await.json()["cost"].clone();
    assert_eq!(
        referred
            .post("/projects", json!({ "name": "app" }))
            .await
            .status,
        201
    );
    assert_eq!(
        referred
            .post("/rewards", json!({ "reason": "first-project" }))
            .await
            .status,
        201
    );
    let r = referred
        .post(
            "/rewards/redeem",
            json!({ "type": "credit", "amountCents": 300 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["balanceCents"], 400);
    let after = referred.get("/usage").await.json()["cost"].clone();
    eprintln!("usage cost before credit {before}, after {after}");
    assert_eq!(after["creditCents"], 300, "{after}");
    assert_eq!(
        after["totalCents"].as_i64().unwrap(),
        before["totalCents"].as_i64().unwrap() - 300
    );
    let mine = referred.get("/rewards").await.json();
    assert_eq!(
        (
            mine["creditThisPeriodCents"].as_i64(),
            mine["creditRemainingCents"].as_i64()
        ),
        (Some(300), Some(0)),
        "{mine}"
    );

    // Every change is in the earner's timeline, in the billing category.
    let page = c.get("/audit?category=billing&limit=100").await.json();
    let types = event_types(&page);
    for kind in [
        "reward.claimed",
        "reward.approved",
        "referral.signed_up",
        "reward.redeemed",
        "reward.giftcard.cancelled",
    ] {
        assert!(types.contains(&kind), "{kind} in {types:?}");
    }
    let theirs = event_types(&referred.get("/events?limit=100").await.json())
        .into_iter()
        .filter(|t| t.starts_with("reward.approved") || t.starts_with("referral."))
        .count();
    assert_eq!(
        theirs, 0,
        "the referred organisation sees none of the earner's events"
    );
}
