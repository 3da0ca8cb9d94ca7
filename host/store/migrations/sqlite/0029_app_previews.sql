-- Previews of apps (issue 31, "Previews"): a branch of the app's linked
-- repository deployed under its own host name. The preview runs as an app
-- row of its own (app_id, hidden from GET /apps), so the pipeline, the
-- data plane and the edge serve it as any app; this row says whose
-- preview it is. One preview per branch of an app.
CREATE TABLE app_previews (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    -- The app previewed.
    parent_id    TEXT NOT NULL REFERENCES apps (id),
    -- The preview's own app row.
    app_id       TEXT NOT NULL UNIQUE,
    branch       TEXT NOT NULL,
    -- A database branch deleted with the preview, its connection string
    -- in the preview's env under db_env_key.
    db_branch_id TEXT,
    db_env_key   TEXT,
    -- open, or deleting (trashed, its rows purged by the API process).
    status       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    UNIQUE (parent_id, branch)
);
CREATE INDEX app_previews_by_status ON app_previews (status);
