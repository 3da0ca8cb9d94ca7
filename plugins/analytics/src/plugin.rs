//! The web analytics plugin: its self-description and route table.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /analytics/script.js`, `POST /analytics/api/event` | public: the site's registered domain is the key |
//! | `GET /analytics/sites`, `GET /analytics/sites/{id}`, `GET /analytics/sites/{id}/stats`, `GET /analytics/sites/{id}/breakdown` | `analytics:read` |
//! | `POST /analytics/sites`, `DELETE /analytics/sites/{id}` | `analytics:write` |

use plateau_sdk::{Capability, Description, Plugin, Router};

use crate::event::EventInput;
use crate::sites::{Site, SiteInput};
use crate::stats::{BreakdownView, StatsView};
use crate::{ingest, script, sites, stats};

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
            .scope("analytics:read", "List sites and read their stats")
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
