//! The public ingest routes the Sentry SDKs call, below the DSN's path
//! (`{base}/errors/ingest/{project}` makes the SDKs post to
//! `{base}/errors/ingest/api/{project}/envelope/`): the envelope endpoint,
//! and the older store endpoint (one event as the body). The DSN's public
//! key is the credential; answers are Sentry's (`{"id": "<event id>"}`),
//! and a project over its daily quota answers 429 with `Retry-After` and
//! `X-Sentry-Rate-Limits`, which the SDKs honour.

use plateau_sdk::serde_json::{self, Value};
use plateau_sdk::{ApiError, Bucket, Params, Request, Response, clock};

use crate::envelope;
use crate::issue::record_event;
use crate::record::{self, DsnEntry, Project};
use crate::views::Accepted;

const DAY_MS: u64 = 86_400_000;

fn unknown(project: &str) -> ApiError {
    ApiError::not_found(format!(
        "no error tracking project {project}: check the project id at the end of the DSN"
    ))
}

/// The organisation and project a request may send to: the project id of
/// the path, and the DSN's public key of the request.
fn authenticate(
    req: &Request,
    project_id: &str,
    dsn: Option<&str>,
) -> Result<(String, Project), ApiError> {
    if !record::is_project_id(project_id) {
        return Err(unknown(project_id));
    }
    let entry: DsnEntry = Bucket::global()?
        .get(&record::dsn_key(project_id))?
        .ok_or_else(|| unknown(project_id))?;
    let key =
        envelope::public_key(req.header("x-sentry-auth"), &req.query(), dsn).ok_or_else(|| {
            ApiError::unauthenticated(
                "no DSN key: send the X-Sentry-Auth header or the sentry_key query parameter",
            )
        })?;
    if key != entry.public_key {
        return Err(ApiError::unauthenticated(
            "the DSN key does not belong to this project: copy the DSN again",
        ));
    }
    let project: Project = Bucket::organization(&entry.organization_id)?
        .get(&record::project_key(project_id))?
        .ok_or_else(|| unknown(project_id))?;
    Ok((entry.organization_id, project))
}

/// Counts one event against the project's daily quota; 429 when the day's
/// quota is spent.
fn take_quota(bucket: &Bucket, project: &Project, now: u64) -> Result<(), ApiError> {
    let day = now / DAY_MS;
    let key = record::day_counter_key(&project.id, day);
    let limit = record::daily_event_limit(&project.plan);
    let used: u64 = bucket.get(&key)?.unwrap_or(0);
    if used >= limit {
        let retry = ((day + 1) * DAY_MS - now).div_ceil(1000).max(1);
        return Err(ApiError::rate_limited(
            format!(
                "project {} accepted its {limit} events of the day on the {} plan",
                project.id, project.plan
            ),
            u32::try_from(retry).unwrap_or(u32::MAX),
        )
        .with_header(
            "x-sentry-rate-limits",
            format!("{retry}:error;default:project:quota_exceeded"),
        ));
    }
    if bucket.increment(&key, 1)? == 1 && day >= 2 {
        // The first event of a day drops the counter of two days before.
        bucket.delete(&record::day_counter_key(&project.id, day - 2))?;
    }
    Ok(())
}

fn parse_event(payload: &[u8], field: &str) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(payload)
        .map_err(|e| ApiError::validation(field, format!("is not JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::validation(field, "must be a JSON object"));
    }
    Ok(value)
}

/// `POST /errors/ingest/api/{project}/envelope/`: every `event` item is
/// recorded; the other item types (transactions, sessions, attachments,
/// client reports...) are acknowledged and not kept, and the answer lists
/// them under `ignored`.
pub fn envelope(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let body = envelope::decode_body(req.header("content-encoding"), &req.body)?;
    let parsed = envelope::parse(&body)?;
    let (org, project) = authenticate(req, &params["project"], parsed.header["dsn"].as_str())?;
    let bucket = Bucket::organization(&org)?;
    let header_id = parsed.header["event_id"].as_str();
    let mut ids = Vec::new();
    let mut ignored = Vec::new();
    for (n, item) in parsed.items.iter().enumerate() {
        if item.kind != "event" {
            ignored.push(item.kind.clone());
            continue;
        }
        let payload = parse_event(item.payload, &format!("items[{n}].payload"))?;
        let now = clock::now_millis();
        take_quota(&bucket, &project, now)?;
        ids.push(record_event(&org, &project, &payload, header_id, now)?);
    }
    let id = ids
        .first()
        .cloned()
        .or_else(|| header_id.map(|id| id.replace('-', "")));
    let mut answer = Accepted {
        id,
        ignored: None,
        detail: None,
    };
    if !ignored.is_empty() {
        answer.ignored = Some(ignored);
        answer.detail =
            Some("only error events are kept: the other items were not stored".to_owned());
    }
    Ok(Response::ok(&answer))
}

/// `POST /errors/ingest/api/{project}/store/`: one event as the body.
pub fn store(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let body = envelope::decode_body(req.header("content-encoding"), &req.body)?;
    let payload = parse_event(&body, "body")?;
    let (org, project) = authenticate(req, &params["project"], None)?;
    let bucket = Bucket::organization(&org)?;
    let now = clock::now_millis();
    take_quota(&bucket, &project, now)?;
    let id = record_event(&org, &project, &payload, None, now)?;
    Ok(Response::ok(&Accepted {
        id: Some(id),
        ignored: None,
        detail: None,
    }))
}
