//! `cargo xtask bench flags`: one OFREP flag evaluation served by the
//! flags plugin (a wasm component instantiated per request) against the
//! same evaluation as a native handler in the same host process (the
//! server of `tests/native-twin`, which is `plateau serve` plus the native
//! twins, so the shipped binary carries none of them), measured
//! in the same run; then the floor of the plugin path (the echo fixture's
//! `GET /echo/version`, which does nothing, against a native no-op); then
//! the flags component's per-request costs timed in-process: instantiation,
//! the whole plugin call, and the native evaluation of the same bytes.

use anyhow::{Context, bail};

use crate::load::{self, Scenario};
use crate::server::{NATIVE_TWIN, Server, release_dir};

const FLAG: &str = r#"{"state":"ENABLED","variants":{"on":true,"off":false},"defaultVariant":"off",
"targeting":{"if":[{"ends_with":[{"var":"email"},"@example.com"]},{"fractional":[["on",50],["off",50]]},"off"]}}"#;
const CONTEXT: &str = r#"{"context":{"targetingKey":"user-42","email":"ann@example.com"}}"#;

pub async fn run(opts: load::Options) -> anyhow::Result<()> {
    let server = Server::start_native_twin().await?;
    put_flag(&server).await?;
    println!(
        "flag evaluation benchmark: {} connections, {} s per scenario in {} alternating rounds, SQLite, release build\n",
        opts.connections, opts.seconds, opts.rounds
    );
    let path = "/ofrep/v1/evaluate/flags/bench-flag";
    let scenarios = [
        (
            "native handler (host)",
            Scenario::post_json(
                &server.base,
                &format!("/api/v1/bench/flags{path}"),
                &server.token,
                CONTEXT,
            ),
        ),
        (
            "flags plugin (wasm component)",
            Scenario::post_json(
                &server.base,
                &format!("/api/v1/flags{path}"),
                &server.token,
                CONTEXT,
            ),
        ),
    ];
    load::run_table(&server, scenarios.into(), &opts, "native").await?;

    load_echo(&server).await?;
    println!("\nfloor of the plugin path: a request that does nothing\n");
    let floor = [
        (
            "native no-op handler (host)",
            Scenario::get(
                &server.base,
                "/api/v1/bench/echo/version",
                Some(&server.token),
            ),
        ),
        (
            "echo plugin no-op (wasm component)",
            Scenario::get(&server.base, "/api/v1/echo/version", Some(&server.token)),
        ),
    ];
    load::run_table(&server, floor.into(), &opts, "no-op").await?;
    drop(server);
    let [instantiate, plugin_call, native] = in_process(5_000).await?;
    println!(
        "\nin-process, per request (no HTTP, no database: an in-memory store), mean of 5000:\n\
         {:<58}{instantiate:>8.2} us\n\
         {:<58}{plugin_call:>8.2} us\n\
         {:<58}{native:>8.2} us\n\
         {:<58}{:>8.2} us",
        "instantiation (fresh store + instance, pooling allocator)",
        "plugin call (instantiate, guest, reads, teardown)",
        "native evaluation (same reads, same evaluation code)",
        "plugin call minus native evaluation",
        plugin_call - native,
    );
    println!("\ntargets: plugin >= 70% of native throughput; instantiation <= 10 us");
    Ok(())
}

async fn put_flag(server: &Server) -> anyhow::Result<()> {
    let status = tokio::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT"])
        .arg(format!("{}/api/v1/flags/bench-flag", server.base))
        .args(["-H", &format!("Authorization: Bearer {}", server.token)])
        .args(["-H", "Content-Type: application/json", "-d", FLAG])
        .output()
        .await
        .context("running curl to create the flag")?;
    let code = String::from_utf8_lossy(&status.stdout).to_string();
    if code != "201" && code != "200" {
        bail!("creating the benchmark flag answered {code}");
    }
    Ok(())
}

/// Loads and activates the echo fixture component as the `echo` plugin,
/// through the admin API as an operator would.
async fn load_echo(server: &Server) -> anyhow::Result<()> {
    let wasm = twin(&["echo-component"]).await?;
    let file = tempfile::NamedTempFile::new()?;
    std::fs::write(file.path(), wasm)?;
    let path = file.path().to_str().context("temporary path")?;
    server
        .command(&["plugin", "load", "echo", path, "--activate"])
        .await?;
    Ok(())
}

/// Runs `plateau-native-twin ARGS` (the release binary); its standard output.
async fn twin(args: &[&str]) -> anyhow::Result<Vec<u8>> {
    let output = tokio::process::Command::new(release_dir().join(NATIVE_TWIN))
        .args(args)
        .env("PLATEAU_LOG", "error")
        .output()
        .await
        .with_context(|| format!("running {NATIVE_TWIN}"))?;
    if !output.status.success() {
        bail!(
            "{NATIVE_TWIN} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output.stdout)
}

/// The in-process figures of `plateau-native-twin in-process`, in
/// microseconds: instantiation, plugin call, native evaluation.
async fn in_process(n: u32) -> anyhow::Result<[f64; 3]> {
    let count = n.to_string();
    let output = twin(&[
        "in-process",
        "--count",
        &count,
        "--flag",
        FLAG,
        "--context",
        CONTEXT,
    ])
    .await?;
    let stdout = String::from_utf8_lossy(&output);
    let figures = stdout
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<Vec<f64>, _>>()
        .context("reading the in-process figures")?;
    figures
        .try_into()
        .map_err(|v: Vec<f64>| anyhow::anyhow!("expected 3 in-process figures, got {}", v.len()))
}
