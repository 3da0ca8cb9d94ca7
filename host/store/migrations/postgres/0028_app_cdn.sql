-- An app's edge CDN (issue 30): whether the edge caches its GET and HEAD
-- answers, and how many purges were asked for. The agent follows both:
-- it applies each purge it has not applied yet, in order (`seq`).
CREATE TABLE app_cdn (
    app_id     TEXT PRIMARY KEY REFERENCES apps (id),
    -- 1 when on (the Any driver has no booleans).
    enabled    BIGINT NOT NULL DEFAULT 0,
    -- The `seq` of the last purge asked for (0: none).
    purges     BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL
);

-- The purges asked for, by path prefix; the latest ones are kept (an
-- agent further behind purges everything of the app).
CREATE TABLE app_cdn_purges (
    app_id     TEXT NOT NULL REFERENCES apps (id),
    seq        BIGINT NOT NULL,
    prefix     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (app_id, seq)
);
