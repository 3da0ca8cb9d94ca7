//! The web analytics plugin: its self-description and route table.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /analytics/script.js`, `POST /analytics/api/event`, `GET /speed-insights/script.js`, `POST /speed-insights/api/vitals` | public: the site's registered domain is the key |
//! | `GET /speed-insights/sites/{id}` | `analytics:read` |
//! | `GET /analytics/sites`, `GET /analytics/sites/{id}`, `GET /analytics/sites/{id}/stats`, `GET /analytics/sites/{id}/breakdown` | `analytics:read` |
//! | `POST /analytics/sites`, `DELETE /analytics/sites/{id}` | `analytics:write` |
//!
//! Jobs: `edge:<id>`, page views the app edge reported ([`crate::edge`]).

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Plugin, Router, log};

use crate::event::EventInput;
use crate::sites::{Site, SiteInput};
use crate::speed::{SpeedView, VitalsInput};
use crate::stats::{BreakdownView, StatsView};
use crate::{edge, ingest, script, sites, speed, speed_script, stats};

const PERIOD: &str = "The period is `from` to `to` (`YYYY-MM-DD`, UTC, inclusive; the last 30 \
     days by default, at most 366). `filter.{dimension}={value}` filters (page, entry, exit, \
     source, utm_source, utm_medium, utm_campaign, utm_content, utm_term, browser, os, device); \
     filters combine. Visitors over several days are the sum of each day's (the visitor's hash \
     changes with the daily salt).";

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct AnalyticsPlugin;

impl Plugin for AnalyticsPlugin {
    fn describe() -> Description {
        Description::new("analytics", env!("CARGO_PKG_VERSION"))
            .prefix("/analytics")
            .prefix("/speed-insights")
            .scope(
                "analytics:read",
                "List sites and read their stats and speed insights",
            )
            .scope("analytics:write", "Add and delete analytics sites")
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Log,
                Capability::Clock,
            ])
    }

    fn router() -> Router {
        Router::new()
            .get("/analytics/script.js", script::serve)
            .public()
            .summary("The page view script a site embeds (no cookie, no storage)")
            .description(
                "`<script defer data-domain=\"example.com\" src=\".../api/v1/analytics/script.js\">` \
                 posts each page view to `/analytics/api/event` beside it.",
            )
            .response_bytes(200, "application/javascript")
            .post("/analytics/api/event", ingest::event)
            .public()
            .summary("Record a page view (Plausible's event shape); 202 even for a bot, which is not counted")
            .description(
                "JSON whatever the content type (the script sends text/plain to avoid a CORS \
                 preflight). The visitor is a hash of the day's salt, the site, the client's \
                 address and user agent; no address is stored.",
            )
            .request::<EventInput>()
            .response_bytes(202, "text/plain")
            .get("/analytics/sites", sites::list)
            .scope("analytics:read")
            .summary("List the organisation's sites")
            .response_page::<Site>()
            .post("/analytics/sites", sites::create)
            .scope("analytics:write")
            .summary("Add a site by its domain, optionally tied to an app")
            .description("A domain is one site of one organisation: 409 when it is taken.")
            .request::<SiteInput>()
            .response::<Site>(201)
            .get("/analytics/sites/{id}", sites::get)
            .scope("analytics:read")
            .summary("Get a site")
            .response::<Site>(200)
            .delete("/analytics/sites/{id}", sites::delete)
            .scope("analytics:write")
            .summary("Delete a site; its domain's page views are no longer counted")
            .empty_response(204)
            .get("/analytics/sites/{id}/stats", stats::stats)
            .scope("analytics:read")
            .summary("Visitors, page views, visits, bounce rate and visit duration over a period, with a time series")
            .description(PERIOD)
            .response::<StatsView>(200)
            .get("/analytics/sites/{id}/breakdown", stats::breakdown)
            .scope("analytics:read")
            .summary("A period's top values of a dimension (property) with their metrics")
            .description(PERIOD)
            .response::<BreakdownView>(200)
            .get("/speed-insights/script.js", speed_script::serve)
            .public()
            .summary("The speed insights script: web-vitals 4.2.4 and the lines that post its measurements")
            .response_bytes(200, "application/javascript")
            .post("/speed-insights/api/vitals", speed::ingest)
            .public()
            .summary("Record Core Web Vitals of a page view; 202 even for a bot, which is not counted")
            .description("JSON whatever the content type, for a site of /analytics/sites.")
            .request::<VitalsInput>()
            .response_bytes(202, "text/plain")
            .get("/speed-insights/sites/{id}", speed::report)
            .scope("analytics:read")
            .summary("The 75th percentile of a metric per route and device, worst first, and per day")
            .description(
                "`metric` (LCP, INP, CLS, FCP or TTFB; LCP by default), `device` (desktop, mobile, \
                 appliance, unknown), `from` and `to` as for stats. Milliseconds, CLS as its score; \
                 exact to within 10%.",
            )
            .response::<SpeedView>(200)
    }

    fn on_job(job: &Job) -> Result<(), String> {
        if job.key.starts_with(edge::JOB) {
            edge::run(job).map(drop).map_err(|e| e.detail().to_owned())
        } else {
            log::warn(&format!("unknown job {} dropped", job.key));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_passes_the_hosts_checks() {
        let description = plateau_sdk::describe::<AnalyticsPlugin>();
        assert_eq!(description.problems(), Vec::<String>::new());
    }
}
