-- Anomaly monitors and what they found, spend budgets and the apps a
-- budget paused (issue 34).
--
-- A monitor judges each complete day of one metric's daily series (for
-- the organisation, a project or a resource) once: `checked_day` moves
-- forward by compare-and-set in the transaction that records the day's
-- anomaly and its event, so several evaluators report it once.
CREATE TABLE anomaly_monitors (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES organizations (id),
    project_id    TEXT,
    resource_id   TEXT,
    name          TEXT NOT NULL,
    metric        TEXT NOT NULL,
    -- low, medium or high
    sensitivity   TEXT NOT NULL,
    -- JSON array of addresses
    notify_emails TEXT NOT NULL,
    enabled       BIGINT NOT NULL DEFAULT 1,
    -- the last day judged (YYYY-MM-DD); '' before the first evaluation
    checked_day   TEXT NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX anomaly_monitors_by_org ON anomaly_monitors (org_id, id);

CREATE TABLE anomalies (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organizations (id),
    monitor_id  TEXT NOT NULL,
    metric      TEXT NOT NULL,
    project_id  TEXT,
    resource_id TEXT,
    day         TEXT NOT NULL,
    value       DOUBLE PRECISION NOT NULL,
    expected    DOUBLE PRECISION NOT NULL,
    score       DOUBLE PRECISION NOT NULL,
    -- spike or dip
    direction   TEXT NOT NULL,
    detected_at BIGINT NOT NULL,
    UNIQUE (monitor_id, day)
);
CREATE INDEX anomalies_by_org ON anomalies (org_id, id);

-- A monthly budget for the organisation (`scope` = 'org') or one project
-- (`scope` = its id). `period` (YYYY-MM) is the month `notified_percent`
-- belongs to; `limited_at` is set when the 100% actions ran and cleared
-- by a resume, after which they stay off until `resumed_period` ends.
CREATE TABLE spend_budgets (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES organizations (id),
    scope            TEXT NOT NULL,
    project_id       TEXT,
    amount_cents     BIGINT NOT NULL,
    -- JSON array of percents, ascending
    thresholds       TEXT NOT NULL,
    -- JSON array of pause_apps, refuse_new
    actions          TEXT NOT NULL,
    notify_emails    TEXT NOT NULL,
    period           TEXT NOT NULL DEFAULT '',
    notified_percent BIGINT NOT NULL DEFAULT 0,
    spent_cents      DOUBLE PRECISION,
    evaluated_at     BIGINT,
    limited_at       BIGINT,
    resumed_period   TEXT NOT NULL DEFAULT '',
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    UNIQUE (org_id, scope)
);

-- The apps a budget's action paused, until `POST /spend/resume`.
CREATE TABLE spend_paused (
    org_id    TEXT NOT NULL REFERENCES organizations (id),
    budget_id TEXT NOT NULL,
    app_id    TEXT NOT NULL,
    app_name  TEXT NOT NULL,
    paused_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, app_id)
);
