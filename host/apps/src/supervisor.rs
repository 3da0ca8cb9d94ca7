//! The data plane of apps on this host ([`Plane`], run by `plateau
//! agent`): what runs here and what the edge routes to it, brought in step
//! with the database every second and whenever the API asks (over
//! [`crate::control`]). It launches the deployments the API handed over
//! ([`crate::launch`]), brings live apps up after its own start, scales,
//! relaunches under new limits, pauses and takes down, and records what
//! it observed (`starting`/`resuming` become `running`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plateau_core::time;
use plateau_edge::{Edge, Target};
use plateau_runner::{Replicas, Runner};
use plateau_seal::Sealer;
use plateau_store::Db;
use plateau_store::apps::deployments::{self, Deployment};
use plateau_store::apps::{self, App};

use crate::domains::sync::DomainSync;
use crate::launch::Launched;
use crate::logs::LogBuffer;
use crate::{AppStatus, Containers};

/// What this host serves for one app.
#[derive(Clone)]
pub struct Local {
    pub slug: String,
    pub deployment_id: String,
    pub memory_mb: i64,
    pub milli_cpu: i64,
    pub replicas: i64,
    pub handle: Arc<dyn Replicas>,
    /// Ids of the volumes its replicas mount.
    pub volumes: Vec<String>,
}

const SUPERVISE_EVERY: Duration = Duration::from_secs(1);

/// The apps data plane of this host; cheap to clone.
#[derive(Clone)]
pub struct Plane {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    sealer: Arc<Sealer>,
    logs: Arc<LogBuffer>,
    wasm: Arc<dyn Runner>,
    /// Runs Linux images, when this host can (runc installed).
    containers: Option<Containers>,
    edge: Arc<Edge>,
    /// What this host runs, by app id.
    local: Mutex<HashMap<String, Local>>,
    /// One lock per app: its launches and its supervision take turns.
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Apps a task is bringing in step now.
    busy: Mutex<HashSet<String>>,
    /// Live deployments that failed to start here: when and why.
    failures: crate::failures::Failures,
    /// The edge's custom domains.
    domains: DomainSync,
    /// The purges of the apps' CDN this plane applied.
    cdn: crate::cdn::CdnFollow,
    /// The firewall and edge filters of the apps.
    filters: Option<Arc<crate::filters::EdgeFilters>>,
    /// This host as a runner, and the apps its edge forwards.
    placement: crate::placement::PlacementState,
    /// The volumes of this host's apps, in the agent (their moves).
    volumes: std::sync::OnceLock<crate::Volumes>,
}

impl Plane {
    /// The plane of a host whose database is `db`, opening variables with
    /// `sealer` and keeping `log_retention` log lines per app.
    pub fn new(
        db: Db,
        sealer: Arc<Sealer>,
        log_retention: i64,
        wasm: Arc<dyn Runner>,
        containers: Option<Containers>,
        edge: Arc<Edge>,
    ) -> Plane {
        let logs = Arc::new(LogBuffer::new(db.clone(), log_retention));
        let domains = DomainSync::new(db.clone(), sealer.clone(), edge.clone());
        Plane {
            inner: Arc::new(Inner {
                db,
                sealer,
                logs,
                locks: Mutex::new(HashMap::new()),
                wasm,
                containers,
                edge,
                local: Mutex::new(HashMap::new()),
                busy: Mutex::new(HashSet::new()),
                failures: Default::default(),
                domains,
                cdn: crate::cdn::CdnFollow::default(),
                filters: None,
                placement: Default::default(),
                volumes: std::sync::OnceLock::new(),
            }),
        }
    }

    /// This plane running the apps' firewall rules and edge filters.
    pub fn with_filters(mut self, filters: crate::filters::EdgeFilters) -> Plane {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.filters = Some(Arc::new(filters));
        }
        self
    }

    /// This plane as runner `runner` among several hosts: it runs the
    /// apps placed on it and forwards the others ([`crate::placement`]).
    pub fn with_runner(mut self, runner: crate::placement::RunnerConfig) -> Plane {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.placement.runner = Some(runner);
        }
        self
    }

    /// In the agent: the volumes this plane moves with their apps.
    pub fn set_volumes(&self, volumes: crate::Volumes) {
        let _ = self.inner.volumes.set(volumes);
    }

    pub(crate) fn volumes(&self) -> Option<&crate::Volumes> {
        self.inner.volumes.get()
    }

    pub(crate) fn placement(&self) -> &crate::placement::PlacementState {
        &self.inner.placement
    }

    pub(crate) fn db(&self) -> &Db {
        &self.inner.db
    }

    pub(crate) fn sealer(&self) -> &Sealer {
        &self.inner.sealer
    }

    pub(crate) fn logs(&self) -> &Arc<LogBuffer> {
        &self.inner.logs
    }

    /// Writes buffered log lines (at shutdown).
    pub async fn flush_logs(&self) {
        self.inner.logs.flush().await;
    }

    fn lock_for(&self, app_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.inner.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(app_id.to_owned()).or_default().clone()
    }

    /// The edge's custom domains, as this plane follows them.
    pub fn domains(&self) -> &DomainSync {
        &self.inner.domains
    }

    pub fn edge(&self) -> &Arc<Edge> {
        &self.inner.edge
    }

    pub(crate) fn wasm(&self) -> &Arc<dyn Runner> {
        &self.inner.wasm
    }

    pub(crate) fn containers(&self) -> Option<&Containers> {
        self.inner.containers.as_ref()
    }

    /// Routes every app of the database before the edge serves: a live
    /// app (or a first deployment on its way) loads, a paused one answers
    /// paused, one never deployed answers so; none answers 404.
    pub async fn prime(&self) -> plateau_store::Result<()> {
        for app in apps::active(self.db()).await? {
            let target = if AppStatus::Paused.is(&app.status) {
                Target::Paused
            } else if app.live_deployment_id.is_some() || AppStatus::Deploying.is(&app.status) {
                Target::Loading
            } else {
                Target::Undeployed
            };
            self.inner.edge.set(&app.slug, target);
        }
        Ok(())
    }

    /// Starts the background work: log flushing and the supervision loop.
    pub fn start(&self) -> Vec<tokio::task::JoinHandle<()>> {
        let logs = self.inner.logs.clone();
        let mut tasks = vec![
            tokio::spawn(logs.keep_flushing()),
            tokio::spawn(self.clone().supervise()),
            tokio::spawn(self.inner.domains.clone().keep_following()),
        ];
        if let Some(runner) = &self.inner.placement.runner {
            let heartbeat = crate::placement::keep_heartbeat(self.db().clone(), runner.clone());
            tasks.push(tokio::spawn(heartbeat));
        }
        tasks
    }

    async fn supervise(self) {
        loop {
            if let Err(e) = self.reconcile().await {
                tracing::warn!(error = %e, "apps: following the database");
            }
            tokio::time::sleep(SUPERVISE_EVERY).await;
        }
    }

    /// Brings this host's replicas and edge in step with the database:
    /// each app in a task of its own, so a slow launch delays no other.
    pub async fn reconcile(&self) -> plateau_store::Result<()> {
        let active = apps::active(self.db()).await?;
        let seen: HashSet<String> = active.iter().map(|a| a.id.clone()).collect();
        for app in active {
            let fresh = self
                .inner
                .busy
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(app.id.clone());
            if fresh {
                let plane = self.clone();
                tokio::spawn(async move {
                    if let Err(e) = plane.follow_now(&app.id).await {
                        tracing::warn!(app = %app.id, error = %e, "apps: following the database");
                    }
                    let mut busy = plane.inner.busy.lock().unwrap_or_else(|e| e.into_inner());
                    busy.remove(&app.id);
                });
            }
        }
        let gone: Vec<(String, String)> = {
            let local = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
            local
                .iter()
                .filter(|(id, _)| !seen.contains(*id))
                .map(|(id, l)| (id.clone(), l.slug.clone()))
                .collect()
        };
        for (id, slug) in gone {
            self.take_down(&id, &slug, false);
        }
        self.drop_forwarded_except(&seen);
        Ok(())
    }

    /// Brings one app in step with the database now, under its lock: the
    /// oldest deployment the API handed over is launched, else the live
    /// one followed.
    pub async fn follow_now(&self, app_id: &str) -> plateau_store::Result<()> {
        let lock = self.lock_for(app_id);
        let _turn = lock.lock().await;
        let db = self.db();
        let Some(app) = apps::get_any(db, app_id).await? else {
            return Ok(());
        };
        let working = deployments::working(db, app_id).await?;
        if app.deleted_at.is_some() || AppStatus::Paused.is(&app.status) {
            return self.follow(&app, working.first(), false).await;
        }
        let arriving = match self.role(&app).await? {
            crate::placement::Role::Forward(to) => {
                self.sync_edge(&app).await?;
                self.forward(&app, to);
                return Ok(());
            }
            crate::placement::Role::Depart(placed) => return self.depart(&app, &placed).await,
            crate::placement::Role::Run { arriving } => arriving,
        };
        if arriving {
            // A migration asked after a failure here tries again at once.
            if let Some(p) = plateau_store::runners::placement(db, app_id).await?
                && let Some(started) = p.migration_started_at
            {
                self.inner.failures.forget_before(app_id, started);
            }
            match self.arrival(&app).await? {
                crate::volumes::moving::Arrival::Here => {}
                crate::volumes::moving::Arrival::Waiting => return Ok(()),
                crate::volumes::moving::Arrival::Failed(why) => {
                    tracing::warn!(app = %app.id, %why, "apps: a volume of an app migrating here was not made");
                    drop(self.take_local(&app.id));
                    let me = self.placement().runner.as_ref().map(|r| r.id.clone());
                    return self
                        .end_failed(&app, &me.unwrap_or_default(), "volume_failed")
                        .await;
                }
            }
        }
        if let Some(d) = working.first()
            && d.component.is_some()
        {
            return self.launch_new(d).await;
        }
        self.follow(&app, working.first(), arriving).await?;
        if arriving {
            self.arrive(&app).await?;
        }
        Ok(())
    }

    /// Brings the edge's rules, CDN, analytics switch and filters of `app`
    /// in step.
    async fn sync_edge(&self, app: &App) -> plateau_store::Result<()> {
        let rules = crate::rules::effective(self.db(), &app.id).await?;
        self.inner.edge.set_rules(&app.slug, rules);
        self.inner
            .cdn
            .follow(self.db(), &self.inner.edge, app)
            .await?;
        crate::analytics::sync(self.db(), &self.inner.edge, app).await?;
        if let Some(filters) = &self.inner.filters {
            filters.sync(app, &self.inner.edge).await?;
        }
        Ok(())
    }

    /// Makes this host serve `app` as the database says; `working` is its
    /// oldest deployment on its way; `arriving` while a migration brings
    /// it here (its status stays). The caller holds the app's lock.
    async fn follow(
        &self,
        app: &App,
        working: Option<&Deployment>,
        arriving: bool,
    ) -> plateau_store::Result<()> {
        if app.deleted_at.is_some() {
            self.take_down(&app.id, &app.slug, false);
            return Ok(());
        }
        self.sync_edge(app).await?;
        if AppStatus::Paused.is(&app.status) {
            if self.running(&app.id).is_some()
                || !matches!(self.inner.edge.get(&app.slug), Some(Target::Paused))
            {
                self.take_down(&app.id, &app.slug, true);
            }
            return Ok(());
        }
        let Some(live) = &app.live_deployment_id else {
            // Not deployed yet: loading while a first deployment is on its way.
            match (working.is_some(), self.inner.edge.get(&app.slug)) {
                (true, Some(Target::Loading)) | (false, Some(Target::Undeployed)) => {}
                (true, _) => self.inner.edge.set(&app.slug, Target::Loading),
                (false, _) => self.inner.edge.set(&app.slug, Target::Undeployed),
            }
            return Ok(());
        };
        if app.replicas == 0 {
            // Scaled to zero by autoscale: the edge wakes it.
            self.sleep(app);
            return Ok(());
        }
        if let Some(local) = self.running(&app.id)
            && &local.deployment_id == live
            && local.memory_mb == app.memory_mb
            && local.milli_cpu == app.milli_cpu
            && self.same_volumes(&app.id, &local.volumes).await
        {
            if local.replicas != app.replicas {
                local.handle.set_replicas(app.replicas.max(1) as u32);
                let mut all = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(l) = all.get_mut(&app.id) {
                    l.replicas = app.replicas;
                }
            }
            return self.observe_running(app).await;
        }
        if self.recently_failed(&app.id, live) {
            return Ok(());
        }
        let Some(d) = deployments::get(self.db(), &app.id, live).await? else {
            return Ok(());
        };
        if self.running(&app.id).is_none() && !arriving {
            // Nothing serves it here: it starts (requests wait for it).
            self.mark_loading(&app.slug);
            let now = time::now_ms();
            let (from, to) = (AppStatus::Running.as_str(), AppStatus::Starting.as_str());
            apps::observed(self.db(), &app.id, from, to, now).await?;
        }
        match self.launch_healthy(app, &d).await {
            Ok(launched) => {
                self.forget_failure(&app.id);
                self.install(app, live, launched);
                self.observe_running(app).await?;
            }
            Err(reason) => {
                tracing::warn!(app = %app.id, deployment = %live, %reason, "apps: the live deployment does not start on this host");
                if self.inner.failures.note(&app.id, live, &reason) && !arriving {
                    self.record_start_failure(app, live, &reason).await?;
                }
            }
        }
        Ok(())
    }

    /// Records that the app's live deployment serves here: `starting` or
    /// `resuming` becomes `running`.
    async fn observe_running(&self, app: &App) -> plateau_store::Result<()> {
        let now = time::now_ms();
        for from in [AppStatus::Starting, AppStatus::Resuming] {
            let running = AppStatus::Running.as_str();
            apps::observed(self.db(), &app.id, from.as_str(), running, now).await?;
        }
        Ok(())
    }

    /// Routes `slug` to nothing yet: requests wait for its replicas.
    pub(crate) fn mark_loading(&self, slug: &str) {
        if !matches!(self.inner.edge.get(slug), Some(Target::Serving(_))) {
            self.inner.edge.set(slug, Target::Loading);
        }
    }

    /// Sends the app's traffic to `handle`, atomically; the replicas it
    /// replaces drain with the requests they hold.
    pub(crate) fn install(&self, app: &App, deployment_id: &str, launched: Launched) {
        let Launched { handle, volumes } = launched;
        self.stop_forwarding(&app.id);
        self.inner
            .edge
            .set(&app.slug, Target::Serving(handle.clone()));
        let mut local = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
        local.insert(
            app.id.clone(),
            Local {
                slug: app.slug.clone(),
                deployment_id: deployment_id.to_owned(),
                memory_mb: app.memory_mb,
                milli_cpu: app.milli_cpu,
                replicas: app.replicas,
                handle,
                volumes,
            },
        );
    }

    /// Tears the app's replicas down; a paused app's name answers 503,
    /// a trashed app's name nothing.
    fn take_down(&self, app_id: &str, slug: &str, paused: bool) {
        self.stop_forwarding(app_id);
        if paused {
            self.inner.edge.set(slug, Target::Paused);
        } else {
            self.inner.edge.remove(slug);
        }
        let old = self
            .inner
            .local
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(app_id);
        if let Some(old) = old {
            old.handle.stop();
        }
    }

    /// Stops counting the app's replicas as this host's; the caller
    /// stops them.
    pub(crate) fn take_local(&self, app_id: &str) -> Option<Local> {
        let mut local = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
        local.remove(app_id)
    }

    /// The replicas this host runs for an app, if any.
    pub fn running(&self, app_id: &str) -> Option<Local> {
        let local = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
        local.get(app_id).cloned()
    }

    /// Whether the replicas running here mount `volumes` and no other
    /// of the app's volumes is ready: a volume attached (placed and
    /// mounted) or detached (being deleted) relaunches them. While a
    /// placed volume is not mounted yet, the replicas stay as they are.
    async fn same_volumes(&self, app_id: &str, volumes: &[String]) -> bool {
        match crate::volumes::mounted(self.db(), app_id).await {
            Ok(now) => now.iter().map(|(id, _)| id).eq(volumes.iter()),
            Err(_) => true,
        }
    }

    /// Whether replicas running here mount volume `id`.
    pub fn uses_volume(&self, id: &str) -> bool {
        let local = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
        local.values().any(|l| l.volumes.iter().any(|v| v == id))
    }

    pub(crate) fn recently_failed(&self, app_id: &str, deployment_id: &str) -> bool {
        self.inner.failures.recent(app_id, deployment_id)
    }

    /// Why the app's live deployment last failed to start here.
    pub(crate) fn failure_reason(&self, app_id: &str) -> Option<String> {
        self.inner.failures.reason(app_id)
    }

    fn forget_failure(&self, app_id: &str) {
        self.inner.failures.forget(app_id);
    }
}
