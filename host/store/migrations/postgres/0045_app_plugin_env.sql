-- Plugins' layers of apps' environments (issue 36, the config plugin's
-- sync into apps through the `app-env` capability). A layer is one
-- plugin's variables of one app, replaced whole; `revision` only grows,
-- so a stale sync changes nothing.
CREATE TABLE app_plugin_layers (
    app_id     TEXT NOT NULL,
    plugin     TEXT NOT NULL,
    revision   BIGINT NOT NULL,
    -- what the change's event names, e.g. config:shop/production
    source     TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (app_id, plugin)
);

CREATE TABLE app_plugin_env (
    app_id TEXT NOT NULL,
    plugin TEXT NOT NULL,
    name   TEXT NOT NULL,
    -- The value sealed with the host key, bound to the app, the plugin
    -- and the name.
    sealed BYTEA NOT NULL,
    PRIMARY KEY (app_id, plugin, name)
);
