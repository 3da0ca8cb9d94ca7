-- Cache snapshots outlive their cache (issue 29, section 6): the row no
-- longer cascades with the cache; it keeps the cache's name and settings
-- (defaults of a restore into a new cache), and `expires_at` is set when
-- the cache is deleted (kept until then, swept after). SQLite cannot drop
-- a foreign key, so the table is made again.
CREATE TABLE cache_snapshots_next (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organizations(id),
    cache_id   TEXT NOT NULL,
    cache_name TEXT NOT NULL DEFAULT '',
    settings   TEXT NOT NULL DEFAULT '{}',
    object_key TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER
);
INSERT INTO cache_snapshots_next (id, org_id, cache_id, cache_name, object_key, size_bytes, created_at)
    SELECT s.id, s.org_id, s.cache_id, COALESCE(c.name, ''), s.object_key, s.size_bytes, s.created_at
    FROM cache_snapshots s LEFT JOIN caches c ON c.id = s.cache_id;
DROP TABLE cache_snapshots;
ALTER TABLE cache_snapshots_next RENAME TO cache_snapshots;
CREATE INDEX cache_snapshots_cache ON cache_snapshots (cache_id, id);
CREATE INDEX cache_snapshots_org ON cache_snapshots (org_id, id);
CREATE INDEX cache_snapshots_expiry ON cache_snapshots (expires_at);
