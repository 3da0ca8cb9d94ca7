//! Structured logs with tracing: text for people, JSON for collectors.
//! The filter comes from `PLATEAU_LOG` (or `RUST_LOG`), default `info`.
//! Text is coloured only for a terminal: written to a file or a pipe (the
//! agent's log, systemd's journal), a line holds no escape codes.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// s3s logs every S3 error it answers at ERROR, a client's wrong
/// signature or missing key alike; the storage front logs its own
/// internal errors, so s3s's lines stay off unless asked for.
const DEFAULT_FILTER: &str = "info,sqlx=warn,tower_http=info,s3s=off";

pub fn init(format: LogFormat) {
    let filter = std::env::var("PLATEAU_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| DEFAULT_FILTER.to_owned());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(filter))
        .with_ansi(colour())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// Whether log lines may carry colour codes: stderr, where they go, is a
/// terminal and `NO_COLOR` (no-color.org) is not set.
fn colour() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
