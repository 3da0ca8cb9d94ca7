//! An endpoint's delivery log (newest first, each delivery with its
//! attempts: status, latency, response head), and replay: one delivery, or
//! every failed one created since a time.

use plateau_sdk::serde_json::json;
use plateau_sdk::{ApiError, Bucket, NewEvent, Params, Request, Response, clock, paginate_kv_with};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::api::{delivery_view, load};
use crate::deliver;
use crate::record::{self, Delivery, Endpoint};
use crate::views::Replayed;

/// The most deliveries one `POST /webhooks/{id}/replay` starts again.
pub const MAX_REPLAY: usize = 1000;

fn not_found(endpoint: &str, id: &str) -> ApiError {
    ApiError::not_found(format!(
        "delivery {id} of webhook endpoint {endpoint} does not exist: list them with GET /webhooks/{endpoint}/deliveries"
    ))
}

fn load_delivery(bucket: &Bucket, endpoint: &str, id: &str) -> Result<Delivery, ApiError> {
    if !record::is_message_id(id) {
        return Err(not_found(endpoint, id));
    }
    bucket
        .get::<Delivery>(&record::delivery_key(endpoint, id))?
        .ok_or_else(|| not_found(endpoint, id))
}

fn enabled(endpoint: &Endpoint) -> Result<(), ApiError> {
    if endpoint.enabled() {
        return Ok(());
    }
    Err(ApiError::conflict(format!(
        "webhook endpoint {} is disabled: enable it with PATCH /webhooks/{} {{\"enabled\": true}} first",
        endpoint.id, endpoint.id
    )))
}

/// `GET /webhooks/{id}/deliveries`: newest first, paginated.
pub fn deliveries(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    load(&bucket, id)?;
    let page = paginate_kv_with(
        &bucket,
        &record::deliveries_prefix(id),
        &req.page_query()?,
        |entry| Ok(delivery_view(&entry.json::<Delivery>()?)),
    )?;
    Ok(page.into_response())
}

/// `GET /webhooks/{id}/deliveries/{delivery}`
pub fn delivery(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    load(&bucket, &params["id"])?;
    let delivery = load_delivery(&bucket, &params["id"], &params["delivery"])?;
    Ok(Response::ok(&delivery_view(&delivery)))
}

/// `POST /webhooks/{id}/deliveries/{delivery}/replay`: 202; the delivery
/// starts a new round of attempts now, with the same message id.
pub fn replay_one(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let bucket = Bucket::caller()?;
    let endpoint = load(&bucket, &params["id"])?;
    enabled(&endpoint)?;
    let mut delivery = load_delivery(&bucket, &endpoint.id, &params["delivery"])?;
    if delivery.status == "pending" {
        return Err(ApiError::conflict(format!(
            "delivery {} is still being attempted: its next attempt is at {}",
            delivery.id,
            delivery
                .next_attempt_at
                .map(clock::rfc3339)
                .unwrap_or_default()
        )));
    }
    deliver::replay(&org, &mut delivery, clock::now_millis())?;
    bucket.set(&record::delivery_key(&endpoint.id, &delivery.id), &delivery)?;
    Ok(Response::json(202, &delivery_view(&delivery)))
}

/// `POST /webhooks/{id}/replay`'s body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplayInput {
    /// RFC 3339: failed deliveries created since then start again.
    #[schema(format = DateTime, required = true, nullable = false)]
    pub since: Option<String>,
}

/// `POST /webhooks/{id}/replay` `{"since": RFC 3339}`: 202 with how many
/// failed deliveries created since then start again (at most
/// [`MAX_REPLAY`]; `more` says whether another call finds more).
pub fn replay_failed(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let input: ReplayInput = req.json()?;
    let since = input
        .since
        .as_deref()
        .and_then(|raw| raw.parse::<jiff::Timestamp>().ok())
        .and_then(|t| u64::try_from(t.as_millisecond()).ok())
        .ok_or_else(|| {
            ApiError::validation(
                "since",
                "must be an RFC 3339 time, such as 2026-01-31T09:00:00Z",
            )
        })?;
    let bucket = Bucket::caller()?;
    let endpoint = load(&bucket, &params["id"])?;
    enabled(&endpoint)?;
    let now = clock::now_millis();
    let mut replayed = 0;
    let mut more = false;
    let mut cursor: Option<String> = None;
    'pages: loop {
        let page = bucket.list(
            &record::deliveries_prefix(&endpoint.id),
            cursor.as_deref(),
            200,
        )?;
        for entry in page.entries {
            let mut delivery: Delivery = entry.json()?;
            // Newest first: the rest are older still.
            if delivery.created_at < since {
                break 'pages;
            }
            if delivery.status != "failed" {
                continue;
            }
            if replayed == MAX_REPLAY {
                more = true;
                break 'pages;
            }
            deliver::replay(&org, &mut delivery, now)?;
            bucket.set(&entry.key, &delivery)?;
            replayed += 1;
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    NewEvent::new("webhooks.endpoint.replayed", "replay")
        .resource("webhook_endpoint", &endpoint.id)
        .data(&json!({ "since": clock::rfc3339(since), "replayed": replayed }))
        .audit()
        .emit()?;
    Ok(Response::json(202, &Replayed { replayed, more }))
}
