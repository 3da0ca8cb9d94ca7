-- Cache snapshots outlive their cache (issue 29, section 6): the row no
-- longer cascades with the cache; it keeps the cache's name and settings
-- (defaults of a restore into a new cache), and `expires_at` is set when
-- the cache is deleted (kept until then, swept after).
ALTER TABLE cache_snapshots DROP CONSTRAINT cache_snapshots_cache_id_fkey;
ALTER TABLE cache_snapshots ADD COLUMN cache_name TEXT NOT NULL DEFAULT '';
ALTER TABLE cache_snapshots ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';
ALTER TABLE cache_snapshots ADD COLUMN expires_at BIGINT;
UPDATE cache_snapshots s SET cache_name = c.name FROM caches c WHERE c.id = s.cache_id;
CREATE INDEX cache_snapshots_org ON cache_snapshots (org_id, id);
CREATE INDEX cache_snapshots_expiry ON cache_snapshots (expires_at);
