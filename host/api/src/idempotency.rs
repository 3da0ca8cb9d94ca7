//! The `Idempotency-Key` middleware (spec section 1.1).
//!
//! On POST, PUT, PATCH and DELETE a request may carry `Idempotency-Key`
//! (1 to 255 printable ASCII characters). The key is scoped to the
//! credential, the method and the path (with its query), and kept 24 hours
//! in the database, so replays work after a restart and across hosts:
//! - first use: the request runs and its response is stored;
//! - same key, same body: the stored status and body are replayed byte
//!   for byte with `Idempotent-Replayed: true`, and nothing runs;
//! - same key, different body: 422 `idempotency_key_reused`;
//! - same key while the first request still runs: 409
//!   `idempotency_in_progress` (retry later with the same key);
//! - a 4xx answer changed nothing, so its key is released and may be used
//!   again with a corrected request.
//!
//! A handler whose last write ends with `Tx::commit_last` has its response
//! recorded in the same transaction as its change (one commit for the
//! change, its event and its record); otherwise the record is a write of
//! its own after the handler. Plugin requests take the first way: the
//! plugin's `Storage::commit` ends with `Tx::commit_last`, so its key-value
//! writes, events and jobs commit with the record, and a crash before that
//! commit leaves neither (the retry runs the plugin once).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use plateau_core::time;
use plateau_store::idempotency::{self, KeyRef, Reservation, StoredResponse};
use plateau_store::{Tx, db};
use sha2::{Digest, Sha256};

use crate::auth::Principal;
use crate::error::ApiError;
use crate::state::AppState;

pub const HEADER: &str = "idempotency-key";
pub const REPLAYED_HEADER: &str = "idempotent-replayed";
pub const MAX_KEY_LEN: usize = 255;

/// Responses larger than this are not kept for replay (none of the core
/// endpoints come close).
const MAX_STORED_BODY: usize = 1024 * 1024;

pub async fn middleware(State(app): State<AppState>, req: Request, next: Next) -> Response {
    match run(&app, req, next).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn run(app: &AppState, req: Request, next: Next) -> Result<Response, ApiError> {
    let applies = matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    let Some(raw_key) = req.headers().get(HEADER).filter(|_| applies) else {
        return Ok(next.run(req).await);
    };
    let key = raw_key
        .to_str()
        .ok()
        .filter(|k| !k.is_empty() && k.len() <= MAX_KEY_LEN && k.bytes().all(|b| (0x21..0x7f).contains(&b)))
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_idempotency_key",
                format!("Idempotency-Key must be 1 to {MAX_KEY_LEN} printable ASCII characters without spaces"),
            )
        })?
        .to_owned();
    let Some(Principal(scope)) = req.extensions().get::<Principal>().cloned() else {
        // Public endpoints have nobody to scope a key to.
        return Ok(next.run(req).await);
    };
    let method = req.method().as_str().to_owned();
    let path = req
        .uri()
        .path_and_query()
        .map(|pq| pq.as_str().to_owned())
        .unwrap_or_default();
    let (parts, body) = req.into_parts();
    let bytes = crate::json::read_body(body, app.config().max_body_bytes).await?;
    let fingerprint = hex_sha256(&bytes);
    let k = KeyRef {
        scope: &scope,
        method: &method,
        path: &path,
        key: &key,
    };
    let lease = match idempotency::reserve(app.db(), &k, &fingerprint, time::now_ms()).await? {
        Reservation::Acquired { lease } => lease,
        Reservation::Replay(stored) => return Ok(replay(stored)),
        Reservation::InProgress => return Err(in_progress()),
        Reservation::Mismatch => {
            return Err(ApiError::Unprocessable {
                code: "idempotency_key_reused",
                detail:
                    "this Idempotency-Key was used with a different request body; use a new key"
                        .to_owned(),
            });
        }
    };
    // A handler that ends with `Tx::commit_last` hands its transaction back
    // open: the record of the response joins the change's commit.
    let (response, held) =
        db::hold_last_commit(next.run(Request::from_parts(parts, Body::from(bytes)))).await;
    let status = response.status();
    if status.is_client_error() {
        match held {
            Some(mut tx) => {
                let released = match idempotency::release_in(&mut tx, &k).await {
                    Ok(()) => tx.commit().await,
                    Err(e) => Err(e),
                };
                if let Err(e) = released {
                    idempotency::release(app.db(), &k).await?;
                    return Err(e.into());
                }
            }
            None => idempotency::release(app.db(), &k).await?,
        }
        return Ok(response);
    }
    let (parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_STORED_BODY).await {
        Ok(bytes) => bytes,
        Err(e) => {
            // A held change is rolled back: nothing happened, the key is free.
            drop(held);
            idempotency::release(app.db(), &k).await?;
            return Err(ApiError::Internal(format!(
                "reading a response to store it: {e}"
            )));
        }
    };
    let stored = StoredResponse {
        status: status.as_u16(),
        content_type: parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body: bytes.to_vec(),
    };
    // The request has run; nothing of it is committed if it ended with
    // `Tx::commit_last`. The test build can die here (`fault`).
    crate::fault::point("idempotency-record").await;
    match held {
        Some(tx) => commit_with_record(app, tx, &k, lease, &stored).await?,
        None => idempotency::complete(app.db(), &k, &stored).await?,
    }
    Ok(Response::from_parts(parts, Body::from(bytes)))
}

/// Commits a held change together with the record of its response. If
/// either fails the change is rolled back, so the key is released for a
/// retry; if the key was taken over meanwhile (the lock expired), the change
/// is rolled back and the other request's outcome stands.
async fn commit_with_record(
    app: &AppState,
    mut tx: Tx,
    k: &KeyRef<'_>,
    lease: i64,
    stored: &StoredResponse,
) -> Result<(), ApiError> {
    let committed = match idempotency::complete_in(&mut tx, k, lease, stored, time::now_ms()).await
    {
        Ok(true) => tx.commit().await,
        Ok(false) => return Err(in_progress()),
        Err(e) => Err(e),
    };
    if let Err(e) = committed {
        idempotency::release(app.db(), k).await?;
        return Err(e.into());
    }
    Ok(())
}

fn in_progress() -> ApiError {
    ApiError::conflict(
        "idempotency_in_progress",
        "a request with this Idempotency-Key is still being processed; retry shortly",
    )
}

fn replay(stored: StoredResponse) -> Response {
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, stored.body).into_response();
    let headers = response.headers_mut();
    headers.remove(header::CONTENT_TYPE);
    if let Some(ct) = stored
        .content_type
        .and_then(|ct| HeaderValue::from_str(&ct).ok())
    {
        headers.insert(header::CONTENT_TYPE, ct);
    }
    headers.insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    response
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
