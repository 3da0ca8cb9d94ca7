//! Rewards: the balance and credit, the lines that pay (each with a claim
//! button), the referral link with its clicks, sign-ups and earnings, the
//! submissions and redemptions, and redemption as credit or gift card.

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::html;
use serde_json::json;

use super::{Fields, after, field, number, section};
use crate::html::{self, col};
use crate::{Console, Ctx};

pub fn routes() -> Router<Console> {
    Router::new()
        .route("/console/rewards", get(rewards))
        .route("/console/rewards/claim", post(claim))
        .route("/console/rewards/redeem", post(redeem))
}

async fn rewards(ctx: Ctx) -> Response {
    let overview = ctx.get("/rewards").await;
    let lines = ctx.get("/rewards/lines").await;
    let referral = ctx.get("/rewards/referral").await;
    let s = &ctx.session;
    let content = html! {
        h2 { "Balance" }
        (section(&overview, |o| html! {
            dl {
                dt { "Balance (cents)" } dd { (html::text(&o["balanceCents"])) }
                dt { "Earned (cents)" } dd { (html::text(&o["earnedCents"])) }
                dt { "Waiting for review (cents)" } dd { (html::text(&o["pendingCents"])) }
                dt { "Credit on this month's invoice (cents)" } dd { (html::text(&o["creditThisPeriodCents"])) }
                dt { "Credit left for later invoices (cents)" } dd { (html::text(&o["creditRemainingCents"])) }
            }
        }))
        h2 { "Redeem" }
        p { "Credit has no minimum and lowers the next invoice; a gift card is at least 500 cents and is sent by the operator." }
        (html::form(s, "/console/rewards/redeem", html! {
            div class="field" {
                label for="f-type" { "As" }
                select id="f-type" name="type" {
                    option value="credit" selected { "credit" }
                    option value="giftcard" { "gift card" }
                }
            }
            (html::input("Amount (cents)", "amountCents", "number", false, Some("empty: the whole balance, as credit")))
        }, "Redeem"))
        h2 { "What pays" }
        (section(&lines, |l| {
            let items = html::items(l);
            html! {
                (html::table("Reward lines", &items, &[col("Reason", "key"), col("Title", "title"),
                    col("Verified by", "kind"), col("Cents", "amountCents"), col("Review", "requiresReview"),
                    col("Claimed", "claimed"), col("Of", "maxClaims")], None))
                @for line in items.iter().filter(|l| l["kind"] != "referral") {
                    @let key = html::text(&line["key"]);
                    form method="post" action="/console/rewards/claim" class="inline" {
                        (html::csrf(s))
                        input type="hidden" name="reason" value=(key);
                        button type="submit" { "Claim" span class="visually-hidden" { " " (key) } }
                    }
                }
            }
        }))
        h2 { "Referral" }
        (section(&referral, |r| html! {
            (html::copyable("Referral link", "referral-link", &html::text(&r["link"])))
            dl {
                dt { "Clicks" } dd { (html::text(&r["clicks"])) }
                dt { "Sign-ups" } dd { (html::text(&r["signups"])) }
                dt { "Earned (cents)" } dd { (html::text(&r["earnedCents"])) }
                dt { "Waiting for review (cents)" } dd { (html::text(&r["pendingCents"])) }
            }
        }))
        h2 { "Submissions" }
        (section(&overview, |o| html::table("Submissions", &html::items(&o["submissions"]),
            &[col("Reason", "reason"), col("Cents", "amountCents"), col("Status", "status"),
              col("Evidence", "evidence"), col("Note", "note"), col("Made", "createdAt")], None)))
        h2 { "Redemptions" }
        (section(&overview, |o| html::table("Redemptions", &html::items(&o["redemptions"]),
            &[col("Type", "type"), col("Cents", "amountCents"), col("Status", "status"),
              col("Month", "period"), col("Note", "note"), col("Made", "createdAt")], None)))
    };
    html::page(s, "/console/rewards", "Rewards", content).into_response()
}

async fn claim(ctx: Ctx, fields: Fields) -> Response {
    let result = ctx
        .post("/rewards", json!({ "reason": field(&fields, "reason") }))
        .await;
    after(&ctx, result, "/console/rewards")
}

async fn redeem(ctx: Ctx, fields: Fields) -> Response {
    let mut body = json!({ "type": field(&fields, "type") });
    if !field(&fields, "amountCents").is_empty() {
        body["amountCents"] = number(&fields, "amountCents");
    }
    let result = ctx.post("/rewards/redeem", body).await;
    after(&ctx, result, "/console/rewards")
}
