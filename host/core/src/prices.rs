//! The price table: every metric the series store keeps, its unit, its
//! list price, and what each flat-rate plan includes per month (spec
//! section 8).
//!
//! Plans are flat-rate: the plan's price covers everything up to its
//! limits. Two kinds of limit, and what lies past each:
//! - **counts and sizes** (apps, databases, caches, cron jobs, stored
//!   bytes, database disk) are **refused** at the limit by each service,
//!   as before: nothing past them is ever priced;
//! - **consumption** (compute hours, GB-hours, apps' CPU seconds, memory,
//!   requests and bandwidth, plugin requests and fuel) is
//!   **priced** past the plan's monthly inclusion at the list price below,
//!   and added to the period's cost (`GET /usage`).
//!
//! `GET /metrics` shows each daily point at list price (`quantity × price`),
//! what that consumption is worth; `GET /usage` shows what is billed (the
//! plan's price plus the overage). Gauges are kept as GB-hours so that
//! every metric adds up: a month of 1 GB stored is about 730 GB-hours.
//!
//! Apps (`plateau_apps::metering`): CPU seconds at 0.0008 cents (about
//! 5.84 dollars per core-month), memory at 0.5 cents per GB-hour, requests
//! as plugin requests, bandwidth in free and out at 5 cents per GB.
//!
//! Apps' CDN (`plateau_apps::metering`): `app_cdn_hits` (requests answered
//! from the edge's cache, fresh, stale while revalidated, or revalidated),
//! `app_cdn_misses` (cacheable requests the app answered) and
//! `app_cdn_bytes_served_gb` (body bytes answered from the cache) are
//! listed at no price: they tell how the cache does, and the requests and
//! bytes are already priced as `app_requests` and `app_bandwidth_out_gb`.
//! [`CDN_HIT_RATIO`] is no stored metric: `GET /metrics` derives it per
//! day and app from the day's hits and misses.

use crate::Plan;

/// Hours in a billing month (365 × 24 / 12).
pub const HOURS_PER_MONTH: f64 = 730.0;

/// One metric of the table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    pub metric: &'static str,
    pub unit: &'static str,
    /// Cents per unit past the plan's inclusion.
    pub cents_per_unit: f64,
    /// Units included per month: free, starter, pro, scale.
    pub included: [f64; 4],
}

/// The whole table; the documented prices of the platform. A metric is
/// listed once something reports it.
pub const PRICES: [Price; 14] = [
    Price {
        metric: "compute_hours",
        unit: "node-hour",
        cents_per_unit: 1.0,
        included: [750.0, 1_500.0, 5_000.0, 15_000.0],
    },
    Price {
        metric: "disk_gb_hours",
        unit: "GB-hour",
        cents_per_unit: 0.02,
        included: [730.0, 7_300.0, 36_500.0, 146_000.0],
    },
    Price {
        metric: "storage_gb_hours",
        unit: "GB-hour",
        cents_per_unit: 0.003,
        included: [730.0, 18_250.0, 73_000.0, 365_000.0],
    },
    Price {
        metric: "registry_gb_hours",
        unit: "GB-hour",
        cents_per_unit: 0.003,
        included: [730.0, 7_300.0, 36_500.0, 146_000.0],
    },
    Price {
        metric: "app_cpu_seconds",
        unit: "CPU-second",
        cents_per_unit: 0.0008,
        included: [360_000.0, 3_600_000.0, 18_000_000.0, 72_000_000.0],
    },
    Price {
        metric: "app_memory_gb_hours",
        unit: "GB-hour",
        cents_per_unit: 0.5,
        included: [365.0, 3_650.0, 18_250.0, 73_000.0],
    },
    Price {
        metric: "app_requests",
        unit: "request",
        cents_per_unit: 0.00002,
        included: [1_000_000.0, 10_000_000.0, 50_000_000.0, 200_000_000.0],
    },
    Price {
        metric: "app_bandwidth_in_gb",
        unit: "GB",
        cents_per_unit: 0.0,
        included: [0.0, 0.0, 0.0, 0.0],
    },
    Price {
        metric: "app_bandwidth_out_gb",
        unit: "GB",
        cents_per_unit: 5.0,
        included: [100.0, 500.0, 2_000.0, 10_000.0],
    },
    Price {
        metric: "app_cdn_hits",
        unit: "request",
        cents_per_unit: 0.0,
        included: [0.0, 0.0, 0.0, 0.0],
    },
    Price {
        metric: "app_cdn_misses",
        unit: "request",
        cents_per_unit: 0.0,
        included: [0.0, 0.0, 0.0, 0.0],
    },
    Price {
        metric: "app_cdn_bytes_served_gb",
        unit: "GB",
        cents_per_unit: 0.0,
        included: [0.0, 0.0, 0.0, 0.0],
    },
    Price {
        metric: "plugin_requests",
        unit: "request",
        cents_per_unit: 0.00002,
        included: [1_000_000.0, 10_000_000.0, 50_000_000.0, 200_000_000.0],
    },
    Price {
        metric: "plugin_fuel",
        unit: "fuel",
        cents_per_unit: 0.000_000_01,
        included: [1e11, 1e12, 5e12, 2e13],
    },
];

/// The share of an app's cacheable requests answered from its CDN on a
/// day: `app_cdn_hits / (app_cdn_hits + app_cdn_misses)`, derived when
/// read, never stored (a ratio does not add up over days).
pub const CDN_HIT_RATIO: &str = "app_cdn_hit_ratio";

/// The price of `metric`, if the table knows it.
pub fn of(metric: &str) -> Option<&'static Price> {
    PRICES.iter().find(|p| p.metric == metric)
}

impl Price {
    /// Units `plan` includes per month.
    pub fn included(&self, plan: Plan) -> f64 {
        let i = Plan::ALL.iter().position(|p| *p == plan).unwrap_or(0);
        self.included[i]
    }

    /// `quantity` at list price, in cents.
    pub fn list_cents(&self, quantity: f64) -> f64 {
        quantity * self.cents_per_unit
    }

    /// What a month's `quantity` costs on `plan` past its inclusion, in cents.
    pub fn overage_cents(&self, plan: Plan, quantity: f64) -> f64 {
        (quantity - self.included(plan)).max(0.0) * self.cents_per_unit
    }
}

/// Rounds cents to four decimals, as the API shows them.
pub fn round_cents(cents: f64) -> f64 {
    (cents * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overage_starts_past_the_inclusion() {
        let compute = of("compute_hours").unwrap();
        assert_eq!(compute.overage_cents(Plan::Free, 700.0), 0.0);
        assert_eq!(compute.overage_cents(Plan::Free, 760.0), 10.0);
        assert_eq!(compute.overage_cents(Plan::Pro, 760.0), 0.0);
        assert_eq!(compute.list_cents(2.5), 2.5);
        assert!(of("bandwidth_zettabytes").is_none());
    }

    #[test]
    fn every_metric_is_listed_once() {
        for (i, p) in PRICES.iter().enumerate() {
            assert!(PRICES[i + 1..].iter().all(|q| q.metric != p.metric));
            assert!(p.included.windows(2).all(|w| w[0] <= w[1]), "{}", p.metric);
        }
    }
}
