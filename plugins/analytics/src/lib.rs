//! Plateau's web analytics plugin (`/analytics`): sites, cookieless page
//! views from a public ingest endpoint (`POST /analytics/api/event`, the
//! Plausible event shape) that the script it serves
//! (`GET /analytics/script.js`) posts to, and stats over a period.
//!
//! Layers:
//! - the pure core: [`day`] (UTC days and hours), [`agent`] (user agent to
//!   browser, OS and device, bots refused), [`event`] (an ingest body to a
//!   page view: path, referrer source, UTM parameters), [`visitor`] (the
//!   daily salt and the visitor hash);
//! - [`rollup`] (the counters a page view adds at ingest), [`ingest`] (the
//!   script's page views) and [`edge`] (the app edge's, in durable jobs);
//! - [`sites`], [`stats`] (rollups read over a period), [`scan`] (the page
//!   view log read when filters apply), wired in [`plugin`];
//! - speed insights: [`speed`] (Core Web Vitals per route and device,
//!   p75 from per-day histograms) and [`speed_script`] (web-vitals).
//!
//! **Architecture Invariants:** no IP address is stored: a visitor is the
//! SHA-256 of the day's salt, the site, the address and the user agent,
//! and the salt is deleted once its day is over, so a visitor cannot be
//! followed from one day to the next. Every key of a site's data is under
//! the site and the UTC day it arrived, so a query never reads another
//! site's data. Unfiltered stats read only rollups (per day and dimension,
//! per hour for totals), whose number grows with the distinct values and
//! days, never with the page views.

pub mod agent;
pub mod day;
pub mod edge;
pub mod event;
pub mod ingest;
pub mod plugin;
pub mod rollup;
pub mod scan;
pub mod script;
pub mod sites;
pub mod speed;
pub mod speed_script;
pub mod stats;
pub mod visitor;

pub use plugin::AnalyticsPlugin;

plateau_sdk::export_plugin!(AnalyticsPlugin);
