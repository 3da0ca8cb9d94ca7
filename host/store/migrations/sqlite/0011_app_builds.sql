-- App builds (issue 15): a deployment from a git repository or an
-- uploaded archive records its source and keeps its (capped) build log;
-- source uploads are bound to one app and used once.

ALTER TABLE app_deployments ADD COLUMN repo TEXT;
ALTER TABLE app_deployments ADD COLUMN branch TEXT;
ALTER TABLE app_deployments ADD COLUMN upload_id TEXT;
ALTER TABLE app_deployments ADD COLUMN build_log TEXT;

CREATE TABLE app_uploads (
    id         TEXT PRIMARY KEY,
    app_id     TEXT NOT NULL REFERENCES apps (id),
    org_id     TEXT NOT NULL,
    -- Set once the archive is stored; an upload takes one archive.
    stored_at  INTEGER,
    bytes      INTEGER,
    expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX app_uploads_by_app ON app_uploads (app_id, id);
