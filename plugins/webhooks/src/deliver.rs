//! Deliveries: a timeline event becomes one delivery per enabled endpoint
//! that subscribes to its type, each with a durable job; a job makes one
//! attempt (signed, through the host's egress guard), records it, and
//! schedules the next after the retry schedule's wait; a delivery that
//! fails its last attempt disables its endpoint, with an event and an
//! email request.

use plateau_sdk::jobs::{self, Job, NewJob};
use plateau_sdk::outbound::OutgoingRequest;
use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{ApiError, Bucket, Event, Namespace, NewEvent, clock, config, log};

use crate::input::{self, RETRY_SCHEDULE_KEY};
use crate::record::{self, Attempt, Delivery, Endpoint, KEPT_ATTEMPTS, KEPT_BODY};
use crate::signing;

/// How long one attempt may take.
pub const ATTEMPT_TIMEOUT_MS: u32 = 15_000;

/// The body every endpoint receives for `event`: the Standard Webhooks
/// shape (`type`, `timestamp`, `data`), `data` being the timeline event.
pub fn payload(event: &Event) -> String {
    let data: Value = serde_json::from_str(&event.data).unwrap_or_else(|_| json!({}));
    json!({
        "type": event.event_type,
        "timestamp": clock::rfc3339(event.at),
        "data": {
            "id": event.id,
            "type": event.event_type,
            "organizationId": event.organization_id,
            "resourceType": event.resource_type,
            "resourceId": event.resource_id,
            "data": data,
            "createdAt": clock::rfc3339(event.at),
        },
    })
    .to_string()
}

/// `on-event`: a delivery for each enabled endpoint that wants the event
/// and was made before it happened. An event
/// handed over twice makes no second delivery (its message id is the
/// event's).
pub fn fan_out(event: &Event) -> Result<(), ApiError> {
    let org = event.organization_id.as_str();
    let bucket = Bucket::organization(org)?;
    let endpoints = bucket.list_all(record::ENDPOINTS)?;
    if endpoints.is_empty() {
        return Ok(());
    }
    let now = clock::now_millis();
    let message = record::message_id(&event.id, now);
    let body = payload(event);
    for entry in endpoints {
        let endpoint: Endpoint = entry.json()?;
        // An endpoint hears what happened after it was made.
        if !endpoint.enabled()
            || !endpoint.wants(&event.event_type)
            || event.at < endpoint.created_at
        {
            continue;
        }
        let delivery = Delivery {
            id: message.clone(),
            endpoint_id: endpoint.id.clone(),
            event_id: event.id.clone(),
            event_type: event.event_type.clone(),
            payload: body.clone(),
            status: "pending".to_owned(),
            attempts: 0,
            round_attempts: 0,
            round_trigger: "event".to_owned(),
            next_attempt_at: Some(now),
            log: Vec::new(),
            created_at: now,
            updated_at: now,
        };
        if bucket.insert_new(&record::delivery_key(&endpoint.id, &message), &delivery)? {
            schedule(org, &delivery, now)?;
        }
    }
    Ok(())
}

/// Schedules the delivery's next attempt at `at`.
pub fn schedule(org: &str, delivery: &Delivery, at: u64) -> Result<(), ApiError> {
    jobs::schedule(
        NewJob::at(record::job_key(&delivery.endpoint_id, &delivery.id), at)
            .namespace(Namespace::Organization(org.to_owned()))
            .payload(format!("{}/{}", delivery.endpoint_id, delivery.id)),
    )?;
    Ok(())
}

/// A `dlv:` job: one attempt at a pending delivery. A job run again after
/// its attempt committed finds the delivery settled or due later, and
/// sends nothing.
pub fn run(job: &Job) -> Result<(), ApiError> {
    let Some(org) = job.organization_id.as_deref() else {
        return Ok(());
    };
    let Some((endpoint_id, message)) = job.payload.split_once('/') else {
        log::warn(&format!(
            "dropping the delivery job {} without a target",
            job.key
        ));
        return Ok(());
    };
    let bucket = Bucket::organization(org)?;
    let key = record::delivery_key(endpoint_id, message);
    let Some(mut delivery) = bucket.get::<Delivery>(&key)? else {
        return Ok(());
    };
    if delivery.status != "pending" || delivery.next_attempt_at.is_none_or(|at| at > job.due) {
        return Ok(());
    }
    let Some(endpoint) = bucket.get::<Endpoint>(&record::endpoint_key(endpoint_id))? else {
        return Ok(());
    };
    let now = clock::now_millis();
    let attempt = if endpoint.enabled() {
        attempt(org, &endpoint, &delivery, now)?
    } else {
        Attempt {
            number: delivery.attempts + 1,
            at: now,
            status_code: None,
            latency_ms: 0,
            error: Some("the endpoint is disabled".to_owned()),
            response_headers: Vec::new(),
            response_body: None,
            trigger: delivery.round_trigger.clone(),
        }
    };
    let succeeded = attempt.error.is_none();
    delivery.attempts += 1;
    delivery.round_attempts += 1;
    delivery.updated_at = now;
    delivery.log.insert(0, attempt);
    delivery.log.truncate(KEPT_ATTEMPTS);
    let schedule_now = input::retry_schedule(config::get(RETRY_SCHEDULE_KEY).as_deref());
    let wait = input::next_wait_ms(&schedule_now, delivery.round_attempts);
    delivery.next_attempt_at = None;
    if succeeded {
        delivery.status = "succeeded".to_owned();
    } else if let Some(wait) = wait.filter(|_| endpoint.enabled()) {
        let at = now + wait;
        delivery.next_attempt_at = Some(at);
        schedule(org, &delivery, at)?;
    } else {
        delivery.status = "failed".to_owned();
        if endpoint.enabled() {
            disable(&bucket, org, &endpoint, &delivery, now)?;
        }
    }
    bucket.set(&key, &delivery)?;
    Ok(())
}

/// One signed request: what came back, or why nothing did.
fn attempt(
    org: &str,
    endpoint: &Endpoint,
    delivery: &Delivery,
    now: u64,
) -> Result<Attempt, ApiError> {
    let secrets = signing::signing(org, endpoint, now)?;
    let timestamp = now / 1000;
    let body = delivery.payload.as_bytes();
    let signature = signing::header(&secrets, &delivery.id, timestamp, body)
        .ok_or_else(|| ApiError::internal("the endpoint has no secret that signs"))?;
    let request = OutgoingRequest::post(endpoint.url.clone())
        .header("content-type", "application/json")
        .header("user-agent", "Plateau-Webhooks/1")
        .header("webhook-id", delivery.id.clone())
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body.to_vec())
        .timeout_ms(ATTEMPT_TIMEOUT_MS)
        .keep_body_bytes(KEPT_BODY as u32);
    let started = clock::now_millis();
    let answer = request.send();
    let mut attempt = Attempt {
        number: delivery.attempts + 1,
        at: now,
        status_code: None,
        latency_ms: clock::now_millis().saturating_sub(started),
        error: None,
        response_headers: Vec::new(),
        response_body: None,
        trigger: delivery.round_trigger.clone(),
    };
    match answer {
        Ok(response) => {
            attempt.status_code = Some(response.status);
            let kept = &response.body[..response.body.len().min(KEPT_BODY)];
            attempt.response_body = Some(String::from_utf8_lossy(kept).into_owned());
            attempt.response_headers = response.headers;
            if !(200..300).contains(&response.status) {
                attempt.error = Some(format!("the endpoint answered {}", response.status));
            }
        }
        Err(e) => attempt.error = Some(e.to_string()),
    }
    Ok(attempt)
}

/// Disables an endpoint whose delivery failed every attempt of its
/// round: the endpoint's status, an audited event, and an email to its
/// `alertEmails` through the email relay.
fn disable(
    bucket: &Bucket,
    org: &str,
    endpoint: &Endpoint,
    delivery: &Delivery,
    now: u64,
) -> Result<(), ApiError> {
    let reason = format!(
        "delivery {} failed {} attempts",
        delivery.id, delivery.round_attempts
    );
    let changed = bucket.update::<Endpoint, _>(&record::endpoint_key(&endpoint.id), |current| {
        Ok(current.map(|mut e| {
            if e.enabled() {
                e.status = "disabled".to_owned();
                e.disabled_reason = Some(reason.clone());
                e.disabled_at = Some(now);
                e.updated_at = now;
            }
            e
        }))
    })?;
    if changed.is_none() {
        return Ok(());
    }
    NewEvent::new("webhooks.endpoint.disabled", "disable")
        .organization(org)
        .resource("webhook_endpoint", &endpoint.id)
        .data(&json!({ "url": endpoint.url, "reason": reason, "deliveryId": delivery.id }))
        .audit()
        .emit()?;
    if !endpoint.alert_emails.is_empty() {
        let text = format!(
            "The webhook endpoint {} ({}) was disabled: {reason}, the last one answering: {}.\n\nEnable it again with PATCH /webhooks/{} {{\"enabled\": true}}, then replay what failed with POST /webhooks/{}/replay.",
            endpoint.id,
            endpoint.url,
            delivery
                .log
                .first()
                .and_then(|a| a.error.clone())
                .unwrap_or_default(),
            endpoint.id,
            endpoint.id,
        );
        NewEvent::new("webhooks.email.requested", "request")
            .organization(org)
            .resource("webhook_endpoint", &endpoint.id)
            .data(&json!({
                "to": endpoint.alert_emails,
                "subject": format!("Webhook endpoint disabled: {}", endpoint.url),
                "text": text,
            }))
            .emit()?;
    }
    Ok(())
}

/// Starts a new round of attempts of `delivery` now (a replay): pending,
/// with the whole retry schedule ahead of it.
pub fn replay(org: &str, delivery: &mut Delivery, now: u64) -> Result<(), ApiError> {
    delivery.status = "pending".to_owned();
    delivery.round_attempts = 0;
    delivery.round_trigger = "replay".to_owned();
    delivery.next_attempt_at = Some(now);
    delivery.updated_at = now;
    schedule(org, delivery, now)
}
