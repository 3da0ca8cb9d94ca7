-- An app's edge rules (issue 30): redirects, rewrites and response
-- headers, applied by the edge in list order (their ids) while the app's
-- scale-out is on. `spec` is the rule as the API shows it (JSON).
CREATE TABLE app_rules (
    id         TEXT PRIMARY KEY,
    app_id     TEXT NOT NULL REFERENCES apps (id),
    spec       TEXT NOT NULL,
    -- 1 when the edge applies it (the Any driver has no booleans).
    enabled    INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX app_rules_by_app ON app_rules (app_id, id);

-- Whether the central edge serves the app with its rules (spec: scale-out).
CREATE TABLE app_edge_settings (
    app_id     TEXT PRIMARY KEY REFERENCES apps (id),
    scale_out  INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL
);
