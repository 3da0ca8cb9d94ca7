//! Edge filters: components the app edge calls on each request to an app
//! before the app sees it (world `plateau:edge-filter/edge@0.1.0`). A filter
//! is a type implementing [`EdgeFilter`], exported with
//! [`export_edge_filter!`](crate::export_edge_filter). It sees the request's
//! head (method, path, query, host, headers, client address) and answers a
//! [`Verdict`]: pass, block, redirect, or changed headers, with facts the
//! host records. It imports nothing, so its logic is a plain function of the
//! head and unit-tests with `cargo test` through [`testing`].
//!
//! ```no_run
//! use plateau_sdk::edge::{EdgeFilter, FilterInfo, RequestHead, Verdict};
//!
//! struct NoAdmin;
//!
//! impl EdgeFilter for NoAdmin {
//!     fn info() -> FilterInfo {
//!         FilterInfo::new("no-admin", env!("CARGO_PKG_VERSION"))
//!     }
//!
//!     fn on_request(head: &RequestHead) -> Verdict {
//!         if head.path.starts_with("/admin") {
//!             return Verdict::block(403, "forbidden").fact("rule", "no-admin");
//!         }
//!         Verdict::pass()
//!     }
//! }
//!
//! plateau_sdk::export_edge_filter!(NoAdmin);
//! ```

pub use plateau_contract::edge::{
    Action, Fact, FailMode, Header, HeaderChanges, RequestHead, ResponseHead, Verdict,
};

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod guest;
pub mod testing;

/// What a filter says about itself when it is installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterInfo {
    pub name: String,
    /// Semver.
    pub version: String,
    /// Whether the edge calls [`EdgeFilter::on_response`].
    pub response_phase: bool,
}

impl FilterInfo {
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> FilterInfo {
        FilterInfo {
            name: name.into(),
            version: version.into(),
            response_phase: false,
        }
    }

    /// Asks the edge to call [`EdgeFilter::on_response`] too.
    pub fn response_phase(mut self) -> FilterInfo {
        self.response_phase = true;
        self
    }
}

/// An edge filter. Each call runs in a fresh instance: keep no state in
/// statics between requests.
pub trait EdgeFilter {
    fn info() -> FilterInfo;

    /// The verdict on a request, before the app sees it.
    fn on_request(head: &RequestHead) -> Verdict;

    /// Changes to the app's answer's headers; called only when
    /// [`FilterInfo::response_phase`] is set.
    fn on_response(_request: &RequestHead, _response: &ResponseHead) -> HeaderChanges {
        HeaderChanges::default()
    }
}

/// Exports an [`EdgeFilter`] as the component's
/// `plateau:edge-filter/edge-filter`. Use it once, at the root of a `cdylib`
/// crate. In a native build it only checks that the type is a filter.
#[cfg(target_arch = "wasm32")]
#[macro_export]
macro_rules! export_edge_filter {
    ($filter:ty) => {
        #[allow(unsafe_code)]
        const _: () = {
            struct PlateauEdgeFilter;

            impl $crate::edge::guest::Guest for PlateauEdgeFilter {
                fn describe() -> $crate::edge::guest::WitInfo {
                    $crate::edge::guest::describe::<$filter>()
                }
                fn on_request(
                    head: $crate::edge::guest::WitRequestHead,
                ) -> $crate::edge::guest::WitVerdict {
                    $crate::edge::guest::on_request::<$filter>(head)
                }
                fn on_response(
                    request: $crate::edge::guest::WitRequestHead,
                    response: $crate::edge::guest::WitResponseHead,
                ) -> $crate::edge::guest::WitHeaderChanges {
                    $crate::edge::guest::on_response::<$filter>(request, response)
                }
            }

            $crate::edge::guest::bindings::__export_edge_world!(
                PlateauEdgeFilter with_types_in $crate::edge::guest::bindings
            );
        };
    };
}

/// Exports an [`EdgeFilter`]; in a native build it only checks the type.
#[cfg(not(target_arch = "wasm32"))]
#[macro_export]
macro_rules! export_edge_filter {
    ($filter:ty) => {
        const _: fn() = || {
            fn is_filter<F: $crate::edge::EdgeFilter>() {}
            is_filter::<$filter>();
        };
    };
}
