-- Plugins (PostgreSQL): their component versions, which one serves, their
-- key-value data and their metered fuel. Keep in step with
-- ../sqlite/0002_plugins.sql.

-- Every component version ever loaded, with its bytes, so that every host
-- on the database can load it and a rollback needs no network.
CREATE TABLE plugin_versions (
    name        TEXT NOT NULL,
    digest      TEXT NOT NULL,
    version     TEXT NOT NULL,
    wit_version TEXT NOT NULL,
    source      TEXT NOT NULL,
    wasm        BYTEA NOT NULL,
    description TEXT NOT NULL,
    loaded_at   BIGINT NOT NULL,
    PRIMARY KEY (name, digest)
);

-- What serves each plugin. `generation` grows on every switch, so other
-- hosts notice a change with one small read.
CREATE TABLE plugins (
    name            TEXT PRIMARY KEY,
    active_digest   TEXT NOT NULL,
    previous_digest TEXT,
    generation      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

-- Plugin key-value data: namespace is an organisation id, or '' for the
-- plugin's global data.
CREATE TABLE plugin_kv (
    plugin    TEXT NOT NULL,
    namespace TEXT NOT NULL,
    key       TEXT COLLATE "C" NOT NULL,
    value     BYTEA NOT NULL,
    PRIMARY KEY (plugin, namespace, key)
);

-- Fuel and requests per organisation, plugin and day (UTC, YYYY-MM-DD).
CREATE TABLE plugin_usage (
    org_id   TEXT NOT NULL,
    plugin   TEXT NOT NULL,
    day      TEXT NOT NULL,
    requests BIGINT NOT NULL,
    fuel     BIGINT NOT NULL,
    PRIMARY KEY (org_id, plugin, day)
);
