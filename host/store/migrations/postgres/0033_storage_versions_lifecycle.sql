-- Object storage: versioning and lifecycle (issue 37). A bucket's versioning state is its
-- `versioning` row in storage_bucket_settings ("Enabled" or "Suspended";
-- none: never enabled). The current version of a key stays its row in
-- storage_objects, with its version id ('null' for the null version);
-- noncurrent versions and delete markers are rows here, the newest with
-- the highest `seq`. Every version's bytes count in the usage.
ALTER TABLE storage_objects ADD COLUMN version_id TEXT NOT NULL DEFAULT 'null';

CREATE TABLE storage_versions (
    bucket_id     TEXT NOT NULL,
    key           TEXT NOT NULL,
    version_id    TEXT NOT NULL,
    seq           BIGINT NOT NULL,
    delete_marker BIGINT NOT NULL,
    size          BIGINT NOT NULL,
    etag          TEXT NOT NULL,
    blobs         TEXT NOT NULL,
    headers       TEXT NOT NULL,
    modified_at   BIGINT NOT NULL,
    PRIMARY KEY (bucket_id, key, version_id)
);
CREATE INDEX storage_versions_seq ON storage_versions (bucket_id, key, seq);

-- Lifecycle (issue 37): a bucket's rules are its `lifecycle` setting; the
-- job that applies them leases each bucket here, so that one host at a
-- time runs it, at most once per interval (`ran_at`).
CREATE TABLE storage_lifecycle_runs (
    bucket_id   TEXT PRIMARY KEY,
    lease_owner TEXT NOT NULL,
    lease_until BIGINT NOT NULL,
    ran_at      BIGINT NOT NULL
);
