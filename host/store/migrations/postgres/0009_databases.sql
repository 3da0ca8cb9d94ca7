-- Managed PostgreSQL (spec sections 4.5, 4.6 and 8) (postgres).
-- Keep in step with ../sqlite/0009_databases.sql.

-- One row per cluster. `placement` is the provider's own JSON (for the
-- local provider: version, ports, directories), opaque to the store.
-- Passwords are sealed with the host's key, never stored in clear.
CREATE TABLE databases (
    id                    TEXT PRIMARY KEY,
    org_id                TEXT NOT NULL REFERENCES organizations(id),
    project_id            TEXT,
    name                  TEXT NOT NULL,
    -- running or degraded
    status                TEXT NOT NULL,
    version               TEXT NOT NULL,
    replicas              BIGINT NOT NULL,
    memory_mb             BIGINT NOT NULL,
    cpus                  BIGINT NOT NULL,
    disk_gb               BIGINT NOT NULL,
    backup_retention_days BIGINT NOT NULL,
    host_id               TEXT NOT NULL,
    placement             TEXT NOT NULL,
    owner_password_sealed TEXT NOT NULL,
    admin_password_sealed TEXT NOT NULL,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL,
    UNIQUE (org_id, name)
);
CREATE INDEX databases_host ON databases (host_id);

-- The per-plan ceilings of one database's settings (spec section 8 gives
-- the count and the DB disk, in `plans`; these are the platform's choice).
CREATE TABLE database_plan_limits (
    plan          TEXT PRIMARY KEY REFERENCES plans(name),
    max_replicas  BIGINT NOT NULL,
    max_memory_mb BIGINT NOT NULL,
    max_cpus      BIGINT NOT NULL
);

INSERT INTO database_plan_limits VALUES
    ('free',    0,   256, 1),
    ('starter', 1,   512, 1),
    ('pro',     2,  2048, 2),
    ('scale',   3,  8192, 4);
