-- The hosts of a deployment (issue 29): one identity per host, made once
-- and kept in its data directory; resources it runs carry it.

CREATE TABLE hosts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    seen_at INTEGER NOT NULL
);
