//! The Plateau plugin SDK: write a plugin as a WebAssembly component
//! (`wasm32-wasip2`) that serves HTTP routes under its own prefix, stores
//! data in key-value buckets, records events, and wakes up on schedules.
//!
//! A plugin is a type implementing [`Plugin`], exported with
//! [`export_plugin!`]. Its [`Router`] maps routes to handlers and also
//! produces the route list of its self-description, so the two never drift.
//! Handlers return `Result<Response, ApiError>`; an [`ApiError`] becomes the
//! platform's one error body (`application/problem+json`).
//!
//! ```no_run
//! use plateau_sdk::{
//!     ApiError, Bucket, Capability, Description, Params, Plugin, Request, Response, Router,
//! };
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Counter {
//!     name: String,
//!     value: i64,
//! }
//!
//! fn get_counter(_req: &Request, params: &Params) -> Result<Response, ApiError> {
//!     let name = &params["name"];
//!     let value: Option<i64> = Bucket::caller()?.get(&format!("counter:{name}"))?;
//!     let value = value.ok_or_else(|| ApiError::not_found(format!("counter {name} does not exist")))?;
//!     Ok(Response::ok(&Counter { name: name.to_owned(), value }))
//! }
//!
//! fn bump_counter(_req: &Request, params: &Params) -> Result<Response, ApiError> {
//!     let name = &params["name"];
//!     let value = Bucket::caller()?.increment(&format!("counter:{name}"), 1)?;
//!     Ok(Response::ok(&Counter { name: name.to_owned(), value }))
//! }
//!
//! struct Counters;
//!
//! impl Plugin for Counters {
//!     fn describe() -> Description {
//!         Description::new("counters", env!("CARGO_PKG_VERSION"))
//!             .prefix("/counters")
//!             .scope("counters:read", "Read counters")
//!             .scope("counters:write", "Bump counters")
//!             .capability(Capability::Kv)
//!     }
//!
//!     fn router() -> Router {
//!         Router::new()
//!             .get("/counters/{name}", get_counter).scope("counters:read").summary("Read a counter")
//!             .post("/counters/{name}/bump", bump_counter).scope("counters:write").summary("Add one")
//!     }
//! }
//!
//! plateau_sdk::export_plugin!(Counters);
//! ```
//!
//! # Native builds and tests
//!
//! The SDK compiles for the host too, so a plugin's logic is unit-tested
//! with plain `cargo test`. Every host call goes through one private module
//! (`sys`): in a `wasm32` build it calls the WIT imports; in a native build
//! it uses in-memory stand-ins that follow the same contracts, set up and
//! inspected through `testing`. [`export_plugin!`] only checks the type in
//! a native build. `testing::handle::<P>(&request)` serves a request like the
//! host, rollback of a 5xx answer included.
//!
//! # Map
//!
//! - [`Plugin`], [`export_plugin!`], [`describe`]: the plugin and its export.
//! - [`Router`], [`Params`], [`Handler`]: routing, 404 and 405 problems.
//! - [`Request`], [`Response`], [`Caller`], [`Query`]: the HTTP shapes;
//!   [`Request::json`] parses bodies.
//! - [`ApiError`], [`ErrorCode`], [`Validator`]: the error body.
//! - [`Bucket`], [`Namespace`], [`KvError`]: key-value storage.
//! - [`PageQuery`], [`Page`], [`paginate_kv`], [`paginate_sorted`]: lists.
//! - [`NewEvent`], [`config`], [`clock`], [`log`], [`cursors`],
//!   [`outbound`]: the other host capabilities.
//! - [`jobs`], [`smtp`], [`secrets`]: durable jobs, SMTP submission and
//!   host-key encryption (WIT 0.2.0); [`webhooks`]: Standard Webhooks.

pub mod allocator;
pub mod app_env;
pub mod edge;
mod events;
mod host;
pub mod ids;
pub mod jobs;
mod kv;
pub mod outbound;
mod pagination;
pub mod platform_logs;
mod router;
pub mod runner;
pub mod secrets;
pub mod smtp;
mod sys;
pub mod tcp;
pub mod webhooks;

#[cfg(target_arch = "wasm32")]
mod guest;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;

// The records and rules shared with the host live in `plateau-contract`;
// the SDK's own modules reach them under their old paths.
use plateau_contract::{error, http};

pub use events::{EventError, NewEvent};
pub use host::{clock, config, cursors, log};
pub use kv::{Bucket, Entry, KvError, KvPage, Namespace};
pub use pagination::{Page, paginate_kv, paginate_kv_with, paginate_sorted};
pub use plateau_contract::Route as RouteInfo;
pub use plateau_contract::{
    Access, ApiError, Caller, Capability, DEFAULT_LIMIT, Description, ErrorCode, Event, FieldError,
    MAX_LIMIT, Method, PROBLEM_CONTENT_TYPE, PROBLEM_TYPE_BASE, PageQuery, Problem, Query, Request,
    Response, Route, Schedule, ScopeInfo, Tick, Validator, is_json_content_type, parse_json,
    percent_decode, percent_encode,
};
pub use router::{Handler, Matched, Params, Router};

/// The records and rules shared with the host, for what the SDK does not
/// re-export at its root (route patterns, mail limits, description checks).
pub use plateau_contract as contract;

/// Re-exported so plugins need not pin their own versions.
pub use serde;
pub use serde_json;
pub use utoipa;

/// The result of a handler.
pub type Result<T, E = ApiError> = std::result::Result<T, E>;

/// A plugin: its self-description, its routes, and optional reactions to
/// ticks and events. Every function is called per request or delivery;
/// state lives in key-value storage, not in the type.
pub trait Plugin {
    /// Name, version, prefixes, scopes, capabilities, subscriptions and
    /// schedules. Leave `routes` empty: they come from [`Plugin::router`].
    fn describe() -> Description;

    /// The route table. Built once per component instance.
    fn router() -> Router;

    /// Serves one request. The default dispatches through the router;
    /// override it to wrap every request (call `router.handle(req)` inside).
    fn handle(router: &Router, req: &Request) -> Response {
        router.handle(req)
    }

    /// A scheduled wake-up; an error is logged and the tick retried later.
    fn on_tick(tick: &Tick) -> std::result::Result<(), String> {
        let _ = tick;
        Ok(())
    }

    /// An event the plugin subscribed to in its description.
    fn on_event(event: &Event) -> std::result::Result<(), String> {
        let _ = event;
        Ok(())
    }

    /// A job scheduled through [`jobs::schedule`], now due. Its writes
    /// commit when it returns `Ok`; an error is retried with backoff.
    fn on_job(job: &jobs::Job) -> std::result::Result<(), String> {
        let _ = job;
        Ok(())
    }
}

/// Serves one request as the host sends it: the host's in-band question
/// for the routes' bodies ([`plateau_contract::api_schema::PATH`]) is
/// answered from the router, everything else by [`Plugin::handle`].
pub fn serve<P: Plugin>(router: &Router, req: &Request) -> Response {
    if req.method == "GET" && req.path == plateau_contract::api_schema::PATH {
        Response::json(200, &router.api_schema())
    } else {
        P::handle(router, req)
    }
}

/// The full description the host receives: [`Plugin::describe`] with the
/// routes of [`Plugin::router`]. Check it in a test with
/// [`Description::problems`].
pub fn describe<P: Plugin>() -> Description {
    let mut description = P::describe();
    description.routes = P::router().routes();
    description
}

/// Exports a [`Plugin`] as the component's `plateau:plugin/handler`.
///
/// Use it once, at the root of a `cdylib` crate: `export_plugin!(MyPlugin);`.
/// In a native build it only checks that the type implements [`Plugin`].
#[cfg(target_arch = "wasm32")]
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        #[allow(unsafe_code)]
        const _: () = {
            struct PlateauComponent;

            fn plateau_router() -> &'static $crate::Router {
                static ROUTER: ::std::sync::OnceLock<$crate::Router> = ::std::sync::OnceLock::new();
                ROUTER.get_or_init(<$plugin as $crate::Plugin>::router)
            }

            impl $crate::__private::Guest for PlateauComponent {
                fn describe() -> $crate::__private::WitDescription {
                    $crate::__private::describe::<$plugin>(plateau_router())
                }
                fn handle(req: $crate::__private::WitRequest) -> $crate::__private::WitResponse {
                    $crate::__private::handle::<$plugin>(plateau_router(), req)
                }
                fn on_tick(
                    tick: $crate::__private::WitTick,
                ) -> ::std::result::Result<(), ::std::string::String> {
                    $crate::__private::on_tick::<$plugin>(tick)
                }
                fn on_event(
                    event: $crate::__private::WitEvent,
                ) -> ::std::result::Result<(), ::std::string::String> {
                    $crate::__private::on_event::<$plugin>(event)
                }
                fn on_job(
                    job: $crate::__private::WitJob,
                ) -> ::std::result::Result<(), ::std::string::String> {
                    $crate::__private::on_job::<$plugin>(job)
                }
            }

            $crate::__private::bindings::__export_plugin_world!(
                PlateauComponent with_types_in $crate::__private::bindings
            );
        };
    };
}

/// Exports a [`Plugin`] as the component's `plateau:plugin/handler`.
///
/// Use it once, at the root of a `cdylib` crate: `export_plugin!(MyPlugin);`.
/// In a native build it only checks that the type implements [`Plugin`].
#[cfg(not(target_arch = "wasm32"))]
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        const _: fn() = || {
            fn is_plugin<P: $crate::Plugin>() {}
            is_plugin::<$plugin>();
        };
    };
}

/// Used by [`export_plugin!`]; not part of the stable API.
#[doc(hidden)]
#[cfg(target_arch = "wasm32")]
pub mod __private {
    pub use crate::guest::{
        Guest, WitDescription, WitEvent, WitJob, WitRequest, WitResponse, WitTick, bindings,
        describe, handle, on_event, on_job, on_tick,
    };
}
