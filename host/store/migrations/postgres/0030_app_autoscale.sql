-- An app's autoscale setting (issue 31): the agent moves `apps.replicas`
-- between `min_replicas` and `max_replicas` on the replicas' CPU against
-- `cpu_target_pct`; with `min_replicas` 0 an idle app goes to zero
-- replicas and the edge wakes it on the next request.
CREATE TABLE app_autoscale (
    app_id         TEXT PRIMARY KEY REFERENCES apps (id),
    -- 1 when the agent scales the app (the Any driver has no booleans).
    enabled        BIGINT NOT NULL DEFAULT 0,
    min_replicas   BIGINT NOT NULL,
    max_replicas   BIGINT NOT NULL,
    cpu_target_pct BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
