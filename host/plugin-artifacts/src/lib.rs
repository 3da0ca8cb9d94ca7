//! Guest components built for wasm32-wasip2, exposed as byte constants.
//!
//! `build.rs` runs cargo for the guests with a target directory of its own.
//! The built-in plugins (`plugins/*`) are in `builtin`, always; the
//! runtime's test components are in `fixtures`, behind the `fixtures`
//! feature:
//!
//! ```ignore
//! let wasm: &[u8] = plateau_plugin_artifacts::fixtures::ECHO;
//! ```

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

/// The built-in plugins, as `(name, component bytes)`.
pub fn builtin_plugins() -> [(&'static str, &'static [u8]); 14] {
    [
        ("flags", builtin::PLATEAU_PLUGIN_FLAGS),
        ("heartbeats", builtin::PLATEAU_PLUGIN_HEARTBEATS),
        ("checks", builtin::PLATEAU_PLUGIN_CHECKS),
        ("email", builtin::PLATEAU_PLUGIN_EMAIL),
        ("queues", builtin::PLATEAU_PLUGIN_QUEUES),
        ("cron", builtin::PLATEAU_PLUGIN_CRON),
        ("workflows", builtin::PLATEAU_PLUGIN_WORKFLOWS),
        ("webhooks", builtin::PLATEAU_PLUGIN_WEBHOOKS),
        ("log-drains", builtin::PLATEAU_PLUGIN_LOG_DRAINS),
        ("errors", builtin::PLATEAU_PLUGIN_ERRORS),
        ("otel", builtin::PLATEAU_PLUGIN_OTEL),
        ("config", builtin::PLATEAU_PLUGIN_CONFIG),
        ("status-pages", builtin::PLATEAU_PLUGIN_STATUS_PAGES),
        ("analytics", builtin::PLATEAU_PLUGIN_ANALYTICS),
    ]
}
