-- Git links of apps (issue 31, "Git link"): a push webhook in GitHub's
-- format, signed with a per-link secret, deploys the linked branch. The
-- repository and branch are the app's own (apps.repo, apps.branch).
CREATE TABLE app_git_links (
    app_id     TEXT PRIMARY KEY REFERENCES apps (id),
    org_id     TEXT NOT NULL,
    -- The webhook secret, sealed with the host key, bound to the app.
    secret     BYTEA NOT NULL,
    -- Who linked: the deployments a push starts build and push with the
    -- rights of this token, and stop when it is revoked.
    token_id   TEXT NOT NULL,
    user_id    TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- Deliveries seen, by GitHub's X-GitHub-Delivery: a replay is ignored.
CREATE TABLE app_git_deliveries (
    app_id      TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (app_id, delivery_id)
);
