//! Structured logs with tracing: text for people, JSON for collectors.
//! The filter comes from `PLATEAU_LOG` (or `RUST_LOG`), default `info`.

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
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
