//! What the edge runs on an app's requests before the app, as the agent
//! builds it from the database: the firewall (the app's and its
//! organisation's enabled rules, [`crate::waf`]) first, then the bot
//! policy in force ([`crate::bots`]), then the app's edge-filter
//! components in the order the organisation listed them, each
//! failing open or closed as it chose.
//!
//! Components are loaded into this agent's plugin runtime (engine, cache
//! and pooled instances of API plugins) once per filter and kept. A chain
//! is rebuilt only when what it is made of changes (filters, fail modes,
//! rules and their update times), fully loaded before it replaces the old
//! one in one atomic swap: requests under way finish on the chain they
//! started with, and none fails because of the swap.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plateau_contract::edge::{FailMode, HeaderChanges, RequestHead, ResponseHead, Verdict};
use plateau_edge::filters::{FailureKind, FilterError, FilterFuture};
use plateau_edge::{Chain, Edge, Enabled, Filter};
use plateau_plugin_runtime::{EdgeFilter, ExecError, PluginLimits, PluginRuntime};
use plateau_store::Db;
use plateau_store::apps::App;
use plateau_store::apps::filters::{self as db, AppFilter};
use plateau_store::waf;

use crate::bots::verify::Verifier;
use crate::bots::{BotPolicy, BotState, Bots};
use crate::waf::{EventSink, Waf};

/// The id the firewall's counters go under in an app's chain (the edge
/// filters' are theirs).
pub const FIREWALL: &str = "firewall";
/// The id the bot policy's counters go under.
pub const BOTS: &str = "bots";

/// The limits of one call of an edge filter: a request waits for it, so
/// far tighter than an API plugin's.
pub fn filter_limits() -> PluginLimits {
    PluginLimits {
        memory_bytes: 16 << 20,
        deadline: Duration::from_millis(200),
        fuel: 200_000_000,
        ..PluginLimits::default()
    }
}

/// The agent's edge filters: loaded components and the chains applied.
pub struct EdgeFilters {
    db: Db,
    runtime: Option<Arc<PluginRuntime>>,
    events: EventSink,
    key: [u8; 32],
    /// The bot policies' verification cache and rate tables.
    bots: BotState,
    /// Loaded components by filter id.
    loaded: Mutex<HashMap<String, Arc<EdgeFilter>>>,
    /// What each app's chain was built from.
    applied: Mutex<HashMap<String, String>>,
}

impl EdgeFilters {
    /// Filters loading into `runtime` (none: a component cannot run here
    /// and fails as its mode says), firewall events written to `db`,
    /// challenge cookies signed with `key`, crawlers verified through
    /// the DNS `servers` (none: the system's).
    pub fn new(
        db: Db,
        runtime: Option<Arc<PluginRuntime>>,
        key: [u8; 32],
        servers: Option<Vec<std::net::SocketAddr>>,
    ) -> EdgeFilters {
        EdgeFilters {
            events: EventSink::start(db.clone()),
            db,
            runtime,
            key,
            bots: BotState::new(Verifier::new(servers)),
            loaded: Mutex::new(HashMap::new()),
            applied: Mutex::new(HashMap::new()),
        }
    }

    /// Brings `app`'s chain on `edge` in step with the database.
    pub async fn sync(&self, app: &App, edge: &Edge) -> plateau_store::Result<()> {
        let filters = db::of_app(&self.db, &app.id).await?;
        let rules: Vec<waf::RuleRow> = waf::list(&self.db, &app.org_id, Some(&app.id))
            .await?
            .into_iter()
            .filter(|r| r.enabled == 1)
            .collect();
        let managed = match waf::managed(&self.db, &app.org_id).await? {
            Some((true, action, at)) => crate::waf::WafAction::parse(&action).map(|a| (a, at)),
            _ => None,
        };
        let bots = match plateau_store::bots::in_force(&self.db, &app.org_id, &app.id).await? {
            Some(row) => match serde_json::from_str::<BotPolicy>(&row.policy) {
                Ok(policy) if policy.enabled => Some((policy, row)),
                Ok(_) => None,
                Err(e) => {
                    tracing::warn!(app = %app.id, error = %e, "bots: a stored policy does not read");
                    None
                }
            },
            None => None,
        };
        let mut made_of: Vec<String> = filters
            .iter()
            .map(|f| format!("{}:{}", f.filter_id, f.fail_mode))
            .collect();
        made_of.extend(rules.iter().map(|r| format!("{}@{}", r.id, r.updated_at)));
        if let Some((action, at)) = managed {
            made_of.push(format!("managed:{}@{at}", action.as_str()));
        }
        if let Some((_, row)) = &bots {
            made_of.push(format!("bots:{}@{}", row.app_id, row.updated_at));
        }
        let made_of = made_of.join(",");
        let unchanged = {
            let applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
            applied.get(&app.id) == Some(&made_of)
        };
        // A name the edge dropped (trash, restore) has lost its chain.
        if unchanged && (made_of.is_empty() || edge.filters(&app.slug).is_some()) {
            return Ok(());
        }
        let mut chain = Chain {
            app_id: app.id.clone(),
            filters: Vec::new(),
        };
        let firewall = Waf::new(
            &app.org_id,
            &app.id,
            &rules,
            managed.map(|(action, _)| action),
            self.events.clone(),
            self.key,
        );
        if !firewall.is_empty() {
            chain
                .filters
                .push(Enabled::new(Arc::new(firewall), FailMode::Open).with_id(FIREWALL));
        }
        if let Some((policy, _)) = bots {
            let bots = Bots::new(
                (&app.org_id, &app.id),
                policy,
                &self.bots,
                self.events.clone(),
                self.key,
            );
            chain
                .filters
                .push(Enabled::new(Arc::new(bots), FailMode::Open).with_id(BOTS));
        }
        let mut all_loaded = true;
        for f in &filters {
            let fail = match f.fail_mode.as_str() {
                "closed" => FailMode::Closed,
                _ => FailMode::Open,
            };
            let (component, loaded) = self.component(f).await;
            all_loaded &= loaded;
            chain
                .filters
                .push(Enabled::new(component, fail).with_id(&f.filter_id));
        }
        tracing::info!(app = %app.id, filters = chain.filters.len(), "edge filters applied");
        edge.set_filters(&app.slug, Some(Arc::new(chain)));
        // A component that did not load is tried again on the next round.
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        if all_loaded {
            applied.insert(app.id.clone(), made_of);
        } else {
            applied.remove(&app.id);
        }
        Ok(())
    }

    /// The filter's loaded component (and true), or one that fails every
    /// call saying why it did not load.
    async fn component(&self, f: &AppFilter) -> (Arc<dyn Filter>, bool) {
        let name = format!("{}@{}", f.name, f.version);
        let cached = {
            let loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
            loaded.get(&f.filter_id).cloned()
        };
        if let Some(filter) = cached {
            return (Arc::new(Component { name, filter }), true);
        }
        let reason = match self.load(&f.filter_id).await {
            Ok(filter) => {
                let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
                loaded.insert(f.filter_id.clone(), filter.clone());
                return (Arc::new(Component { name, filter }), true);
            }
            Err(reason) => reason,
        };
        tracing::warn!(filter = %name, %reason, "edge filter: not loaded");
        (Arc::new(Unloaded { name, reason }), false)
    }

    async fn load(&self, filter_id: &str) -> Result<Arc<EdgeFilter>, String> {
        let Some(runtime) = &self.runtime else {
            return Err("this host runs no edge filters".to_owned());
        };
        let wasm = db::wasm(&self.db, filter_id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "its component is gone".to_owned())?;
        runtime
            .load_edge_filter(&wasm, filter_limits())
            .await
            .map_err(|e| e.to_string())
    }
}

/// A loaded component, as the edge calls it.
struct Component {
    name: String,
    filter: Arc<EdgeFilter>,
}

impl Filter for Component {
    fn name(&self) -> &str {
        &self.name
    }

    fn on_request(&self, head: RequestHead) -> FilterFuture<'_, Verdict> {
        Box::pin(async move { self.filter.on_request(head).await.map_err(failure) })
    }

    fn response_phase(&self) -> bool {
        self.filter.info().response_phase
    }

    fn on_response(
        &self,
        request: RequestHead,
        response: ResponseHead,
    ) -> FilterFuture<'_, HeaderChanges> {
        Box::pin(async move {
            self.filter
                .on_response(request, response)
                .await
                .map_err(failure)
        })
    }
}

/// A failed call as the edge counts it: a trap, its deadline or fuel
/// (a timeout), or anything else.
fn failure(e: ExecError) -> FilterError {
    let kind = match e {
        ExecError::Trap { .. } => FailureKind::Trap,
        ExecError::DeadlineExceeded { .. } | ExecError::FuelExhausted { .. } => {
            FailureKind::Timeout
        }
        _ => FailureKind::Other,
    };
    FilterError {
        kind,
        reason: e.to_string(),
    }
}

/// A filter that did not load here: every call fails (open or closed as
/// configured), saying why.
struct Unloaded {
    name: String,
    reason: String,
}

impl Filter for Unloaded {
    fn name(&self) -> &str {
        &self.name
    }

    fn on_request(&self, _: RequestHead) -> FilterFuture<'_, Verdict> {
        let reason = format!("not loaded: {}", self.reason);
        Box::pin(async move { Err(FilterError::from(reason)) })
    }

    fn response_phase(&self) -> bool {
        false
    }

    fn on_response(&self, _: RequestHead, _: ResponseHead) -> FilterFuture<'_, HeaderChanges> {
        Box::pin(async { Ok(HeaderChanges::default()) })
    }
}
