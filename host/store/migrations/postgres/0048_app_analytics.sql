-- Web analytics at the edge (issue 35): whether the edge reports the
-- page views of an app (its HTML GET answers) to the analytics plugin.
-- The plugin keeps sites and counts; this row is only the edge's switch.
CREATE TABLE app_analytics (
    app_id     TEXT PRIMARY KEY,
    -- 1 when on (the Any driver has no booleans).
    enabled    BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL
);
