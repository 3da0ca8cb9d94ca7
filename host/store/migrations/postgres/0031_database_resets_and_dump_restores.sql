-- Managed PostgreSQL II (issue 32). A branch reset asked for and not yet
-- swapped in: the agent makes a fresh copy of the parent beside the
-- branch's running server, and removes this row in the transaction that
-- keeps the copy's placement (so a reset interrupted before that is made
-- again, and one interrupted after it is done).
CREATE TABLE database_resets (
    database_id  TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    source_id    TEXT NOT NULL,
    backup_id    TEXT NOT NULL,
    requested_at BIGINT NOT NULL
);

-- Managed dump restore: a dump uploaded through a presigned URL (its
-- token kept hashed, its object in the backup store under
-- `<database>/dumps/<key>`, kept for retries until the database goes),
-- and each restore of one into the database, with its outcome.
CREATE TABLE database_dump_uploads (
    key          TEXT PRIMARY KEY,
    database_id  TEXT NOT NULL,
    org_id       TEXT NOT NULL,
    token_sha256 TEXT NOT NULL,
    expires_at   BIGINT NOT NULL,
    bytes        BIGINT,
    stored_at    BIGINT,
    created_at   BIGINT NOT NULL
);
CREATE INDEX database_dump_uploads_database ON database_dump_uploads (database_id);

CREATE TABLE database_dump_restores (
    id           TEXT PRIMARY KEY,
    database_id  TEXT NOT NULL,
    org_id       TEXT NOT NULL,
    dump_key     TEXT NOT NULL,
    -- The extensions created first (JSON array of their API names).
    pre_seed     TEXT NOT NULL DEFAULT '[]',
    -- pending, running, completed or failed
    status       TEXT NOT NULL,
    error        TEXT,
    -- Rows of each table once restored (JSON object).
    table_counts TEXT,
    created_at   BIGINT NOT NULL,
    started_at   BIGINT,
    ended_at     BIGINT
);
CREATE INDEX database_dump_restores_database ON database_dump_restores (database_id, id);
CREATE INDEX database_dump_restores_status ON database_dump_restores (status);
