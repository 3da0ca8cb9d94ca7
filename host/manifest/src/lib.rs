//! Plateau's manifest (spec section 4.3): one document that brings up a
//! project's databases, caches and apps, after Railway's config-as-code
//! and Terraform's plan. `POST /manifest/plan` reports, per item and
//! field, what an apply would do; `POST /manifest` does it.
//!
//! The stages are modules of their own: [`parse`] (the document, every
//! invalid field named by its path), [`refs`] (`${{ kind.name.attr }}`
//! expressions), [`graph`] (the order items are applied in, or the cycle
//! that forbids one), [`observe`] (what exists, matched by name), [`diff`]
//! (the plan), [`apply`] (the plan made so) and [`services`] (the
//! services' own operations, called in-process).
//!
//! **Architecture Invariant:** a manifest changes resources only through
//! the services' operations (the functions behind their endpoints), so it
//! passes their checks and plan limits and records their events; it
//! holds no state of its own: every apply matches by name again.
//! **Architecture Invariant:** an apply of an unchanged manifest calls no
//! operation that changes anything.

pub mod api;
pub mod apply;
pub mod diff;
pub mod graph;
pub mod model;
pub mod observe;
pub mod parse;
pub mod refs;
pub mod services;
pub mod views;

use plateau_api::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The routes of `/manifest`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(api::apply_manifest))
        .routes(routes!(api::plan))
}
