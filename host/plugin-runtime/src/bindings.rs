//! The generated bindings of every supported WIT version, kept private, and
//! the one place that knows which version a component speaks.
//!
//! Each version gets its own `bindgen!` module; its host interfaces are
//! linked side by side in one linker (their names carry the version), and
//! [`WorldPre`] picks the export bindings by the version found at load.
//!
//! To support `0.2.0` next to `0.1.0`: add `wit/plugin@0.2.0`, a `v0_2`
//! module here (with `with:` pointing unchanged interfaces at `v0_1`), a
//! `WitVersion::V0_2` in `inspect`, a variant in [`WorldPre`] and
//! [`WorldInstance`], and in each `host` module an impl of the new traits
//! on top of the same logic, linked from its `add_to_linker`. The linker
//! keeps both, since import names carry their version.

use wasmtime::Store;
use wasmtime::component::{InstancePre, Linker};

use crate::inspect::WitVersion;
use crate::state::State;
use crate::types::{
    Access, Caller, Description, Event, Job, Request, Response, Route, Schedule, ScopeInfo, Tick,
};

pub(crate) mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit/plugin@0.1.0",
        world: "plateau:plugin/plugin@0.1.0",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "plateau:plugin/kv.bucket": crate::host::kv::BucketHandle,
        },
    });
}

pub(crate) mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/plugin@0.2.0",
        world: "plateau:plugin/plugin@0.2.0",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "plateau:plugin/kv.bucket": crate::host::kv::BucketHandle,
        },
    });
}

/// Links WASI (locked down by the store's context) and the host interfaces
/// of every supported version.
pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    crate::host::add_to_linker(linker)
}

/// One entry point of the `handler` export.
pub(crate) enum Call {
    Describe,
    Handle(Request),
    Tick(Tick),
    Event(Event),
    /// Only components of 0.2.0 and later export `on-job`.
    Job(Job),
}

/// What an entry point returned.
pub(crate) enum Returned {
    Description(Description),
    Response(Response),
    Hook(Result<(), String>),
}

/// The pre-linked component, typed by its WIT version.
pub(crate) enum WorldPre {
    V0_1(v0_1::PluginPre<State>),
    V0_2(v0_2::PluginPre<State>),
}

impl WorldPre {
    pub fn new(version: WitVersion, pre: InstancePre<State>) -> wasmtime::Result<Self> {
        Ok(match version {
            WitVersion::V0_1 => WorldPre::V0_1(v0_1::PluginPre::new(pre)?),
            WitVersion::V0_2 => WorldPre::V0_2(v0_2::PluginPre::new(pre)?),
        })
    }

    /// Instantiates the component in `store`.
    pub async fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<WorldInstance> {
        Ok(match self {
            WorldPre::V0_1(pre) => WorldInstance::V0_1(pre.instantiate_async(store).await?),
            WorldPre::V0_2(pre) => WorldInstance::V0_2(pre.instantiate_async(store).await?),
        })
    }
}

/// An instance, typed by its WIT version.
pub(crate) enum WorldInstance {
    V0_1(v0_1::Plugin),
    V0_2(v0_2::Plugin),
}

/// The calls every version's `handler` export has in common.
macro_rules! common_calls {
    ($handler:expr, $store:expr, $call:expr) => {{
        let handler = $handler;
        Ok(match $call {
            Call::Describe => Returned::Description(handler.call_describe($store).await?.into()),
            Call::Handle(req) => {
                Returned::Response(handler.call_handle($store, &req.into()).await?.into())
            }
            Call::Tick(tick) => Returned::Hook(handler.call_on_tick($store, &tick.into()).await?),
            Call::Event(event) => {
                Returned::Hook(handler.call_on_event($store, &event.into()).await?)
            }
            Call::Job(_) => unreachable!("jobs are matched first"),
        })
    }};
}

impl WorldInstance {
    /// Makes one call of the `handler` export.
    pub async fn call(&self, store: &mut Store<State>, call: Call) -> wasmtime::Result<Returned> {
        match (self, call) {
            (WorldInstance::V0_1(_), Call::Job(_)) => Ok(Returned::Hook(Err(
                "the plugin speaks plateau:plugin@0.1.0, which has no jobs".to_owned(),
            ))),
            (WorldInstance::V0_2(plugin), Call::Job(job)) => Ok(Returned::Hook(
                plugin
                    .plateau_plugin_handler()
                    .call_on_job(store, &job.into())
                    .await?,
            )),
            (WorldInstance::V0_1(plugin), call) => {
                common_calls!(plugin.plateau_plugin_handler(), &mut *store, call)
            }
            (WorldInstance::V0_2(plugin), call) => {
                common_calls!(plugin.plateau_plugin_handler(), &mut *store, call)
            }
        }
    }
}

/// The conversions between the runtime's types and one version's bindings;
/// the shapes they share are the same in every version so far.
macro_rules! conversions {
    ($version:ident) => {
        use super::*;
        use crate::bindings::$version::plateau::plugin::types as wit;

        impl From<Caller> for wit::Caller {
            fn from(c: Caller) -> Self {
                wit::Caller {
                    organization_id: c.organization_id,
                    project_id: c.project_id,
                    scopes: c.scopes,
                    actor: c.actor,
                    plan: c.plan,
                }
            }
        }

        impl From<Request> for wit::Request {
            fn from(r: Request) -> Self {
                wit::Request {
                    method: r.method,
                    path: r.path,
                    route: r.route,
                    query: r.query,
                    headers: r.headers,
                    body: r.body,
                    caller: r.caller.into(),
                }
            }
        }

        impl From<wit::Response> for Response {
            fn from(r: wit::Response) -> Self {
                Response {
                    status: r.status,
                    headers: r.headers,
                    body: r.body,
                }
            }
        }

        impl From<Tick> for wit::Tick {
            fn from(t: Tick) -> Self {
                wit::Tick {
                    schedule: t.schedule,
                    at: t.at,
                }
            }
        }

        impl From<Event> for wit::Event {
            fn from(e: Event) -> Self {
                wit::Event {
                    id: e.id,
                    organization_id: e.organization_id,
                    type_: e.event_type,
                    resource_type: e.resource_type,
                    resource_id: e.resource_id,
                    data: e.data,
                    at: e.at,
                }
            }
        }

        impl From<wit::Description> for Description {
            fn from(d: wit::Description) -> Self {
                Description {
                    name: d.name,
                    version: d.version,
                    prefixes: d.prefixes,
                    routes: d
                        .routes
                        .into_iter()
                        .map(|r| Route {
                            method: r.method,
                            path: r.path,
                            access: match r.access {
                                wit::Access::Public => Access::Public,
                                wit::Access::Authenticated => Access::Authenticated,
                                wit::Access::Scope(s) => Access::Scope(s),
                            },
                            summary: r.summary,
                        })
                        .collect(),
                    scopes: d
                        .scopes
                        .into_iter()
                        .map(|s| ScopeInfo {
                            name: s.name,
                            description: s.description,
                        })
                        .collect(),
                    capabilities: d.capabilities,
                    subscriptions: d.subscriptions,
                    schedules: d
                        .schedules
                        .into_iter()
                        .map(|s| Schedule {
                            name: s.name,
                            every_seconds: s.every_seconds,
                        })
                        .collect(),
                }
            }
        }
    };
}

mod convert_v0_1 {
    conversions!(v0_1);
}

mod convert_v0_2 {
    conversions!(v0_2);

    impl From<crate::types::Job> for wit::Job {
        fn from(j: crate::types::Job) -> Self {
            wit::Job {
                key: j.key,
                organization_id: j.organization_id,
                payload: j.payload,
                due: j.due,
                attempt: j.attempt,
            }
        }
    }
}
