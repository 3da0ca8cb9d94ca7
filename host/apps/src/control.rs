//! How the API process reaches its host's apps data plane: a Unix socket
//! (`<data dir>/agent/apps.sock`, mode 0600) taking one JSON line per
//! connection and answering one. The database stays the desired state;
//! the socket only has the plane follow an app at once (so a pause or a
//! delete answers once the edge says so) and tells what runs.
//!
//! When the agent is not there (it is restarting), a follow is skipped:
//! the plane follows the database by itself within a second of its start.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::Apps;
use crate::supervisor::Plane;

/// How long the API waits for the plane to follow a change.
const FOLLOW_WITHIN: Duration = Duration::from_secs(10);
/// The longest request line the plane reads.
const MAX_LINE: usize = 4096;

#[derive(Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
enum Request {
    /// Bring the app in step with the database now.
    Follow { app: String },
    /// The SHA-256 of one variable of the app's running replicas.
    EnvDigest { app: String, key: String },
    /// Bring the edge's custom domains in step with the database now.
    Domains,
    /// What the edge's CDN did for the app.
    CdnStats { app: String },
    /// What the app's edge filters did.
    FilterStats { app: String },
}

/// What the plane runs for an app, as far as a variable goes.
#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EnvDigest {
    /// The deployment whose replicas answered.
    pub deployment_id: String,
    /// The SHA-256 of the variable's value in hex; none when unset.
    pub sha256: Option<String>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Reply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    env: Option<EnvDigest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cdn: Option<crate::cdn::CdnStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filters: Option<Vec<crate::filter_stats::Counted>>,
}

/// The API process's end: where its host's plane listens.
#[derive(Clone, Debug)]
pub struct AgentLink {
    socket: PathBuf,
}

impl AgentLink {
    pub fn new(socket: impl Into<PathBuf>) -> AgentLink {
        AgentLink {
            socket: socket.into(),
        }
    }

    /// Has the plane follow `app_id` now and waits until it did (or
    /// [`FOLLOW_WITHIN`] passed, or no agent answers).
    pub async fn follow(&self, app_id: &str) {
        let request = Request::Follow {
            app: app_id.to_owned(),
        };
        match tokio::time::timeout(FOLLOW_WITHIN, self.ask(&request)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::info!(app = app_id, error = %e, "apps: the agent will follow on its own")
            }
            Err(_) => tracing::warn!(app = app_id, "apps: the agent did not follow within 10 s"),
        }
    }

    /// Has the plane follow `app_id` soon, without waiting.
    pub fn nudge(&self, app_id: &str) {
        let link = self.clone();
        let app = app_id.to_owned();
        tokio::spawn(async move { link.follow(&app).await });
    }

    /// Has the edge follow the database's custom domains now and waits
    /// until it did (or no agent answers: it follows within a second of
    /// its start).
    pub async fn sync_domains(&self) {
        match tokio::time::timeout(FOLLOW_WITHIN, self.ask(&Request::Domains)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::info!(error = %e, "domains: the agent will follow on its own"),
            Err(_) => tracing::warn!("domains: the agent did not follow within 10 s"),
        }
    }

    /// The digest of variable `key` in the app's running replicas; none
    /// when nothing runs it here.
    pub async fn env_digest(&self, app_id: &str, key: &str) -> Result<Option<EnvDigest>, String> {
        let request = Request::EnvDigest {
            app: app_id.to_owned(),
            key: key.to_owned(),
        };
        let reply = tokio::time::timeout(FOLLOW_WITHIN, self.ask(&request))
            .await
            .map_err(|_| "the agent did not answer within 10 s".to_owned())??;
        Ok(reply.env)
    }

    /// What the edge's CDN did for the app since the agent started; none
    /// when the app is not known there.
    pub async fn cdn_stats(&self, app_id: &str) -> Result<Option<crate::cdn::CdnStats>, String> {
        let request = Request::CdnStats {
            app: app_id.to_owned(),
        };
        let reply = tokio::time::timeout(FOLLOW_WITHIN, self.ask(&request))
            .await
            .map_err(|_| "the agent did not answer within 10 s".to_owned())??;
        Ok(reply.cdn)
    }

    /// What the app's edge filters did on this host (each under its id,
    /// the firewall's under `firewall`); none when the app is not known
    /// there.
    pub async fn filter_stats(
        &self,
        app_id: &str,
    ) -> Result<Option<Vec<crate::filter_stats::Counted>>, String> {
        let request = Request::FilterStats {
            app: app_id.to_owned(),
        };
        let reply = tokio::time::timeout(FOLLOW_WITHIN, self.ask(&request))
            .await
            .map_err(|_| "the agent did not answer within 10 s".to_owned())??;
        Ok(reply.filters)
    }

    async fn ask(&self, request: &Request) -> Result<Reply, String> {
        let stream = UnixStream::connect(&self.socket)
            .await
            .map_err(|e| format!("no agent at {}: {e}", self.socket.display()))?;
        let (read, mut write) = stream.into_split();
        let mut line = serde_json::to_vec(request).map_err(|e| e.to_string())?;
        line.push(b'\n');
        write.write_all(&line).await.map_err(|e| e.to_string())?;
        let mut answer = String::new();
        BufReader::new(read)
            .read_line(&mut answer)
            .await
            .map_err(|e| e.to_string())?;
        let reply: Reply = serde_json::from_str(&answer)
            .map_err(|e| format!("the agent answered {answer:?}: {e}"))?;
        match reply.error {
            Some(e) => Err(e),
            None => Ok(reply),
        }
    }
}

impl Apps {
    /// Has this host's plane follow the app's change and waits for it.
    pub async fn follow_on_agent(&self, app_id: &str) {
        if let Some(agent) = self.agent() {
            agent.follow(app_id).await;
        }
    }

    /// Has this host's plane follow the app's change soon.
    pub fn nudge_agent(&self, app_id: &str) {
        if let Some(agent) = self.agent() {
            agent.nudge(app_id);
        }
    }
}

/// Serves the plane's end on `listener` (from [`bind`]) until the task
/// is dropped.
pub async fn serve(plane: Plane, listener: UnixListener) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "apps: accepting a control connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let plane = plane.clone();
        tokio::spawn(async move {
            if let Err(e) = answer(&plane, stream).await {
                tracing::info!(error = %e, "apps: a control connection");
            }
        });
    }
}

/// Binds `socket` with mode 0600 (only this host's own user reaches it),
/// replacing a previous agent's file.
pub fn bind(socket: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

async fn answer(plane: &Plane, stream: UnixStream) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut reader = BufReader::new(read).take(MAX_LINE as u64);
    reader.read_line(&mut line).await?;
    let reply = match serde_json::from_str::<Request>(&line) {
        Ok(Request::Follow { app }) => match plane.follow_now(&app).await {
            Ok(()) => Reply::default(),
            Err(e) => Reply {
                error: Some(e.to_string()),
                ..Reply::default()
            },
        },
        Ok(Request::EnvDigest { app, key }) => Reply {
            env: plane.running(&app).map(|local| EnvDigest {
                deployment_id: local.deployment_id,
                sha256: local
                    .handle
                    .env_value(&key)
                    .map(|v| hex::encode(Sha256::digest(v.as_bytes()))),
            }),
            ..Reply::default()
        },
        Ok(Request::Domains) => Reply {
            error: plane.domains().sync().await.err().map(|e| e.to_string()),
            ..Reply::default()
        },
        Ok(Request::CdnStats { app }) => match plateau_store::apps::get_any(plane.db(), &app).await
        {
            Ok(found) => Reply {
                cdn: found.map(|a| crate::cdn::CdnStats::of(plane.edge(), &a.slug)),
                ..Reply::default()
            },
            Err(e) => Reply {
                error: Some(e.to_string()),
                ..Reply::default()
            },
        },
        Ok(Request::FilterStats { app }) => {
            match plateau_store::apps::get_any(plane.db(), &app).await {
                Ok(found) => Reply {
                    filters: found.map(|a| crate::filter_stats::of(plane.edge(), &a.slug)),
                    ..Reply::default()
                },
                Err(e) => Reply {
                    error: Some(e.to_string()),
                    ..Reply::default()
                },
            }
        }
        Err(e) => Reply {
            error: Some(format!("not a request: {e}")),
            ..Reply::default()
        },
    };
    let mut out = serde_json::to_vec(&reply).map_err(std::io::Error::other)?;
    out.push(b'\n');
    write.write_all(&out).await
}
