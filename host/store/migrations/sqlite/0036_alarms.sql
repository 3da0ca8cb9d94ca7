-- Threshold alarms (issue 34): a metric of the series store, summed over
-- the last `window_days` days (today included) for the organisation, one
-- project or one resource, compared with `threshold`. The API process
-- evaluates every enabled alarm periodically; `state` changes by
-- compare-and-set, so one evaluation emits each transition's event.
CREATE TABLE alarms (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES organizations (id),
    project_id       TEXT,
    resource_id      TEXT,
    name             TEXT NOT NULL,
    metric           TEXT NOT NULL,
    -- quantity or cost (cents at list price)
    measure          TEXT NOT NULL,
    -- above or below
    comparison       TEXT NOT NULL,
    threshold        REAL NOT NULL,
    window_days      INTEGER NOT NULL,
    -- JSON array of addresses
    notify_emails    TEXT NOT NULL,
    enabled          INTEGER NOT NULL DEFAULT 1,
    -- pending (never evaluated), ok or triggered
    state            TEXT NOT NULL,
    value            REAL,
    evaluated_at     INTEGER,
    state_changed_at INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX alarms_by_org ON alarms (org_id, id);
