//! Requests under a plugin's prefix: the host finds the plugin and the
//! route, authenticates and authorizes before any plugin code runs (the
//! route's scope, 403 naming it; public routes need no token), applies
//! idempotency and the body limit like on core routes, then runs the
//! request on the plugin's current version.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use plateau_api::auth::{self, Caller, Requirement};
use plateau_api::error::ApiError;
use plateau_api::idempotency;
use plateau_plugin_runtime::{
    Access, Caller as PluginCaller, ExecError, PluginVersion, Request as PluginRequest,
};
use plateau_store::projects;

use crate::host::PluginHost;
use crate::meter::Meter;
use crate::routes::{self, Matched};

/// The header a plugin reads the client's address from: set by the host
/// from the connection, and dropped when a client sends it, so a plugin
/// can trust it (the analytics plugin hashes it into a visitor).
pub const CLIENT_IP_HEADER: &str = "plateau-client-ip";

/// What [`authorize`] found, for [`handle`].
#[derive(Clone)]
struct Routed {
    version: Arc<PluginVersion>,
    pattern: String,
}

/// Shared by the dispatcher's middleware and handler.
#[derive(Clone)]
pub struct Dispatcher {
    pub host: Arc<PluginHost>,
    pub meter: Arc<Meter>,
}

/// The fallback service of the API: plugin routes, then 404.
pub fn router(dispatcher: Dispatcher) -> Router {
    let app = dispatcher.host.app().clone();
    Router::new()
        .fallback(handle)
        .layer(from_fn_with_state(app, idempotency::middleware))
        .layer(from_fn_with_state(dispatcher.clone(), authorize))
        .with_state(dispatcher)
}

fn api_path(req: &Request) -> String {
    let path = req.uri().path();
    path.strip_prefix(plateau_api::API_PREFIX)
        .unwrap_or(path)
        .to_owned()
}

async fn authorize(State(d): State<Dispatcher>, mut req: Request, next: Next) -> Response {
    let path = api_path(&req);
    let Some(target) = d.host.target(&path) else {
        return ApiError::not_found("no such endpoint: check the method and the path")
            .into_response();
    };
    let route = match routes::find(&target.routes, req.method().as_str(), &path) {
        Matched::Route(route) => route.clone(),
        Matched::WrongMethod(allowed) => {
            let mut response = ApiError::MethodNotAllowed(
                "this path does not accept that method: see the Allow header".to_owned(),
            )
            .into_response();
            if let Ok(v) = HeaderValue::from_str(&allowed.join(", ")) {
                response.headers_mut().insert(header::ALLOW, v);
            }
            return response;
        }
        Matched::NoRoute => {
            return ApiError::not_found("no such endpoint: check the method and the path")
                .into_response();
        }
    };
    let requirement = match &route.access {
        Access::Public => Requirement::Public,
        Access::Authenticated => Requirement::Token,
        Access::Scope(scope) => Requirement::Scope(scope.clone()),
    };
    if let Err(e) = auth::check(d.host.app(), &requirement, &mut req).await {
        return e.into_response();
    }
    req.extensions_mut().insert(Routed {
        version: target.version,
        pattern: route.pattern,
    });
    next.run(req).await
}

async fn handle(State(d): State<Dispatcher>, req: Request) -> Response {
    match run(&d, req).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn run(d: &Dispatcher, req: Request) -> Result<Response, ApiError> {
    let routed = req
        .extensions()
        .get::<Routed>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("plugin request without a route".to_owned()))?;
    let caller = req.extensions().get::<Caller>().cloned();
    let path = api_path(&req);
    let query = req.uri().query().unwrap_or_default().to_owned();
    let method = req.method().as_str().to_owned();
    let mut headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .filter(|(name, _)| {
            *name != header::AUTHORIZATION
                && *name != header::COOKIE
                && name.as_str() != CLIENT_IP_HEADER
        })
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect();
    if let Some(ip) = auth::client_ip(&req) {
        headers.push((CLIENT_IP_HEADER.to_owned(), ip));
    }
    let body =
        plateau_api::json::read_body(req.into_body(), d.host.app().config().max_body_bytes).await?;
    let plugin_caller = match &caller {
        Some(c) => PluginCaller {
            organization_id: Some(c.org_id.clone()),
            project_id: Some(project_of(d, c, &query).await?),
            scopes: c.scopes.names(),
            actor: Some(format!("token:{}", c.token_id)),
            plan: Some(c.plan.clone()),
        },
        None => PluginCaller::default(),
    };
    let request = PluginRequest {
        method,
        path,
        route: routed.pattern,
        query,
        headers,
        body: body.to_vec(),
        caller: plugin_caller,
    };
    let version = routed.version;
    let outcome = version
        .handle(request)
        .await
        .map_err(|e| plugin_error(&e))?;
    if let Some(c) = &caller {
        d.meter
            .record(&c.org_id, version.name(), outcome.fuel_consumed);
    }
    let status = StatusCode::from_u16(outcome.response.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut response = Response::new(Body::from(outcome.response.body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    for (name, value) in outcome.response.headers {
        let value = absolute_location(&name, value);
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            headers.append(name, value);
        }
    }
    if let Ok(v) = HeaderValue::from_str(version.served_by()) {
        headers.insert(plateau_api::error::PLUGIN_HEADER, v);
    }
    headers.insert("plateau-fuel", HeaderValue::from(outcome.fuel_consumed));
    Ok(response)
}

/// A plugin names its resources by its own paths, below the API base
/// (`/queues/q1`); a `Location` it sends is given that base so that it
/// works when followed (`/api/v1/queues/q1`). An absolute URL, or a path
/// already under the base, is left as it is.
fn absolute_location(name: &str, value: String) -> String {
    let base = plateau_api::API_PREFIX;
    let under_base = value
        .strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?']));
    if name.eq_ignore_ascii_case("location")
        && value.starts_with('/')
        && !value.starts_with("//")
        && !under_base
    {
        format!("{base}{value}")
    } else {
        value
    }
}

/// The project a request is about: the token's own project if it is
/// limited to one; else the `project` query parameter, which must name a
/// project of the organisation; else the organisation's default project.
async fn project_of(d: &Dispatcher, caller: &Caller, query: &str) -> Result<String, ApiError> {
    let asked = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == "project")
        .map(|(_, v)| v.to_owned());
    let missing = |id: &str| ApiError::not_found(format!("project {id} does not exist"));
    if let Some(only) = &caller.project_id {
        return match asked {
            Some(id) if &id != only => Err(missing(&id)),
            _ => Ok(only.clone()),
        };
    }
    let db = d.host.app().db();
    match asked {
        Some(id) => match projects::get(db, &caller.org_id, &id).await? {
            Some(_) => Ok(id),
            None => Err(missing(&id)),
        },
        None => d.meter.default_project(db, &caller.org_id).await,
    }
}

/// A 5xx problem naming the plugin.
fn plugin_error(e: &ExecError) -> ApiError {
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    ApiError::Plugin {
        status,
        code: e.code(),
        detail: format!("plugin {} failed: {e}", e.plugin()),
    }
}
