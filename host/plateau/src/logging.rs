//! Structured logs with tracing: text for people, JSON for collectors.
//! The filter comes from `PLATEAU_LOG` (or `RUST_LOG`), default `info`.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

pub fn init(format: LogFormat) {
    let filter = std::env::var("PLATEAU_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info,sqlx=warn,tower_http=info".to_owned());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(filter))
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
