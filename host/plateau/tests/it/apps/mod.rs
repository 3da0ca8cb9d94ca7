//! Apps: `wasi:http` components pushed to the host's own registry with
//! `plateau plugin push`, deployed through the API and fetched through
//! the edge by Host name.

mod autoscale;
mod bots;
mod build_sandbox;
mod builds;
pub(crate) mod cdn;
mod crates;
mod deploy;
mod domains;
mod filters;
mod limits;
mod linux;
mod outage;
mod previews;
mod rules;
mod sandbox;
mod settings;
mod tenants;
mod uploads;
pub(crate) mod volumes;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use plateau_plugin_artifacts::apps::{BROKEN_APP, HELLO_APP, HELLO_APP_V2};
use plateau_testkit::{Backend, Client, Server, ServerOptions};
use serde_json::{Value, json};

use crate::plugin_oci::{plateau, success_json};

/// A server on the `pro` plan's organisation, with its images pushed.
pub struct Apps {
    pub server: Server,
    /// The organisation's owner token (every scope).
    pub token: String,
    pub org: String,
    /// `127.0.0.1:<port>/<org>/hello:v1`, `...:v2`, `.../broken:v1`.
    pub v1: String,
    pub v2: String,
    pub broken: String,
}

impl Apps {
    pub async fn start(backend: Backend) -> Apps {
        Self::start_with(ServerOptions::new(backend)).await
    }

    pub async fn start_with(options: ServerOptions) -> Apps {
        let server = crate::start_with(options).await;
        let token = crate::create_org(&server, "apps-pro", "pro").await;
        let me = Client::new(&server.url).with_token(&token).get("/me").await;
        assert_eq!(me.status, 200, "{}", me.text());
        let org = me.json()["organization"]["id"].as_str().unwrap().to_owned();
        let host = server.url.trim_start_matches("http://").to_owned();
        let v1 = format!("{host}/{org}/hello:v1");
        let v2 = format!("{host}/{org}/hello:v2");
        let broken = format!("{host}/{org}/broken:v1");
        push(&token, HELLO_APP, &v1).await;
        push(&token, HELLO_APP_V2, &v2).await;
        push(&token, BROKEN_APP, &broken).await;
        Apps {
            server,
            token,
            org,
            v1,
            v2,
            broken,
        }
    }

    pub fn client(&self) -> Client {
        Client::new(&self.server.url).with_token(&self.token)
    }

    /// Creates an app deploying `image`; returns it once its first
    /// deployment is live.
    pub async fn deployed(&self, name: &str, image: &str) -> Value {
        let r = self
            .client()
            .post("/apps", json!({ "name": name, "image": image }))
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
        let app = r.json();
        assert_eq!(app["status"], "deploying");
        let id = app["id"].as_str().unwrap().to_owned();
        let app = crate::until(
            &self.client(),
            &format!("/apps/{id}"),
            "the app to run",
            |a| a["status"] == "running" || a["status"] == "failed",
        )
        .await;
        if app["status"] == "failed" {
            let history = self.client().get(&format!("/apps/{id}/deployments")).await;
            panic!("the first deployment failed: {}", history.text());
        }
        app
    }

    /// Waits for deployment `id` of `app` to end; returns it.
    pub async fn settled(&self, app: &str, id: &str) -> Value {
        let page = crate::until(
            &self.client(),
            &format!("/apps/{app}/deployments"),
            "the deployment to settle",
            |page| {
                page["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|d| d["id"] == id && d["status"] != "pending")
            },
        )
        .await;
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["id"] == id)
            .unwrap()
            .clone()
    }
}

/// Pushes `wasm` to `reference` with `plateau plugin push`.
pub async fn push(token: &str, wasm: &[u8], reference: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.wasm");
    std::fs::write(&file, wasm).unwrap();
    let out = plateau(
        &[("PLATEAU_REGISTRY_PASSWORD", token)],
        &[
            "plugin",
            "push",
            file.to_str().unwrap(),
            reference,
            "--insecure",
        ],
    )
    .await;
    success_json(&out)
}

/// One answer of the edge: its status and body, or the transport error.
pub type Answer = Result<(u16, String), String>;

/// The edge of `server`, asking for the app with `slug`.
pub struct Edge {
    http: reqwest::Client,
    base: String,
    host: String,
}

impl Edge {
    pub fn new(server: &Server, slug: &str) -> Edge {
        Edge {
            http: reqwest::Client::new(),
            base: server.edge_url.clone(),
            host: format!("{slug}.apps.localhost"),
        }
    }

    /// `GET path` with the app's Host name: the status and the body.
    pub async fn get(&self, path: &str) -> Answer {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .header("host", &self.host)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = r.status().as_u16();
        let body = r.text().await.map_err(|e| e.to_string())?;
        Ok((status, body))
    }

    /// Waits until `GET /` answers 200 with `body`.
    pub async fn until_body(&self, body: &str) {
        let mut last = Ok((0, String::new()));
        for _ in 0..400 {
            last = self.get("/").await;
            if matches!(&last, Ok((200, b)) if b == body) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("waited for {body:?} from the edge; last {last:?}");
    }
}

/// Requests sent in a loop by several tasks until stopped; every answer
/// is kept.
pub struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<Vec<Answer>>>,
}

impl Load {
    pub fn start(server: &Server, slug: &str, workers: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..workers)
            .map(|_| {
                let edge = Edge::new(server, slug);
                let stop = stop.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        seen.push(edge.get("/").await);
                    }
                    seen
                })
            })
            .collect();
        Load { stop, tasks }
    }

    /// Stops the load; every answer, in no particular order.
    pub async fn finish(self) -> Vec<Answer> {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        for task in self.tasks {
            all.extend(task.await.unwrap());
        }
        all
    }
}

/// The answers that are not `200` with one of `bodies`.
pub fn failures<'a>(answers: &'a [Answer], bodies: &[&str]) -> Vec<&'a Answer> {
    answers
        .iter()
        .filter(|a| !matches!(a, Ok((200, b)) if bodies.contains(&b.as_str())))
        .collect()
}

pub fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

pub fn slug(v: &Value) -> String {
    v["slug"].as_str().unwrap().to_owned()
}
