//! The flags plugin's single-flag OFREP evaluation written as a native
//! handler, over the same stored data, for the benchmark that compares the
//! plugin path with it (`cargo xtask bench flags`), and a native no-op, the
//! twin of the echo fixture's `GET /echo/version`, for the floor of the
//! plugin path.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_core::time;
use plateau_plugin_flags::ofrep::{EvaluationResponse, parse_request};
use plateau_plugin_flags::plugin::evaluation::resolve;
use plateau_plugin_flags::plugin::scope::Scope;
use plateau_plugin_flags::plugin::store::EvaluatorRecord;
use plateau_store::{plugins as kv, projects};
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(evaluate))
        .routes(routes!(version))
}

async fn default_project(app: &AppState, org: &str) -> Result<String, ApiError> {
    static CACHE: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(id) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(org) {
        return Ok(id.clone());
    }
    let project = projects::default_for(app.db(), org)
        .await?
        .ok_or_else(|| ApiError::Internal("no default project".to_owned()))?;
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(org.to_owned(), project.id.clone());
    Ok(project.id)
}

/// Native twin of `POST /flags/ofrep/v1/evaluate/flags/{key}` (production
/// environment, the caller's project).
#[utoipa::path(post, path = "/bench/flags/ofrep/v1/evaluate/flags/{key}", tag = "bench",
    security(("bearer" = ["flags:evaluate"])),
    params(("key" = String, Path, description = "flag key")),
    responses((status = 200, description = "OFREP evaluation", body = Object)))]
pub async fn evaluate(
    State(app): State<AppState>,
    caller: Caller,
    Path(key): Path<String>,
    req: axum::extract::Request,
) -> Result<Response, ApiError> {
    let body = plateau_api::json::read_body(req.into_body(), app.config().max_body_bytes).await?;
    let project = match &caller.project_id {
        Some(p) => p.clone(),
        None => default_project(&app, &caller.org_id).await?,
    };
    let org = caller.org_id.as_str();
    let scope = production(project);
    let stored = kv::kv_get(app.db(), "flags", org, &scope.flag_key(&key)).await?;
    let evaluators =
        kv::kv_list(app.db(), "flags", org, &scope.evaluator_prefix(), None, 200).await?;
    let (status, body) = evaluate_stored(&key, stored.as_deref(), &evaluators, &body)?;
    Ok((status, [(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// The production environment of `project`, whose keys the plugin's
/// evaluation reads.
pub fn production(project: String) -> Scope {
    Scope {
        project,
        environment: "production".to_owned(),
    }
}

/// The evaluation of the native twin, from what it read: the stored flag,
/// the shared evaluators' entries and the request body, to the status and
/// the JSON body of the answer. [`crate::in_process`] times it too.
pub fn evaluate_stored(
    key: &str,
    stored: Option<&[u8]>,
    evaluators: &[(String, Vec<u8>)],
    body: &[u8],
) -> Result<(StatusCode, Vec<u8>), ApiError> {
    let context = match parse_request(body) {
        Ok(request) => Value::Object(request.context),
        Err(e) => return json(400, &e.for_flag(key)),
    };
    let Some(stored) = stored else {
        return json(404, &json!({ "key": key, "errorCode": "FLAG_NOT_FOUND" }));
    };
    // The shared evaluators, read as the plugin's `load_evaluators` reads them.
    let shared = evaluators
        .iter()
        .map(|(_, v)| serde_json::from_slice::<EvaluatorRecord>(v).map(|r| (r.name, r.logic)))
        .collect::<Result<Map<String, Value>, _>>()
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let resolution = resolve(key, stored, &shared, &context, time::now_ms() / 1000);
    let response = EvaluationResponse::from_resolution(key, resolution);
    json(response.status(), &response)
}

fn json(status: u16, value: &impl Serialize) -> Result<(StatusCode, Vec<u8>), ApiError> {
    let body = serde_json::to_vec(value).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok((StatusCode::from_u16(status).unwrap_or(StatusCode::OK), body))
}

/// Native twin of the echo fixture's `GET /echo/version`.
#[utoipa::path(get, path = "/bench/echo/version", tag = "bench",
    security(("bearer" = [])),
    responses((status = 200, description = "version", body = String)))]
pub async fn version(_caller: Caller) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain")],
        "1.0.0",
    )
        .into_response()
}
