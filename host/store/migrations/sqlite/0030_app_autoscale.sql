-- An app's autoscale setting (issue 31): the agent moves `apps.replicas`
-- between `min_replicas` and `max_replicas` on the replicas' CPU against
-- `cpu_target_pct`; with `min_replicas` 0 an idle app goes to zero
-- replicas and the edge wakes it on the next request.
CREATE TABLE app_autoscale (
    app_id         TEXT PRIMARY KEY REFERENCES apps (id),
    -- 1 when the agent scales the app (the Any driver has no booleans).
    enabled        INTEGER NOT NULL DEFAULT 0,
    min_replicas   INTEGER NOT NULL,
    max_replicas   INTEGER NOT NULL,
    cpu_target_pct INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
