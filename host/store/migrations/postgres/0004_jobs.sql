-- Durable plugin jobs (postgres): jobs plugins schedule through the `scheduler`
-- capability, and the ticks of the schedules in their descriptions. Keep in
-- step with ../sqlite/0004_jobs.sql.

-- namespace is an organisation id, or '' for global jobs; kind is 'job' or
-- 'tick'. A host claims a due job by setting lease_until (milliseconds) and
-- lease_owner; an expired lease makes the job claimable again, so a job runs
-- at least once even if its host dies. version grows on every schedule, so
-- the end of a run of a replaced job changes nothing.
CREATE TABLE plugin_jobs (
    plugin      TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    kind        TEXT NOT NULL,
    key         TEXT NOT NULL,
    due         BIGINT NOT NULL,
    every_ms    BIGINT,
    payload     TEXT NOT NULL,
    attempt     INTEGER NOT NULL DEFAULT 0,
    version     BIGINT NOT NULL DEFAULT 1,
    lease_until BIGINT NOT NULL DEFAULT 0,
    lease_owner TEXT,
    PRIMARY KEY (plugin, namespace, kind, key)
);

CREATE INDEX plugin_jobs_due ON plugin_jobs (due);
