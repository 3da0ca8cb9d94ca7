-- Runners and the placement of apps (issue 31): each agent registers its
-- host as a runner and renews a heartbeat lease; an app's replicas run on
-- the runner of its placement, and every other host's edge forwards its
-- requests to that runner's edge. A migration names a target runner until
-- the target serves the app and the placement switches to it.

CREATE TABLE runners (
    id TEXT PRIMARY KEY,
    edge_address TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
);

CREATE TABLE app_placements (
    app_id TEXT PRIMARY KEY,
    runner_id TEXT NOT NULL,
    target_runner_id TEXT,
    migration_started_at INTEGER,
    switched_at INTEGER,
    updated_at INTEGER NOT NULL
);

CREATE INDEX app_placements_runner ON app_placements (runner_id);
