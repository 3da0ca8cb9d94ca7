//! The public ingest route, `POST /analytics/api/event`: a page view from
//! the script (or any client speaking Plausible's event shape). The body
//! is JSON whatever its content type (the script sends `text/plain`, so a
//! browser makes no CORS preflight). The answer is 202 `ok`, also for a
//! bot, whose page view is not counted (`ignored`).
//!
//! The client's address comes from `plateau-client-ip`, which the host
//! sets from the connection (and drops when a client sends it); it is
//! hashed into the visitor and never stored.

use plateau_sdk::{ApiError, Bucket, Request, Response, clock, parse_json};

use crate::event::{self, EventInput};
use crate::rollup::{self, PageView};
use crate::sites::{DomainEntry, domain_key};
use crate::{agent, day, visitor};

/// The header the host names the client's address in.
pub const CLIENT_IP: &str = "plateau-client-ip";
/// The largest event body read.
pub const MAX_BODY: usize = 8 * 1024;

pub fn event(req: &Request, _: &plateau_sdk::Params) -> Result<Response, ApiError> {
    if req.body.len() > MAX_BODY {
        return Err(ApiError::payload_too_large(format!(
            "an event is at most {MAX_BODY} bytes"
        )));
    }
    let input: EventInput = parse_json(&req.body)?;
    let domain = input.domain.trim().to_ascii_lowercase();
    let entry: DomainEntry = Bucket::global()?
        .get(&domain_key(&domain))?
        .ok_or_else(|| {
            ApiError::validation(
                "domain",
                format!("{domain:?} is no site: add it with POST /analytics/sites"),
            )
        })?;
    let facts = event::facts(&input, &domain)?;
    let user_agent = req.header("user-agent").unwrap_or_default();
    let Some(agent) = agent::parse(user_agent) else {
        return Ok(accepted("ignored"));
    };
    let ip = req.header(CLIENT_IP).unwrap_or_default();
    let at = clock::now_millis();
    let Some(salt) = visitor::salt(day::of_millis(at))? else {
        return Ok(accepted("ignored"));
    };
    let view = PageView {
        visitor: visitor::hash(&salt, &entry.site_id, ip, user_agent),
        site: entry.site_id,
        at,
        facts,
        agent,
    };
    rollup::record(&Bucket::organization(&entry.organization_id)?, &view)?;
    Ok(accepted("ok"))
}

fn accepted(body: &str) -> Response {
    Response::text(202, body).with_header("access-control-allow-origin", "*")
}
