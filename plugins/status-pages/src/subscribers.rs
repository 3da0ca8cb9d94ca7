//! Subscribers: email addresses, confirmed by their owner through a link
//! the email relay sends (double opt-in: nothing is sent to an address
//! but that link until then), and webhooks, which an organisation member
//! adds through the API and which are signed per Standard Webhooks.
//!
//! The link's token is also the unsubscribe link of every email. The
//! confirmation email is asked for with a `status-pages.email.requested`
//! event, so the link passes through the organisation's own timeline,
//! which only its members read; it can confirm or end that one
//! subscription and nothing else. A pending address is asked again at
//! most every 10 minutes, and a page holds at most its plan's subscribers,
//! pending ones included, so the public form cannot be used to flood an
//! inbox or the relay.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_sdk::serde_json::json;
use plateau_sdk::{
    ApiError, Bucket, Namespace, NewEvent, Params, Problem, Request, Response, clock, config,
    secrets, webhooks,
};

use crate::input::{Check, SubscriberInput, is_email};
use crate::record::{self, Page, Subscriber};
use crate::store;
use crate::views::{SubscriberView, public_url};

/// The shortest time between two confirmation emails to one address.
const ASK_AGAIN_MS: u64 = 600_000;

pub fn confirm_url(page_url: &str, token: &str) -> String {
    format!("{page_url}/confirm/{token}")
}

pub fn unsubscribe_url(page_url: &str, token: &str) -> String {
    format!("{page_url}/unsubscribe/{token}")
}

/// The 409 of a page at its plan's subscribers.
pub fn limit_problem(plan: &str, limit: u64) -> Response {
    Response::from_problem(&Problem::new(
        409,
        "plan_limit_reached",
        format!("the {plan} plan allows {limit} subscribers: remove some or upgrade the plan"),
    ))
}

/// What [`add_email`] did: the subscriber and whether an email was asked
/// for, or the page is full (the answer to give).
pub type Added = Result<(Subscriber, bool), Response>;

/// Adds (or asks again for) an email subscription; `base` is the API base
/// URL of the request. The subscriber, and whether an email was asked for.
pub fn add_email(
    bucket: &Bucket,
    org: &str,
    page: &Page,
    email: &str,
    base: &str,
) -> Result<Added, ApiError> {
    let now = clock::now_millis();
    let email = email.trim().to_owned();
    let by_email = record::email_key(&email);
    let existing: Option<String> = bucket.get(&by_email)?;
    let mut sub = match existing
        .map(|id| bucket.get::<Subscriber>(&record::subscriber_key(&id)))
        .transpose()?
        .flatten()
    {
        Some(sub) if sub.confirmed || now < sub.asked_at + ASK_AGAIN_MS => {
            return Ok(Ok((sub, false)));
        }
        Some(sub) => sub,
        None => {
            let limit = record::subscriber_limit(&page.plan);
            if bucket.count(record::SUBSCRIBERS)? >= limit {
                return Ok(Err(limit_problem(&page.plan, limit)));
            }
            let sub = Subscriber {
                id: plateau_sdk::ids::new_id("sub", now),
                email: Some(email.clone()),
                url: None,
                secret_sealed: None,
                token: plateau_sdk::ids::token(),
                confirmed: false,
                created_at: now,
                confirmed_at: None,
                asked_at: now,
            };
            bucket.set(&by_email, &sub.id)?;
            bucket.set(&record::token_key(&sub.token), &sub.id)?;
            sub
        }
    };
    sub.asked_at = now;
    bucket.set(&record::subscriber_key(&sub.id), &sub)?;
    let url = public_url(base, &page.slug);
    NewEvent::new("status-pages.email.requested", "notify")
        .organization(org)
        .resource("status_subscriber", &sub.id)
        .data(&json!({
            "to": [email],
            "subject": format!("Confirm your subscription to {}", page.name),
            "text": format!(
                "Someone, hopefully you, asked for email about incidents and maintenance of \
                 {name} ({url}).\n\nTo confirm, open this link and press the button:\n{link}\n\n\
                 If it was not you, ignore this email: nothing more will be sent.\n",
                name = page.name,
                link = confirm_url(&url, &sub.token),
            ),
        }))
        .emit()?;
    Ok(Ok((sub, true)))
}

/// `GET /status-pages/subscribers`.
pub fn list(req: &Request, _: &Params) -> Result<Response, ApiError> {
    let query = req.page_query()?;
    let bucket = Bucket::caller()?;
    let page = bucket.list(
        record::SUBSCRIBERS,
        query.cursor.as_deref(),
        query.page_size(),
    )?;
    let items: Vec<SubscriberView> = page
        .entries
        .iter()
        .map(|e| e.json::<Subscriber>().map(|s| SubscriberView::from(&s)))
        .collect::<Result<_, _>>()?;
    let total = bucket.count(record::SUBSCRIBERS)?;
    Ok(Response::ok(
        &json!({ "items": items, "nextCursor": page.next_cursor, "total": total }),
    ))
}

/// `POST /status-pages/subscribers`: an email (pending until confirmed,
/// 202) or a webhook (201, with its secret once).
pub fn create(req: &Request, _: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let input: SubscriberInput = req.json()?;
    let mut check = Check::default();
    match (&input.email, &input.url) {
        (Some(email), None) if !is_email(email.trim()) => {
            check.fail("email", "must be an email address such as ann@example.com")
        }
        (None, Some(url)) => check.url("url", url),
        (Some(_), Some(_)) => check.fail("url", "give either email or url, not both"),
        (None, None) => check.fail("email", "give an email address or a webhook url"),
        _ => {}
    }
    check.done()?;
    let bucket = Bucket::caller()?;
    let page = store::require_page(&bucket)?;
    if let Some(email) = input.email {
        return Ok(
            match add_email(&bucket, &org, &page, &email, &config::public_base_url(req))? {
                Ok((sub, _)) => Response::json(202, &SubscriberView::from(&sub)),
                Err(full) => full,
            },
        );
    }
    let url = input.url.unwrap_or_default();
    if bucket.get_raw(&record::url_key(&url))?.is_some() {
        return Err(ApiError::conflict(format!("{url} is subscribed already")));
    }
    let plan = req.caller.plan.clone().unwrap_or_else(|| "free".to_owned());
    let limit = record::subscriber_limit(&plan);
    if bucket.count(record::SUBSCRIBERS)? >= limit {
        return Ok(limit_problem(&plan, limit));
    }
    let now = clock::now_millis();
    let secret = webhooks::new_secret();
    let sealed = secrets::seal_str(&Namespace::Organization(org.clone()), &secret)?;
    let sub = Subscriber {
        id: plateau_sdk::ids::new_id("sub", now),
        email: None,
        url: Some(url.clone()),
        secret_sealed: Some(BASE64.encode(sealed)),
        token: plateau_sdk::ids::token(),
        confirmed: true,
        created_at: now,
        confirmed_at: Some(now),
        asked_at: now,
    };
    bucket.set(&record::url_key(&url), &sub.id)?;
    bucket.set(&record::token_key(&sub.token), &sub.id)?;
    bucket.set(&record::subscriber_key(&sub.id), &sub)?;
    NewEvent::new("status-pages.subscriber.created", "create")
        .resource("status_subscriber", &sub.id)
        .data(&json!({ "kind": "webhook", "url": url }))
        .audit()
        .emit()?;
    let mut view = SubscriberView::from(&sub);
    view.secret = Some(secret);
    Ok(Response::created(&view))
}

/// `DELETE /status-pages/subscribers/{id}`.
pub fn delete(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let sub: Subscriber = bucket
        .get(&record::subscriber_key(&params["id"]))?
        .ok_or_else(|| {
            ApiError::not_found(format!("subscriber {} does not exist", &params["id"]))
        })?;
    remove(&bucket, &sub)?;
    NewEvent::new("status-pages.subscriber.deleted", "delete")
        .resource("status_subscriber", &sub.id)
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// Removes a subscriber with its index entries.
pub fn remove(bucket: &Bucket, sub: &Subscriber) -> Result<(), ApiError> {
    bucket.delete(&record::subscriber_key(&sub.id))?;
    bucket.delete(&record::token_key(&sub.token))?;
    if let Some(email) = &sub.email {
        bucket.delete(&record::email_key(email))?;
    }
    if let Some(url) = &sub.url {
        bucket.delete(&record::url_key(url))?;
    }
    Ok(())
}

/// The subscriber a link's token names.
pub fn by_token(bucket: &Bucket, token: &str) -> Result<Option<Subscriber>, ApiError> {
    let Some(id) = bucket.get::<String>(&record::token_key(token))? else {
        return Ok(None);
    };
    Ok(bucket.get(&record::subscriber_key(&id))?)
}

/// A webhook subscriber's secret.
pub fn open_secret(org: &str, sealed: &str) -> Result<String, ApiError> {
    let bytes = BASE64
        .decode(sealed)
        .map_err(|e| ApiError::internal(format!("a sealed secret is not base64: {e}")))?;
    Ok(secrets::open_str(
        &Namespace::Organization(org.to_owned()),
        &bytes,
    )?)
}
