//! The edge's HTTPS listener in `plateau agent`: bound at
//! `PLATEAU_EDGE_TLS_LISTEN`, serving custom domains with the certificates
//! the agent obtains and `<slug>.<apps domain>` with the operator's
//! wildcard certificate (`PLATEAU_EDGE_TLS_CERT` and
//! `PLATEAU_EDGE_TLS_KEY`), which is read again whenever either file
//! changes, so a renewed one serves without a restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use plateau_apps::Plane;
use plateau_edge::Edge;
use tokio::task::JoinHandle;

use crate::apps::AppsArgs;

/// How often the wildcard certificate's files are looked at.
const WATCH_EVERY: Duration = Duration::from_secs(5);

/// Binds and serves HTTPS when it is configured; the tasks to stop.
pub async fn start(
    args: &AppsArgs,
    plane: &Plane,
    timeouts: plateau_listen::Timeouts,
) -> anyhow::Result<Vec<JoinHandle<()>>> {
    let edge = plane.edge().clone();
    let mut tasks = Vec::new();
    match (&args.edge_tls_cert, &args.edge_tls_key) {
        (Some(cert), Some(key)) => {
            edge.set_wildcard(Some(wildcard(cert, key)?));
            tasks.push(tokio::spawn(watch(edge.clone(), cert.clone(), key.clone())));
        }
        (None, None) => {}
        _ => anyhow::bail!("set both PLATEAU_EDGE_TLS_CERT and PLATEAU_EDGE_TLS_KEY, or neither"),
    }
    let Some(listen) = args.edge_tls_listen else {
        return Ok(tasks);
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("PLATEAU_EDGE_TLS_LISTEN: listening on {listen}"))?;
    let addr = listener.local_addr()?;
    edge.set_https_port(addr.port());
    tasks.push(tokio::spawn(plateau_edge::serve_tls(
        listener, edge, timeouts,
    )));
    tracing::info!(edge = %addr, "apps: the edge serves HTTPS");
    Ok(tasks)
}

/// The wildcard certificate from the operator's two PEM files.
fn wildcard(cert: &Path, key: &Path) -> anyhow::Result<Arc<rustls::sign::CertifiedKey>> {
    let mut pem = std::fs::read(cert)
        .with_context(|| format!("PLATEAU_EDGE_TLS_CERT: reading {}", cert.display()))?;
    pem.push(b'\n');
    pem.extend(
        std::fs::read(key)
            .with_context(|| format!("PLATEAU_EDGE_TLS_KEY: reading {}", key.display()))?,
    );
    plateau_edge::tls::certified_key(&pem)
        .with_context(|| format!("the wildcard certificate {}", cert.display()))
}

fn modified(paths: [&Path; 2]) -> Vec<Option<SystemTime>> {
    paths
        .iter()
        .map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .collect()
}

/// Reloads the wildcard certificate when its files change; a broken
/// pair keeps the previous one serving.
async fn watch(edge: Arc<Edge>, cert: PathBuf, key: PathBuf) {
    let mut seen = modified([&cert, &key]);
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        let now = modified([&cert, &key]);
        if now == seen {
            continue;
        }
        match wildcard(&cert, &key) {
            Ok(loaded) => {
                edge.set_wildcard(Some(loaded));
                seen = now;
                tracing::info!("apps: the edge serves the renewed wildcard certificate");
            }
            Err(e) => tracing::warn!(error = %format!("{e:#}"), "apps: the wildcard certificate"),
        }
    }
}
