-- Apps (spec sections 3 and 4.4): the app, its deployments, the
-- components they run, the sealed environment and the runtime logs.

CREATE TABLE apps (
    id                 TEXT PRIMARY KEY,
    org_id             TEXT NOT NULL REFERENCES organizations (id),
    project_id         TEXT NOT NULL REFERENCES projects (id),
    name               TEXT NOT NULL,
    -- Fixed at creation: the host name <slug>.<apps domain>.
    slug               TEXT NOT NULL UNIQUE,
    source_type        TEXT NOT NULL,
    image              TEXT,
    repo               TEXT,
    branch             TEXT,
    port               BIGINT,
    health_check_path  TEXT NOT NULL,
    -- created, deploying, running, failed, paused
    status             TEXT NOT NULL,
    replicas           BIGINT NOT NULL,
    memory_mb          BIGINT NOT NULL,
    milli_cpu          BIGINT NOT NULL,
    live_deployment_id TEXT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    -- Set while the app is in the trash.
    deleted_at         BIGINT
);
CREATE INDEX apps_by_org ON apps (org_id, id);

CREATE TABLE app_deployments (
    id          TEXT PRIMARY KEY,
    app_id      TEXT NOT NULL REFERENCES apps (id),
    org_id      TEXT NOT NULL,
    -- pending, live, superseded, failed
    status      TEXT NOT NULL,
    -- deploy, rollback, env, resume, restore
    cause       TEXT NOT NULL,
    source_type TEXT NOT NULL,
    image       TEXT,
    -- The manifest digest the image resolved to.
    digest      TEXT,
    -- The component's digest (a key of app_components).
    component   TEXT,
    reason      TEXT,
    created_at  BIGINT NOT NULL,
    live_at     BIGINT,
    finished_at BIGINT
);
CREATE INDEX app_deployments_by_app ON app_deployments (app_id, id);

-- Components pulled for deployments, kept so that rollbacks, resumes and
-- restarts never reach the registry again.
CREATE TABLE app_components (
    org_id     TEXT NOT NULL,
    digest     TEXT NOT NULL,
    wasm       BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, digest)
);

CREATE TABLE app_env (
    app_id     TEXT NOT NULL REFERENCES apps (id),
    name       TEXT NOT NULL,
    -- The value sealed with the host key, bound to the app and the name.
    sealed     BYTEA NOT NULL,
    target     TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (app_id, name)
);

CREATE TABLE app_logs (
    id         TEXT PRIMARY KEY,
    app_id     TEXT NOT NULL,
    deployment TEXT NOT NULL,
    stream     TEXT NOT NULL,
    line       TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX app_logs_by_app ON app_logs (app_id, id);

-- Plan maxima of one app's resources (spec section 8: clamped to plan).
CREATE TABLE app_plan_limits (
    plan      TEXT PRIMARY KEY REFERENCES plans (name),
    memory_mb BIGINT NOT NULL,
    milli_cpu BIGINT NOT NULL,
    replicas  BIGINT NOT NULL
);
INSERT INTO app_plan_limits VALUES
    ('free',     256,  250,  1),
    ('starter',  512,  500,  2),
    ('pro',     2048, 2000,  4),
    ('scale',   4096, 4000, 10);
