-- Managed caches (spec sections 1 and 8) (postgres).
-- Keep in step with ../sqlite/0006_caches.sql.

-- One row per cluster. `placement` is the provider's own JSON (for the
-- local provider: ports, directory, master name), opaque to the store.
-- Passwords are sealed with the host's key, never stored in clear.
CREATE TABLE caches (
    id                    TEXT PRIMARY KEY,
    org_id                TEXT NOT NULL REFERENCES organizations(id),
    name                  TEXT NOT NULL,
    status                TEXT NOT NULL,
    memory_mb             BIGINT NOT NULL,
    eviction_policy       TEXT NOT NULL,
    replicas              BIGINT NOT NULL,
    persistence           TEXT NOT NULL,
    tls                   BIGINT NOT NULL,
    host_id               TEXT NOT NULL,
    placement             TEXT NOT NULL,
    password_sealed       TEXT NOT NULL,
    admin_password_sealed TEXT NOT NULL,
    password_rotated_at   BIGINT NOT NULL,
    source_snapshot_id    TEXT,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL,
    UNIQUE (org_id, name)
);
CREATE INDEX caches_host ON caches (host_id);

-- RDB snapshots, their bytes in the object store under `object_key`.
CREATE TABLE cache_snapshots (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organizations(id),
    cache_id   TEXT NOT NULL REFERENCES caches(id) ON DELETE CASCADE,
    object_key TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX cache_snapshots_cache ON cache_snapshots (cache_id, id);

-- The per-plan ceilings of a cache's settings (spec section 8 gives the
-- instance count, in `plans`; these are the platform's choice).
CREATE TABLE cache_plan_limits (
    plan          TEXT PRIMARY KEY REFERENCES plans(name),
    max_replicas  BIGINT NOT NULL,
    max_memory_mb BIGINT NOT NULL
);

INSERT INTO cache_plan_limits VALUES
    ('free',    1,   256),
    ('starter', 1,   512),
    ('pro',     2,  2048),
    ('scale',   3,  8192);
