//! Plugins through OCI: `plateau plugin push` packages components as Wasm
//! artifacts into the host's own `/v2` registry, and the host loads them
//! by reference (admin API and `plateau plugin load oci://...`), verifies
//! digests and media types, hot-swaps under load and rolls back without
//! the registry.

mod failures;
mod loading;
mod swap;

use std::process::Output;

use plateau_testkit::{Backend, Client, Response};
use serde_json::Value;

use crate::registry::Reg;

/// The host with its registry, an operator session and registry tokens.
pub struct Env {
    pub reg: Reg,
    pub admin: Client,
    /// `registry:write`, for pushing.
    pub writer: String,
    /// `registry:read`, all a pull needs.
    pub reader: String,
}

impl Env {
    pub async fn start(backend: Backend) -> Env {
        let reg = Reg::start(backend).await;
        let admin = crate::plugins::admin(&reg.server).await;
        let writer = reg.token(&["registry:write"]).await;
        let reader = reg.token(&["registry:read"]).await;
        Env {
            reg,
            admin,
            writer,
            reader,
        }
    }

    /// `127.0.0.1:<port>/<org>/<path>`.
    pub fn reference(&self, path: &str) -> String {
        format!("{}/{}", self.reg.host, self.reg.repo(path))
    }

    /// Pushes `wasm` to `reference` with `plateau plugin push`; returns its
    /// report (`digest`, `pinned`, `layer`).
    pub async fn push(&self, wasm: &[u8], reference: &str) -> Value {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("component.wasm");
        std::fs::write(&file, wasm).unwrap();
        let out = plateau(
            &[("PLATEAU_REGISTRY_PASSWORD", &self.writer)],
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

    /// `plateau plugin load NAME oci://REFERENCE --insecure [--activate]`
    /// against this server, pulling with the read token.
    pub async fn cli_load(&self, name: &str, reference: &str, activate: bool) -> Output {
        let source = format!("oci://{reference}");
        let mut args = vec!["plugin", "load", name, &source, "--insecure"];
        if activate {
            args.push("--activate");
        }
        plateau(
            &[
                ("PLATEAU_URL", &self.reg.server.url),
                ("PLATEAU_ADMIN_PASSWORD", &self.reg.server.admin_password),
                ("PLATEAU_REGISTRY_PASSWORD", &self.reader),
            ],
            &args,
        )
        .await
    }

    /// `POST /admin/plugins/{name}/versions` with a JSON body.
    pub async fn api_load(&self, name: &str, body: Value) -> Response {
        self.admin
            .post(&format!("/admin/plugins/{name}/versions"), body)
            .await
    }

    /// The body that loads `reference` with the read token over plain HTTP.
    pub fn by_reference(&self, reference: &str, activate: bool) -> Value {
        serde_json::json!({
            "reference": reference,
            "activate": activate,
            "username": "plateau",
            "password": self.reader,
            "insecure": true,
        })
    }

    /// The stored versions of plugin `name` (empty when it does not exist).
    pub async fn versions(&self, name: &str) -> Vec<Value> {
        let listed = self.admin.get("/admin/plugins").await.json();
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .map(|p| p["versions"].as_array().unwrap().clone())
            .unwrap_or_default()
    }
}

/// Runs the `plateau` binary with `env` (and no inherited registry
/// password).
pub async fn plateau(env: &[(&str, &str)], args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_plateau"))
        .args(args)
        .env_remove("PLATEAU_REGISTRY_PASSWORD")
        .env_remove("PLATEAU_ADMIN_PASSWORD")
        .env("RUST_BACKTRACE", "0")
        .envs(env.iter().copied())
        .output()
        .await
        .expect("the plateau command runs")
}

/// The JSON a successful command printed.
pub fn success_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}
