//! A token's spend, what its `maxCostCents` bounds (spec sections 2, 4.1,
//! 4.2): the cost at list price (`plateau_core::prices`, as `GET /metrics`
//! prices a point) of the usage of the resources the token's calls
//! created.
//!
//! Who created what is `token_resources`, written with a resource's
//! `create` event when a token is its actor ([`record_creator`]). The
//! usage writer charges each batch to those tokens in the transaction that
//! adds the batch's points ([`charge_batch`]), so a point and its charge
//! are committed together or not at all: `tokens.spent_exact` holds the
//! unrounded cents and `tokens.spent_cents` their ceiling, which
//! `GET /tokens`, `GET /me` and the ceiling check read without summing the
//! series. A token from before migration 0043 has `spent_exact` NULL until
//! its first charge or [`spent`] settles it from the whole series, under
//! its row's lock so that no concurrent charge is lost or counted twice.

use std::collections::{BTreeMap, BTreeSet};

use plateau_core::prices;

use crate::db::Deferred;
use crate::usage::Increment;
use crate::{Db, Result, Tx};

/// Records, with the `create` event of `resource_id`, that token
/// `token_id` created it.
pub async fn record_creator(
    tx: &mut Tx,
    org_id: &str,
    resource_id: &str,
    token_id: &str,
) -> Result<()> {
    let insert = Deferred::new(
        "INSERT INTO token_resources (resource_id, org_id, token_id) VALUES ($1, $2, $3) \
         ON CONFLICT (resource_id) DO NOTHING",
    )
    .bind(resource_id)
    .bind(org_id)
    .bind(token_id);
    tx.defer(insert).await
}

/// Charges the priced increments of `batch` to the tokens that created
/// their resources, in the batch's transaction.
pub async fn charge_batch(tx: &mut Tx, batch: &[Increment]) -> Result<()> {
    let resources: BTreeSet<&str> = batch
        .iter()
        .filter(|inc| prices::of(inc.metric).is_some_and(|p| p.cents_per_unit > 0.0))
        .map(|inc| inc.resource_id.as_str())
        .collect();
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    let resources: Vec<&str> = resources.into_iter().collect();
    for chunk in resources.chunks(500) {
        let placeholders: Vec<String> = (1..=chunk.len()).map(|n| format!("${n}")).collect();
        let sql = format!(
            "SELECT resource_id, token_id FROM token_resources WHERE resource_id IN ({})",
            placeholders.join(", ")
        );
        let mut query = sqlx::query_as::<_, (String, String)>(&sql);
        for id in chunk {
            query = query.bind(*id);
        }
        owners.extend(query.fetch_all(tx.conn()).await?);
    }
    let mut cents: BTreeMap<&str, f64> = BTreeMap::new();
    for inc in batch {
        let (Some(token), Some(price)) = (owners.get(&inc.resource_id), prices::of(inc.metric))
        else {
            continue;
        };
        *cents.entry(token.as_str()).or_default() += price.list_cents(inc.quantity);
    }
    for (token, add) in cents {
        let row: Option<(Option<f64>,)> = sqlx::query_as(
            "UPDATE tokens SET spent_exact = spent_exact + $2 WHERE id = $1 RETURNING spent_exact",
        )
        .bind(token)
        .bind(add)
        .fetch_optional(tx.conn())
        .await?;
        match row {
            Some((Some(exact),)) => set_cents(tx, token, exact).await?,
            // Locked by the update above; the sum includes this batch.
            Some((None,)) => settle(tx, token).await.map(drop)?,
            None => {}
        }
    }
    Ok(())
}

/// Token `token_id`'s spend in whole cents, rounded up; a token from
/// before migration 0043 is settled first.
pub async fn spent(db: &Db, token_id: &str) -> Result<i64> {
    let row: Option<(Option<f64>, i64)> =
        sqlx::query_as("SELECT spent_exact, spent_cents FROM tokens WHERE id = $1")
            .bind(token_id)
            .fetch_optional(db.pool())
            .await?;
    match row {
        None => Ok(0),
        Some((Some(_), cents)) => Ok(cents),
        Some((None, _)) => {
            let mut tx = db.begin().await?;
            // Takes the row's lock, so that a concurrent charge waits.
            let (exact,): (Option<f64>,) = sqlx::query_as(
                "UPDATE tokens SET spent_exact = spent_exact WHERE id = $1 RETURNING spent_exact",
            )
            .bind(token_id)
            .fetch_one(tx.conn())
            .await?;
            let exact = match exact {
                Some(exact) => exact,
                None => settle(&mut tx, token_id).await?,
            };
            tx.commit().await?;
            Ok(ceil_cents(exact))
        }
    }
}

/// Sets a token's spend from the whole series of its resources; the
/// caller holds the token row's lock.
async fn settle(tx: &mut Tx, token_id: &str) -> Result<f64> {
    let totals: Vec<(String, f64)> = sqlx::query_as(
        "SELECT metric, SUM(quantity) FROM usage_points WHERE (org_id, resource_id) IN (\
           SELECT org_id, resource_id FROM token_resources WHERE token_id = $1) \
         GROUP BY metric ORDER BY metric",
    )
    .bind(token_id)
    .fetch_all(tx.conn())
    .await?;
    let exact: f64 = totals
        .iter()
        .filter_map(|(metric, q)| prices::of(metric).map(|p| p.list_cents(*q)))
        .sum();
    sqlx::query("UPDATE tokens SET spent_exact = $2 WHERE id = $1")
        .bind(token_id)
        .bind(exact)
        .execute(tx.conn())
        .await?;
    set_cents(tx, token_id, exact).await?;
    Ok(exact)
}

async fn set_cents(tx: &mut Tx, token_id: &str, exact: f64) -> Result<()> {
    sqlx::query("UPDATE tokens SET spent_cents = $2 WHERE id = $1")
        .bind(token_id)
        .bind(ceil_cents(exact))
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Whole cents, rounded up, of an unrounded spend; a float's noise below
/// a millionth of a cent does not round up.
fn ceil_cents(exact: f64) -> i64 {
    (exact - 1e-6).ceil().max(0.0) as i64
}

#[cfg(test)]
mod tests {
    use super::ceil_cents;

    #[test]
    fn spend_rounds_up_to_whole_cents() {
        assert_eq!(ceil_cents(0.0), 0);
        assert_eq!(ceil_cents(0.0008), 1);
        assert_eq!(ceil_cents(1.0), 1);
        assert_eq!(ceil_cents(1.0000000001), 1);
        assert_eq!(ceil_cents(1.01), 2);
    }
}
