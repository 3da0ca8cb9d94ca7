//! Plateau's HTTP API: the axum router with authentication,
//! idempotency, pagination, the one error body, and the core endpoints.
//!
//! Only this crate knows about HTTP and JSON; the store below it knows
//! about SQL, and the binary above it about processes and signals.

pub mod alarms;
pub mod anomalies;
pub mod auth;
pub mod cost;
pub mod error;
pub mod fault;
pub mod idempotency;
pub mod json;
pub mod notify;
pub mod openapi;
pub mod pagination;
pub mod rewards;
pub mod routes;
pub mod spend;
pub mod state;
pub mod token_cache;

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderName, Method, header};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::IntoResponse;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use state::{ApiConfig, AppState};

use crate::auth::{Requirement, RouteTable};
use crate::routes::{
    account, admin, admin_plans, alarms as alarm_routes, anomalies as anomaly_routes, changelog,
    connect, events, invites, members, metrics, notifications, projects, registry,
    rewards as reward_routes, spend as spend_routes, tokens,
};

/// Where the API is served.
pub const API_PREFIX: &str = "/api/v1";

/// What `GET /health` answers: `{"status":"ok"}`.
#[derive(utoipa::ToSchema)]
pub struct Health {
    /// Always `ok`: an answer at all means the server is up.
    #[schema(pattern = "^ok$")]
    pub status: String,
}

/// Liveness: answers without touching the database.
#[utoipa::path(get, path = "/health", tag = "meta",
    security(()),
    responses((status = 200, description = "the server is up", body = Health)))]
pub async fn health() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"status":"ok"}"#,
    )
}

/// What other crates add to the API: documented operations (their
/// `security` is enforced like the core's) and a fallback service for
/// every other path under the API (the plugin dispatcher).
#[derive(Default)]
pub struct Extensions {
    pub routes: Option<OpenApiRouter<AppState>>,
    pub fallback: Option<Router>,
}

/// The whole application: the API under [`API_PREFIX`], with request ids,
/// tracing and problem-shaped errors everywhere.
pub fn app(state: AppState) -> Result<Router, String> {
    app_with(state, Extensions::default())
}

/// The core's documented operations (on the base document), before other
/// crates' areas are merged in.
pub fn core_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::base())
        .routes(routes!(health))
        .routes(routes!(account::me))
        .routes(routes!(account::usage))
        .routes(routes!(metrics::list))
        .routes(routes!(alarm_routes::list, alarm_routes::create))
        .routes(routes!(
            alarm_routes::get,
            alarm_routes::update,
            alarm_routes::delete
        ))
        .routes(routes!(anomaly_routes::found, anomaly_routes::create))
        .routes(routes!(anomaly_routes::list))
        .routes(routes!(
            anomaly_routes::get,
            anomaly_routes::update,
            anomaly_routes::delete
        ))
        .routes(routes!(spend_routes::overview))
        .routes(routes!(spend_routes::create))
        .routes(routes!(
            spend_routes::get,
            spend_routes::update,
            spend_routes::delete
        ))
        .routes(routes!(spend_routes::resume))
        .routes(routes!(tokens::list, tokens::create))
        .routes(routes!(tokens::revoke))
        .routes(routes!(notifications::get, notifications::put))
        .routes(routes!(connect::list, connect::create))
        .routes(routes!(connect::update, connect::delete))
        .routes(routes!(connect::token))
        .routes(routes!(projects::list, projects::create))
        .routes(routes!(projects::get, projects::delete))
        .routes(routes!(reward_routes::overview, reward_routes::claim))
        .routes(routes!(reward_routes::lines))
        .routes(routes!(reward_routes::referral))
        .routes(routes!(reward_routes::redeem))
        .routes(routes!(reward_routes::review))
        .routes(routes!(reward_routes::visit))
        .routes(routes!(
            reward_routes::admin_lines,
            reward_routes::create_line
        ))
        .routes(routes!(reward_routes::update_line))
        .routes(routes!(reward_routes::admin_submissions))
        .routes(routes!(reward_routes::admin_giftcards))
        .routes(routes!(reward_routes::settle_giftcard))
        .routes(routes!(events::timeline))
        .routes(routes!(events::audit))
        .routes(routes!(events::export))
        .routes(routes!(changelog::list))
        .routes(routes!(registry::list))
        .routes(routes!(registry::get))
        .routes(routes!(registry::tags))
        .routes(routes!(members::list))
        .routes(routes!(members::update, members::remove))
        .routes(routes!(invites::list_invites, invites::invite))
        .routes(routes!(invites::revoke_invite))
        .routes(routes!(invites::accept))
        .routes(routes!(admin::login))
        .routes(routes!(admin::logout))
        .routes(routes!(admin::list_orgs, admin::create_org))
        .routes(routes!(admin_plans::get_org, admin_plans::change_plan))
        .routes(routes!(admin::add_member))
}

/// [`app`] with extensions.
pub fn app_with(state: AppState, extensions: Extensions) -> Result<Router, String> {
    let mut core = core_routes();
    if let Some(routes) = extensions.routes {
        core = core.merge(routes);
    }
    let (api, mut doc) = core.split_for_parts();
    openapi::add_error_responses(&mut doc);
    let mut table = RouteTable::from_openapi(&doc)?;
    table.insert(Method::GET, "/openapi.json".to_owned(), Requirement::Public);
    let mut doc = serde_json::to_value(&doc).map_err(|e| e.to_string())?;
    openapi::add_parameter_rules(&mut doc);
    let doc = Arc::new(doc);
    let docs_state = state.clone();
    let mut api = api
        .route(
            "/openapi.json",
            axum::routing::get(move || {
                let doc =
                    openapi::served(&doc, docs_state.plugin_paths(), docs_state.known_scopes());
                async move { axum::Json(doc) }
            }),
        )
        .route_layer(from_fn_with_state(state.clone(), spend::guard::guard))
        .route_layer(from_fn_with_state(state.clone(), idempotency::middleware))
        .route_layer(from_fn_with_state(
            (state.clone(), Arc::new(table)),
            auth::authenticate,
        ))
        .with_state(state);
    if let Some(fallback) = extensions.fallback {
        api = api.fallback_service(fallback);
    }
    let request_id = HeaderName::from_static("x-request-id");
    Ok(Router::new()
        .nest(API_PREFIX, api)
        .layer(from_fn(error::normalize))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &axum::extract::Request| {
            let id = req
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id)
        }))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid)))
}
