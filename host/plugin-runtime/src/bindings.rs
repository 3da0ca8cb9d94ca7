//! The bindings of the `handler` export of every supported WIT version,
//! kept private, and the one place that knows which version a component's
//! handler speaks. The host's imports are not here: each capability keeps
//! its own bindings (`crate::capabilities`).
//!
//! `plateau:plugin@0.1.0` and `@0.2.0` (frozen in `wit/legacy`) each carry
//! their handler and its `types`; from 0.3.0 on, the handler is the package
//! `plateau:handler/handler`, whose shapes live inside it. Supporting a new
//! handler version means a module here, a [`WitVersion`] in `inspect`, a
//! variant of [`WorldPre`] and [`WorldInstance`], and its conversions. A new
//! version of an imported interface touches only its capability.

use wasmtime::Store;
use wasmtime::component::{HasData, InstancePre, Linker};

use crate::inspect::WitVersion;
use crate::state::State;
use crate::types::{
    Access, Caller, Description, Event, Job, Request, Response, Route, Schedule, ScopeInfo, Tick,
};

mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit/legacy/plugin@0.1.0",
        inline: "package plateau:runtime;
            world plugin { export plateau:plugin/handler@0.1.0; }",
        exports: { default: async },
    });
}

mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/legacy/plugin@0.2.0",
        inline: "package plateau:runtime;
            world plugin { export plateau:plugin/handler@0.2.0; }",
        exports: { default: async },
    });
}

mod v0_3 {
    wasmtime::component::bindgen!({
        path: "../../wit/deps/handler",
        inline: "package plateau:runtime;
            world plugin { export plateau:handler/handler@0.3.0; }",
        exports: { default: async },
    });
}

/// The `types` interface of 0.1.0 and 0.2.0 holds only types, so its host
/// side is empty.
struct NoState;

impl HasData for NoState {
    type Data<'a> = ();
}

impl v0_1::plateau::plugin::types::Host for () {}
impl v0_2::plateau::plugin::types::Host for () {}

/// Links every capability (`State::add_to_linker`) and the `types`
/// instances the handlers of 0.1.0 and 0.2.0 import.
pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    State::add_to_linker(linker)?;
    v0_1::plateau::plugin::types::add_to_linker::<State, NoState>(linker, |_| ())?;
    v0_2::plateau::plugin::types::add_to_linker::<State, NoState>(linker, |_| ())
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

/// The pre-linked component, typed by its handler's WIT version.
pub(crate) enum WorldPre {
    V0_1(v0_1::PluginPre<State>),
    V0_2(v0_2::PluginPre<State>),
    V0_3(v0_3::PluginPre<State>),
}

impl WorldPre {
    pub fn new(version: WitVersion, pre: InstancePre<State>) -> wasmtime::Result<Self> {
        Ok(match version {
            WitVersion::V0_1 => WorldPre::V0_1(v0_1::PluginPre::new(pre)?),
            WitVersion::V0_2 => WorldPre::V0_2(v0_2::PluginPre::new(pre)?),
            WitVersion::V0_3 => WorldPre::V0_3(v0_3::PluginPre::new(pre)?),
        })
    }

    /// Instantiates the component in `store`.
    pub async fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<WorldInstance> {
        Ok(match self {
            WorldPre::V0_1(pre) => WorldInstance::V0_1(pre.instantiate_async(store).await?),
            WorldPre::V0_2(pre) => WorldInstance::V0_2(pre.instantiate_async(store).await?),
            WorldPre::V0_3(pre) => WorldInstance::V0_3(pre.instantiate_async(store).await?),
        })
    }
}

/// An instance, typed by its handler's WIT version.
pub(crate) enum WorldInstance {
    V0_1(v0_1::Plugin),
    V0_2(v0_2::Plugin),
    V0_3(v0_3::Plugin),
}

/// The calls of a version's `handler` export; `on-job` only where it has one.
macro_rules! calls {
    (@job on_job, $handler:expr, $store:expr, $job:expr) => {
        Returned::Hook($handler.call_on_job($store, &$job.into()).await?)
    };
    (@job no_jobs, $handler:expr, $store:expr, $job:expr) => {{
        let _ = $job;
        Returned::Hook(Err(
            "the plugin speaks plateau:plugin@0.1.0, which has no jobs".to_owned(),
        ))
    }};
    ($handler:expr, $store:expr, $call:expr, $on_job:ident) => {{
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
            Call::Job(job) => calls!(@job $on_job, handler, $store, job),
        })
    }};
}

impl WorldInstance {
    /// Makes one call of the `handler` export.
    pub async fn call(&self, store: &mut Store<State>, call: Call) -> wasmtime::Result<Returned> {
        match self {
            WorldInstance::V0_1(plugin) => {
                calls!(plugin.plateau_plugin_handler(), &mut *store, call, no_jobs)
            }
            WorldInstance::V0_2(plugin) => {
                calls!(plugin.plateau_plugin_handler(), &mut *store, call, on_job)
            }
            WorldInstance::V0_3(plugin) => {
                calls!(plugin.plateau_handler_handler(), &mut *store, call, on_job)
            }
        }
    }
}

/// The conversions between the runtime's types and one version's bindings;
/// the shapes they share are the same in every version so far.
macro_rules! conversions {
    ($($types:ident)::+) => {
        use super::*;
        use crate::bindings::$($types)::+ as wit;

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
    conversions!(v0_1::plateau::plugin::types);
}

/// `job` exists from 0.2.0 on.
macro_rules! job_conversion {
    () => {
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
    };
}

mod convert_v0_2 {
    conversions!(v0_2::plateau::plugin::types);
    job_conversion!();
}

mod convert_v0_3 {
    conversions!(v0_3::exports::plateau::handler::handler);
    job_conversion!();
}
