-- Backups of managed PostgreSQL (issue 32): the ledger of each cluster's
-- base backups (its WAL is archived continuously beside them), kept after
-- the cluster is deleted until `expires_at` (the database's
-- backupRetentionDays later); and the source of a cluster made by a
-- restore, which the agent reads when it creates that cluster.
CREATE TABLE database_backups (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES organizations(id),
    database_id   TEXT NOT NULL,
    database_name TEXT NOT NULL,
    -- The source's version, owner role and database (JSON): what a restore
    -- of a deleted database needs.
    settings      TEXT NOT NULL DEFAULT '{}',
    -- full (a base backup) or incremental (the WAL since the last entry)
    kind          TEXT NOT NULL,
    -- pending, running, completed or failed
    status        TEXT NOT NULL,
    detail        TEXT,
    started_at    BIGINT,
    ended_at      BIGINT,
    size_bytes    BIGINT NOT NULL DEFAULT 0,
    wal_start     TEXT,
    wal_end       TEXT,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT
);
CREATE INDEX database_backups_database ON database_backups (database_id, id);
CREATE INDEX database_backups_status ON database_backups (status);
CREATE INDEX database_backups_expiry ON database_backups (expires_at);

CREATE TABLE database_restores (
    database_id TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    source_id   TEXT NOT NULL,
    backup_id   TEXT NOT NULL,
    -- Milliseconds since the epoch; none: the end of the archived WAL.
    target_time BIGINT,
    created_at  BIGINT NOT NULL
);

-- Branches: a database made as a copy of another (its parent), full or
-- structure only; protected ones cannot be deleted, and one with a TTL is
-- deleted when it expires.
CREATE TABLE database_branches (
    database_id TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    parent_id   TEXT NOT NULL,
    protected   BIGINT NOT NULL DEFAULT 0,
    schema_only BIGINT NOT NULL DEFAULT 0,
    from_time   BIGINT,
    expires_at  BIGINT,
    created_at  BIGINT NOT NULL
);
CREATE INDEX database_branches_parent ON database_branches (parent_id);
CREATE INDEX database_branches_expiry ON database_branches (expires_at);
