-- The series store (issue 34): one row per organisation, resource, metric
-- and UTC day, holding the quantity consumed that day. Every reporter adds
-- increments (an upsert that sums), in batches, from the process that
-- observes them: the agent for what runs on a host, the API process for
-- plugin fuel and S3 requests. Gauges (GB stored) are integrated over time
-- by their reporter and kept as GB-hours, so every metric is additive.
CREATE TABLE usage_points (
    org_id        TEXT NOT NULL,
    resource_id   TEXT NOT NULL,
    metric        TEXT NOT NULL,
    day           TEXT NOT NULL,
    -- app, database, cache, bucket, registry or plugin
    resource_type TEXT NOT NULL,
    project_id    TEXT,
    quantity      DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (org_id, resource_id, metric, day)
);
CREATE INDEX usage_points_org_day ON usage_points (org_id, day);
