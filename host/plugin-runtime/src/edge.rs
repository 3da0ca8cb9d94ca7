//! Edge filters: components of `plateau:edge-filter/edge@0.1.0`, which the
//! app edge calls on each request to an app before the app sees it (and on
//! the answer's head when the filter asks). They load from the engine,
//! cache and instance pool of API plugins and run the same way: a fresh
//! store per call under the filter's memory cap, fuel and deadline, dropped
//! afterwards. A filter imports nothing of Plateau's, only the locked-down
//! WASI every component links, so it is checked at load to import nothing
//! else.

use std::sync::Arc;
use std::time::Duration;

use plateau_contract::edge::{Action, Fact, HeaderChanges, RequestHead, ResponseHead, Verdict};
use sha2::{Digest, Sha256};

use crate::config::{PluginLimits, PluginSettings};
use crate::context::{Phase, PluginContext};
use crate::error::{Error, ExecError, Result};
use crate::exec::{classify, fresh_store};
use crate::load::{PluginRuntime, RuntimeInner};
use crate::state::State;

mod gen_ {
    wasmtime::component::bindgen!({
        path: "../../wit/deps/edge-filter",
        world: "edge",
        exports: { default: async },
    });
}

use gen_::exports::plateau::edge_filter::edge_filter as wit;

/// The versions of the edge-filter package this host links (a world of
/// its own, beside the plugin worlds of `SPLIT_PACKAGES`).
pub const EDGE_FILTER_PACKAGES: &[(&str, &[&str])] = &[("plateau:edge-filter", &["0.1.0"])];

/// Past the deadline the epoch interrupt should have fired; the
/// executor-level timeout is the backstop.
const BACKSTOP_GRACE: Duration = Duration::from_millis(250);

/// What a filter says about itself at load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterInfo {
    pub name: String,
    pub version: String,
    /// Whether the edge calls `on-response`.
    pub response_phase: bool,
}

/// One loaded edge filter, ready to run on requests.
pub struct EdgeFilter {
    runtime: Arc<RuntimeInner>,
    pre: gen_::EdgePre<State>,
    context: Arc<PluginContext>,
    info: FilterInfo,
    digest: String,
}

/// One call of the export.
enum Call {
    Describe,
    Request(RequestHead),
    Response(RequestHead, ResponseHead),
}

enum Returned {
    Info(FilterInfo),
    Verdict(Verdict),
    Changes(HeaderChanges),
}

impl PluginRuntime {
    /// Compiles (or finds in the cache) an edge filter, checks that it
    /// exports `plateau:edge-filter/edge-filter@0.1.0` and imports only
    /// WASI, then calls `describe` under `limits`.
    pub async fn load_edge_filter(
        &self,
        wasm: &[u8],
        limits: PluginLimits,
    ) -> Result<Arc<EdgeFilter>> {
        let rt = self.inner.clone();
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(wasm)));
        let file_key = digest.trim_start_matches("sha256:").to_string();
        let bytes = wasm.to_vec();
        let compiling = rt.clone();
        let (component, _) = tokio::task::spawn_blocking(move || {
            compiling.cache.load(&compiling.engine, &file_key, &bytes)
        })
        .await
        .map_err(|e| Error::Config(format!("the compile task failed: {e}")))??;
        for (name, _) in component.component_type().imports(&rt.engine) {
            if !name.starts_with("wasi:") {
                return Err(Error::NotAnEdgeFilter(format!(
                    "it imports `{name}`; an edge filter imports only WASI"
                )));
            }
        }
        let instance_pre = rt.linker.instantiate_pre(&component).map_err(Error::Link)?;
        let pre = gen_::EdgePre::new(instance_pre).map_err(|e| {
            Error::NotAnEdgeFilter(format!(
                "it does not export plateau:edge-filter/edge-filter@0.1.0 ({e})"
            ))
        })?;
        let context = Arc::new(PluginContext {
            name: format!("<edge filter {}>", &digest[..19]),
            settings: PluginSettings {
                limits,
                ..PluginSettings::default()
            },
            services: rt.services.clone(),
            egress: rt.egress.clone(),
            waits: rt.waits.clone(),
        });
        let Returned::Info(info) = run(&rt, &pre, context.clone(), Call::Describe)
            .await
            .map_err(|e| Error::Describe(Box::new(e)))?
        else {
            unreachable!("describe returns an info");
        };
        if info.name.is_empty() || semver::Version::parse(&info.version).is_err() {
            return Err(Error::InvalidDescription(vec![format!(
                "an edge filter names itself and a semver version, not {:?}@{:?}",
                info.name, info.version
            )]));
        }
        let context = Arc::new(PluginContext {
            name: info.name.clone(),
            settings: context.settings.clone(),
            services: rt.services.clone(),
            egress: rt.egress.clone(),
            waits: rt.waits.clone(),
        });
        Ok(Arc::new(EdgeFilter {
            runtime: rt,
            pre,
            context,
            info,
            digest,
        }))
    }
}

impl EdgeFilter {
    pub fn info(&self) -> &FilterInfo {
        &self.info
    }

    /// `sha256:<hex>` of the component.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The filter's verdict on a request, from a fresh instance.
    pub async fn on_request(&self, head: RequestHead) -> Result<Verdict, ExecError> {
        match run(
            &self.runtime,
            &self.pre,
            self.context.clone(),
            Call::Request(head),
        )
        .await?
        {
            Returned::Verdict(verdict) => Ok(verdict),
            _ => unreachable!("on-request returns a verdict"),
        }
    }

    /// The filter's changes to an answer's headers, from a fresh instance.
    pub async fn on_response(
        &self,
        request: RequestHead,
        response: ResponseHead,
    ) -> Result<HeaderChanges, ExecError> {
        let call = Call::Response(request, response);
        match run(&self.runtime, &self.pre, self.context.clone(), call).await? {
            Returned::Changes(changes) => Ok(changes),
            _ => unreachable!("on-response returns header changes"),
        }
    }
}

/// Runs one call in a fresh store, dropped afterwards.
async fn run(
    rt: &RuntimeInner,
    pre: &gen_::EdgePre<State>,
    context: Arc<PluginContext>,
    call: Call,
) -> Result<Returned, ExecError> {
    let _permit = rt
        .permits
        .acquire()
        .await
        .expect("the semaphore is never closed");
    let limits = context.settings.limits.clone();
    let plugin = context.name.clone();
    let mut store = fresh_store(rt, context, Phase::Request, None)?;
    let backstop = limits.deadline + BACKSTOP_GRACE;
    let result = tokio::time::timeout(backstop, async {
        let instance = pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| (true, e))?;
        let guest = instance.plateau_edge_filter_edge_filter();
        let returned = match call {
            Call::Describe => guest.call_describe(&mut store).await.map(|i| {
                Returned::Info(FilterInfo {
                    name: i.name,
                    version: i.version,
                    response_phase: i.response_phase,
                })
            }),
            Call::Request(head) => guest
                .call_on_request(&mut store, &to_wit(head))
                .await
                .map(|v| Returned::Verdict(from_wit(v))),
            Call::Response(head, response) => {
                let response = wit::ResponseHead {
                    status: response.status,
                    headers: response.headers,
                };
                guest
                    .call_on_response(&mut store, &to_wit(head), &response)
                    .await
                    .map(|c| Returned::Changes(changes(c)))
            }
        };
        returned.map_err(|e| (false, e))
    })
    .await;
    match result {
        Err(_elapsed) => Err(ExecError::DeadlineExceeded {
            plugin,
            deadline_ms: limits.deadline.as_millis() as u64,
        }),
        Ok(Err((instantiating, e))) => {
            Err(classify(&plugin, &limits, store.data(), instantiating, e))
        }
        Ok(Ok(returned)) => Ok(returned),
    }
}

fn to_wit(head: RequestHead) -> wit::RequestHead {
    wit::RequestHead {
        method: head.method,
        path: head.path,
        query: head.query,
        host: head.host,
        headers: head.headers,
        client_ip: head.client_ip,
        app_id: head.app_id,
    }
}

fn changes(c: wit::HeaderChanges) -> HeaderChanges {
    HeaderChanges {
        set: c.set,
        remove: c.remove,
    }
}

fn from_wit(v: wit::Verdict) -> Verdict {
    let action = match v.action {
        wit::Action::Pass => Action::Pass,
        wit::Action::Block(b) => Action::Block {
            status: b.status,
            content_type: b.content_type,
            body: b.body,
        },
        wit::Action::Redirect(r) => Action::Redirect {
            status: r.status,
            location: r.location,
        },
        wit::Action::Modify(c) => Action::Modify(changes(c)),
    };
    let facts = v
        .facts
        .into_iter()
        .map(|f| Fact {
            name: f.name,
            value: f.value,
        })
        .collect();
    Verdict { action, facts }
}
