//! `plateau agent`: this host's data plane. It runs what must keep going
//! while the API process (`plateau serve`) is down or restarting: the
//! supervisors of this host's caches and databases (adoption after a
//! restart, restarts of dead processes, failover), the sweep of expired
//! cache snapshots, the databases' backups (WAL shipping, scheduled and
//! asked-for base backups, retention), the usage sampler
//! ([`crate::usage`], apps' usage included), apps' volumes, and the apps data plane (the edge, the apps' replicas
//! and their supervision: [`crate::apps::plane`]). `plateau serve` starts
//! it, adopts it, and leaves it running when it exits
//! ([`crate::dataplane`]).
//!
//! It takes the same flags and `PLATEAU_*` settings as `plateau serve`,
//! and uses those that concern it. It holds `<data dir>/agent/agent.lock`
//! while it lives, so one agent runs per data directory.

use std::sync::Arc;

use anyhow::Context;
use plateau_seal::Sealer;

use crate::serve::ServeArgs;
use crate::{caches, databases, dataplane, host, logging, plugins};

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    logging::init(args.log_format);
    let data_dir = args.store.data_dir.clone();
    let _held = dataplane::take_lock(&data_dir)
        .await
        .context("taking the agent's lock")?;
    let db = args.store.open().await?;
    let secret_key = plugins::secret_key(&args.plugins_setup(), &db).await?;
    let sealer = Arc::new(Sealer::new(&secret_key));
    let host_id = host::identity(&data_dir, &db).await?;
    let caches = caches::start(
        &args.caches,
        &data_dir,
        &db,
        sealer.clone(),
        &host_id,
        &args.haproxy,
    )?;
    let databases = databases::start(
        &args.databases,
        &data_dir,
        &db,
        sealer,
        &host_id,
        &args.haproxy,
        &args.egress_allow,
    )?;
    let sweeper = plateau_cache::snapshots::spawn_sweeper(
        db.clone(),
        caches.snapshots().clone(),
        std::time::Duration::from_secs(60),
    );
    let backups = databases.clone().spawn_backups();
    let timeouts = args.listen_timeouts.timeouts();
    let allow = plateau_egress::parse_allow_list(&args.egress_allow)
        .map_err(|e| anyhow::anyhow!("PLATEAU_EGRESS_ALLOW: {e}"))?;
    let egress = plateau_runner::container::Egress::from_host(allow);
    let fetch = crate::apps::HostFetch::new(&db, args.registry_url.as_deref()).await?;
    let apps = crate::apps::plane(
        &args.apps,
        egress,
        Arc::new(fetch),
        &db,
        secret_key,
        &data_dir,
        &host_id,
        timeouts,
    )
    .await?;
    let meter = plateau_apps::metering::AppMeter::new(apps.plane().clone());
    let sampler = crate::usage::spawn_sampler(
        &args.usage,
        db.clone(),
        data_dir.clone(),
        host_id.clone(),
        Some(meter),
    );
    let volumes = crate::apps::volumes(&args.apps, &db, &data_dir, &host_id)?;
    volumes.with_plane(apps.plane().clone());
    apps.plane().set_volumes(volumes.clone());
    let volume_sweep = tokio::spawn(volumes.clone().keep_sweeping());
    let supervisor = plateau_kernel::Supervisor::new(plateau_kernel::supervisor::POLL)
        .with(caches)
        .with(databases)
        .with(Arc::new(volumes))
        .spawn();
    dataplane::announce_ready(&data_dir)?;
    tracing::info!(host = %host_id, pid = std::process::id(), "the agent is supervising this host's resources");
    crate::serve::shutdown_signal().await;
    supervisor.abort();
    sweeper.abort();
    volume_sweep.abort();
    backups.abort();
    sampler.abort();
    apps.stop().await;
    db.close().await;
    tracing::info!("the agent stopped; what it supervised keeps running");
    Ok(())
}
