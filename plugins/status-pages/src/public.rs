//! The public routes under `/status-pages/public/{slug}`: the page, its
//! Atom feed, Statuspage's `summary.json` and `status.json`, and the
//! subscription forms. No token: the slug names the organisation through
//! the global bucket.
//!
//! The page, feed and summary are rendered once per version of the
//! page's data and kept 60 s at most (`cache/{what}`, with the version
//! they were rendered from, so a write makes them stale at once and the
//! uptime of the day keeps moving); a visit in between is two reads, and
//! `If-None-Match` with the answer's ETag is a 304.

use plateau_sdk::{ApiError, Bucket, Params, Request, Response, clock, serde_json};
use serde::{Deserialize, Serialize};

use crate::input::is_email;
use crate::record::{self, Page};
use crate::render::{self, View};
use crate::views::public_url;
use crate::{feed, store, subscribers};

/// How long a rendered answer is served at most.
const FRESH_MS: u64 = 60_000;

#[derive(Serialize, Deserialize)]
struct Cached {
    ver: i64,
    at: u64,
    body: String,
}

struct Ctx {
    org: String,
    bucket: Bucket,
    page: Page,
    /// The page's address as a path on this origin (`/api/v1/...`), for
    /// HTML: never built from the request's Host, because answers are
    /// cached for every visitor and a forged Host would poison them.
    url: String,
    /// The absolute address the feeds name, from the base the page's
    /// owner saved (or the operator's `publicBaseUrl`).
    absolute: String,
}

fn unknown(slug: &str) -> ApiError {
    ApiError::not_found(format!("there is no status page {slug}"))
}

fn open(params: &Params) -> Result<Ctx, ApiError> {
    let slug = &params["slug"];
    let org = store::organization_of(slug)?.ok_or_else(|| unknown(slug))?;
    let bucket = store::org_bucket(&org)?;
    let page = store::page(&bucket)?
        .filter(|p| p.slug == *slug)
        .ok_or_else(|| unknown(slug))?;
    let url = public_url("/api/v1", slug);
    let absolute = public_url(&page.base_url, slug);
    Ok(Ctx {
        org,
        bucket,
        page,
        url,
        absolute,
    })
}

/// Serves `what` from the cache, or renders it with `render` and keeps it.
fn cached(
    req: &Request,
    params: &Params,
    what: &str,
    content_type: &str,
    render: fn(&Ctx, u64) -> Result<String, ApiError>,
) -> Result<Response, ApiError> {
    let ctx = open(params)?;
    let now = clock::now_millis();
    let key = format!("{}{what}", record::CACHE);
    let ver = store::version(&ctx.bucket)?;
    let hit = ctx
        .bucket
        .get::<Cached>(&key)
        .ok()
        .flatten()
        .filter(|c| c.ver == ver && now.saturating_sub(c.at) < FRESH_MS && c.at <= now);
    let entry = match hit {
        Some(c) => c,
        None => {
            let body = render(&ctx, now)?;
            let entry = Cached { ver, at: now, body };
            ctx.bucket.set(&key, &entry)?;
            entry
        }
    };
    let etag = format!("\"{}-{}\"", entry.ver, entry.at);
    if req.header("if-none-match") == Some(etag.as_str()) {
        return Ok(Response::new(304).with_header("etag", etag));
    }
    let mut res = Response::new(200);
    res.body = entry.body.into_bytes();
    Ok(res
        .with_header("content-type", content_type)
        .with_header("etag", etag)
        .with_header("cache-control", "public, max-age=30")
        .with_header("x-content-type-options", "nosniff")
        .with_header(
            "content-security-policy",
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        )
        .with_header("access-control-allow-origin", "*"))
}

/// `GET /status-pages/public/{slug}`.
pub fn page(req: &Request, params: &Params) -> Result<Response, ApiError> {
    cached(
        req,
        params,
        "html",
        "text/html; charset=utf-8",
        |ctx, now| {
            let components = store::components(&ctx.bucket)?;
            let mut with_bars = Vec::with_capacity(components.len());
            for c in components {
                let bars = store::bars(&ctx.bucket, &c, now)?;
                with_bars.push((c, bars));
            }
            let open = store::open_incidents(&ctx.bucket)?;
            let recent = store::recent_incidents(&ctx.bucket, 10)?;
            Ok(render::page(&View {
                page: &ctx.page,
                url: &ctx.url,
                components: &with_bars,
                open: &open,
                recent: &recent,
                now,
            }))
        },
    )
}

/// `GET /status-pages/public/{slug}/api/v2/summary.json`.
pub fn summary(req: &Request, params: &Params) -> Result<Response, ApiError> {
    cached(req, params, "summary", "application/json", |ctx, now| {
        let components = store::components(&ctx.bucket)?;
        let open = store::open_incidents(&ctx.bucket)?;
        Ok(feed::summary(&ctx.page, &ctx.absolute, &components, &open, now).to_string())
    })
}

/// `GET /status-pages/public/{slug}/api/v2/status.json`.
pub fn status(req: &Request, params: &Params) -> Result<Response, ApiError> {
    cached(req, params, "status", "application/json", |ctx, now| {
        let components = store::components(&ctx.bucket)?;
        let open = store::open_incidents(&ctx.bucket)?;
        Ok(feed::status(&ctx.page, &ctx.absolute, &components, &open, now).to_string())
    })
}

/// `GET /status-pages/public/{slug}/history.atom`.
pub fn atom(req: &Request, params: &Params) -> Result<Response, ApiError> {
    cached(
        req,
        params,
        "atom",
        "application/atom+xml; charset=utf-8",
        |ctx, _| {
            let recent = store::recent_incidents(&ctx.bucket, 25)?;
            Ok(feed::atom(&ctx.page, &ctx.absolute, &recent))
        },
    )
}

fn html(status: u16, body: String) -> Response {
    let mut res = Response::new(status);
    res.body = body.into_bytes();
    res.with_header("content-type", "text/html; charset=utf-8")
        .with_header("cache-control", "no-store")
        .with_header(
            "content-security-policy",
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        )
}

#[derive(Deserialize)]
struct SubscribeBody {
    email: String,
}

/// `POST /status-pages/public/{slug}/subscribe`: the page's form
/// (`application/x-www-form-urlencoded`, answered in HTML) or JSON
/// `{"email": ...}` (answered 202 in JSON).
pub fn subscribe(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let ctx = open(params)?;
    let as_json = req
        .header("content-type")
        .is_some_and(plateau_sdk::is_json_content_type);
    let email = if as_json {
        req.json::<SubscribeBody>()?.email
    } else {
        let form = plateau_sdk::Query::parse(&String::from_utf8_lossy(&req.body));
        form.get("email").unwrap_or_default().to_owned()
    };
    if !is_email(email.trim()) {
        let e = ApiError::validation("email", "must be an email address such as ann@example.com");
        if as_json {
            return Err(e);
        }
        let body = render::message(
            &ctx.page.name,
            "That is not an email address",
            "Go back and enter an address such as ann@example.com.",
            &ctx.url,
        );
        return Ok(html(400, body));
    }
    // The links of the confirmation email use the base saved with the page
    // by its owner (or the operator's `publicBaseUrl`), never this
    // unauthenticated request's Host: a forged Host would otherwise send
    // a victim a platform email linking to the forger's site.
    let added =
        subscribers::add_email(&ctx.bucket, &ctx.org, &ctx.page, &email, &ctx.page.base_url)?;
    let full = added.err();
    if as_json {
        return Ok(full.unwrap_or_else(|| {
            Response::json(
                202,
                &serde_json::json!({ "email": email.trim(), "confirmationSent": true }),
            )
        }));
    }
    let body = match full {
        Some(_) => render::message(
            &ctx.page.name,
            "Subscriptions are full",
            "This page takes no more subscribers for now; follow its Atom feed instead.",
            &ctx.url,
        ),
        None => render::message(
            &ctx.page.name,
            "Check your inbox",
            "If the address can subscribe, an email with a link to confirm is on its way. Nothing else is sent until you confirm.",
            &ctx.url,
        ),
    };
    Ok(html(if full.is_some() { 409 } else { 202 }, body))
}

/// `GET .../confirm/{token}`: a button that confirms (a link only shows it).
pub fn confirm_form(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    token_form(
        params,
        "Confirm your subscription",
        "Press the button to get email about incidents and maintenance.",
        "Confirm",
        "confirm",
    )
}

/// `GET .../unsubscribe/{token}`.
pub fn unsubscribe_form(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    token_form(
        params,
        "Unsubscribe",
        "Press the button to stop getting email from this page.",
        "Unsubscribe",
        "unsubscribe",
    )
}

fn token_form(
    params: &Params,
    heading: &str,
    text: &str,
    button: &str,
    what: &str,
) -> Result<Response, ApiError> {
    let ctx = open(params)?;
    let token = &params["token"];
    if subscribers::by_token(&ctx.bucket, token)?.is_none() {
        return Ok(html(
            404,
            render::message(
                &ctx.page.name,
                "This link is no longer valid",
                "The subscription it was for does not exist any more.",
                &ctx.url,
            ),
        ));
    }
    let action = format!("{}/{what}/{token}", ctx.url);
    Ok(html(
        200,
        render::confirm_form(&ctx.page.name, heading, text, &action, button),
    ))
}

/// `POST .../confirm/{token}`.
pub fn confirm(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let ctx = open(params)?;
    let Some(mut sub) = subscribers::by_token(&ctx.bucket, &params["token"])? else {
        return Ok(html(
            404,
            render::message(
                &ctx.page.name,
                "This link is no longer valid",
                "The subscription it was for does not exist any more.",
                &ctx.url,
            ),
        ));
    };
    if !sub.confirmed {
        let now = clock::now_millis();
        sub.confirmed = true;
        sub.confirmed_at = Some(now);
        ctx.bucket.set(&record::subscriber_key(&sub.id), &sub)?;
        plateau_sdk::NewEvent::new("status-pages.subscriber.confirmed", "update")
            .organization(&ctx.org)
            .resource("status_subscriber", &sub.id)
            .emit()?;
    }
    Ok(html(
        200,
        render::message(
            &ctx.page.name,
            "You are subscribed",
            "You will get an email when an incident or maintenance is posted or updated. Every email has a link to unsubscribe.",
            &ctx.url,
        ),
    ))
}

/// `POST .../unsubscribe/{token}`.
pub fn unsubscribe(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let ctx = open(params)?;
    if let Some(sub) = subscribers::by_token(&ctx.bucket, &params["token"])? {
        subscribers::remove(&ctx.bucket, &sub)?;
        plateau_sdk::NewEvent::new("status-pages.subscriber.deleted", "delete")
            .organization(&ctx.org)
            .resource("status_subscriber", &sub.id)
            .emit()?;
    }
    Ok(html(
        200,
        render::message(
            &ctx.page.name,
            "You are unsubscribed",
            "No more email will be sent to you from this page.",
            &ctx.url,
        ),
    ))
}
