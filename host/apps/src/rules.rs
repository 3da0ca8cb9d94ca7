//! What the edge applies for an app: its enabled rules while its
//! scale-out is on, compiled (`plateau-edge-rules`).

use plateau_edge_rules::{RuleSet, RuleSpec};
use plateau_store::Db;
use plateau_store::apps::rules;

/// The edge's rules of `app_id` now: none while scale-out is off. A stored
/// rule that no longer compiles (a later, stricter check) is left out.
pub async fn effective(db: &Db, app_id: &str) -> plateau_store::Result<RuleSet> {
    if !rules::scale_out(db, app_id).await? {
        return Ok(RuleSet::default());
    }
    let valid: Vec<RuleSpec> = rules::list(db, app_id)
        .await?
        .into_iter()
        .filter(|r| r.enabled == 1)
        .filter_map(|r| serde_json::from_str::<RuleSpec>(&r.spec).ok())
        .filter(|s| RuleSet::compile(std::slice::from_ref(s)).is_ok())
        .collect();
    Ok(RuleSet::compile(&valid).unwrap_or_default())
}
