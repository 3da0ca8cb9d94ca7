-- Desired state of managed services (issue 29) (sqlite).
-- Keep in step with ../postgres/0016_desired_state.sql.

-- The API records what the user asked for and bumps `generation`; the
-- host's reconciler drives the provider toward it and records what it
-- observed in `status` (creating, running, updating, degraded, deleting,
-- failed) with `status_detail`, the reason of a failure. A row being
-- created has an empty `placement` until the provider has placed it.
ALTER TABLE caches ADD COLUMN status_detail TEXT;
ALTER TABLE caches ADD COLUMN generation INTEGER NOT NULL DEFAULT 1;
ALTER TABLE databases ADD COLUMN status_detail TEXT;
ALTER TABLE databases ADD COLUMN generation INTEGER NOT NULL DEFAULT 1;
