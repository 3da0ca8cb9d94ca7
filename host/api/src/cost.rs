//! A token's spend ceiling (`maxCostCents`, spec sections 2, 4.1, 4.2).
//!
//! What a token's calls start is what it created: the resources whose
//! creation event names the token as its actor. Their usage in the series
//! store (`usage_points`), at list price (`plateau_core::prices`, as
//! `GET /metrics` prices it), rounded up to whole cents, is the cost
//! attributed to the token, kept in `tokens.spent_cents` as the usage is
//! written (`plateau_store::token_spend`), not summed per request. A call that starts a resource (an app, a
//! database, a cache, each of a manifest's) only adds to that cost, so it
//! would pass the ceiling once the attributed cost has reached it: such a
//! call is then refused with 403 `cost_ceiling_reached` naming the
//! ceiling. Calls that stop or read cost nothing and are never refused.

use plateau_store::{Db, token_spend};

use crate::auth::Caller;
use crate::error::ApiError;

/// The cost attributed to token `token_id` in whole cents, rounded up.
pub async fn attributed_cents(db: &Db, token_id: &str) -> Result<i64, ApiError> {
    Ok(token_spend::spent(db, token_id).await?)
}

/// What every creation of an app, a database or a cache checks first,
/// whichever way it comes (its route, a restore, a branch, a manifest):
/// the token's ceiling, then the spend budgets that refuse new resources
/// in `project` (none: the organisation's only).
pub async fn check_new_resource(
    db: &Db,
    caller: &Caller,
    project: Option<&str>,
    what: &str,
) -> Result<(), ApiError> {
    check_ceiling(db, caller, what).await?;
    crate::spend::guard::check(db, caller, project).await
}

/// Refuses a call that starts a resource (`what`: `creating a cache`)
/// when the caller's token has a ceiling its attributed cost has reached.
pub async fn check_ceiling(db: &Db, caller: &Caller, what: &str) -> Result<(), ApiError> {
    let Some(max) = caller.max_cost_cents else {
        return Ok(());
    };
    let spent = attributed_cents(db, &caller.token_id).await?;
    if spent >= max {
        return Err(ApiError::forbidden(
            "cost_ceiling_reached",
            format!(
                "{what} would pass this token's cost ceiling: maxCostCents is {max} and the resources its calls started have cost {spent} cents; use a token with a higher maxCostCents"
            ),
        ));
    }
    Ok(())
}
