-- Plateau core schema (SQLite). Timestamps are milliseconds since the Unix
-- epoch; booleans are 0 or 1. Keep in step with ../postgres/0001_core.sql.

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE plans (
    name                       TEXT PRIMARY KEY,
    position                   INTEGER NOT NULL,
    price_cents                INTEGER NOT NULL,
    apps                       INTEGER NOT NULL,
    databases                  INTEGER NOT NULL,
    cache_instances            INTEGER NOT NULL,
    cron_jobs                  INTEGER NOT NULL,
    storage_gb                 INTEGER NOT NULL,
    db_disk_gb                 INTEGER NOT NULL,
    bandwidth_gb               INTEGER NOT NULL,
    check_min_interval_seconds INTEGER NOT NULL
);

INSERT INTO plans VALUES
    ('free',    0,    0,  1,  1,  1,   2,   1,   1,  100, 300),
    ('starter', 1, 1200,  3,  1,  1,  10,  25,  10,  500,  60),
    ('pro',     2, 3500,  8,  3,  3,  50, 100,  50, 2048,  60),
    ('scale',   3, 8900, 20, 10, 10, 200, 500, 200, 5120,  60);

CREATE TABLE organizations (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    plan       TEXT NOT NULL REFERENCES plans (name),
    created_at INTEGER NOT NULL
);

CREATE TABLE users (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    email      TEXT,
    created_at INTEGER NOT NULL
);

CREATE TABLE memberships (
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    user_id    TEXT NOT NULL REFERENCES users (id),
    role       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (org_id, user_id)
);

CREATE TABLE projects (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    name       TEXT NOT NULL,
    is_default INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    UNIQUE (org_id, name)
);

CREATE TABLE tokens (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES organizations (id),
    user_id        TEXT NOT NULL REFERENCES users (id),
    name           TEXT NOT NULL,
    secret_hash    TEXT NOT NULL UNIQUE,
    secret_hint    TEXT NOT NULL,
    scopes         TEXT NOT NULL,
    project_id     TEXT,
    max_cost_cents INTEGER,
    spent_cents    INTEGER NOT NULL DEFAULT 0,
    expires_at     INTEGER,
    revoked_at     INTEGER,
    parent_id      TEXT,
    grant_id       TEXT,
    purpose        TEXT,
    created_at     INTEGER NOT NULL
);
CREATE INDEX tokens_by_org ON tokens (org_id, id);

CREATE TABLE connect_grants (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL REFERENCES organizations (id),
    user_id         TEXT NOT NULL REFERENCES users (id),
    name            TEXT NOT NULL,
    allowed_scopes  TEXT NOT NULL,
    max_ttl_seconds INTEGER NOT NULL,
    max_cost_cents  INTEGER,
    project_id      TEXT,
    enabled         INTEGER NOT NULL,
    secret_hash     TEXT NOT NULL UNIQUE,
    secret_hint     TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    deleted_at      INTEGER
);
CREATE INDEX connect_grants_by_org ON connect_grants (org_id, id);

CREATE TABLE notification_preferences (
    org_id        TEXT NOT NULL REFERENCES organizations (id),
    category      TEXT NOT NULL,
    email_enabled INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (org_id, category)
);

CREATE TABLE events (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    type          TEXT NOT NULL,
    category      TEXT NOT NULL,
    action        TEXT NOT NULL,
    audit         INTEGER NOT NULL,
    actor_type    TEXT NOT NULL,
    actor_id      TEXT,
    actor_user_id TEXT,
    actor_ip      TEXT,
    resource_type TEXT,
    resource_id   TEXT,
    data          TEXT NOT NULL,
    created_at    INTEGER NOT NULL
);
CREATE INDEX events_by_org ON events (org_id, id);
CREATE INDEX events_by_org_time ON events (org_id, created_at);

CREATE TABLE idempotency_keys (
    scope        TEXT NOT NULL,
    method       TEXT NOT NULL,
    path         TEXT NOT NULL,
    key          TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    state        TEXT NOT NULL,
    status       INTEGER,
    content_type TEXT,
    body         BLOB,
    locked_until INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (scope, method, path, key)
);
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);

CREATE TABLE admin_sessions (
    id_hash    TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
