//! What an app's edge filters did on this host since its chain was last
//! set (a change of its filters, fail modes or firewall rules sets a new
//! one, and the agent's start): as the edge counts them
//! (`plateau_edge::filters::Counters`), by the id the chain lists each
//! under (a filter's id, or `firewall` for the app's firewall rules).

use plateau_edge::Edge;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One filter's counters.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FilterStats {
    /// Requests it ran on.
    pub runs: u64,
    /// Requests it passed on to the app (changing headers or not).
    pub passed: u64,
    /// Requests it answered itself (block, redirect, challenge).
    pub answered: u64,
    /// Calls that failed, of either phase, whatever followed.
    pub failures: u64,
    /// Of the failures, traps.
    pub traps: u64,
    /// Of the failures, its deadline or its fuel running out.
    pub timeouts: u64,
    /// Failures the request went on after (fail open, or any failure on a
    /// response), and failures answered 503 (fail closed).
    pub failed_open: u64,
    pub failed_closed: u64,
    /// CPU time of its calls (both phases), in seconds.
    pub cpu_seconds: f64,
    /// Mean CPU time per request it ran on, in microseconds.
    pub cpu_micros_per_request: f64,
}

/// The counters of one filter of the chain, under its id.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Counted {
    pub id: String,
    pub stats: FilterStats,
}

/// The counters of each filter of `slug`'s chain on `edge`, in order.
pub fn of(edge: &Edge, slug: &str) -> Vec<Counted> {
    let Some(chain) = edge.filters(slug) else {
        return Vec::new();
    };
    chain
        .filters
        .iter()
        .map(|enabled| {
            let s = enabled.counters.stats();
            Counted {
                id: enabled.id.clone(),
                stats: FilterStats {
                    runs: s.runs,
                    passed: s.passed,
                    answered: s.answered,
                    failures: s.failures(),
                    traps: s.traps,
                    timeouts: s.timeouts,
                    failed_open: s.failed_open,
                    failed_closed: s.failed_closed,
                    cpu_seconds: s.cpu_ns as f64 / 1e9,
                    cpu_micros_per_request: s.cpu_us_per_request(),
                },
            }
        })
        .collect()
}
