-- Object storage (PostgreSQL). Keep in step with ../sqlite/0006_storage.sql.
-- Bytes live in the object store under the keys of `blobs`; everything
-- else (names, sizes, headers, usage) is here.

-- A bucket: `name` is what the organisation chose, `bucket` the S3 name
-- clients use (`<prefix>-<org>-<name>-<suffix>`), unique on the platform.
CREATE TABLE storage_buckets (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    project_id TEXT,
    name       TEXT NOT NULL,
    bucket     TEXT NOT NULL UNIQUE,
    bytes      BIGINT NOT NULL DEFAULT 0,
    objects    BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    UNIQUE (org_id, name)
);

-- The organisation's total, locked first by every write that changes it,
-- so that the plan's limit holds across buckets and hosts. `bytes` counts
-- objects and the parts of unfinished multipart uploads.
CREATE TABLE storage_usage (
    org_id  TEXT PRIMARY KEY REFERENCES organizations (id),
    bytes   BIGINT NOT NULL DEFAULT 0,
    objects BIGINT NOT NULL DEFAULT 0
);

-- Access keys. The secret is sealed with the host's key (SigV4 needs the
-- secret itself); `buckets` is a JSON array of bucket ids, or NULL for all.
CREATE TABLE storage_keys (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES organizations (id),
    name          TEXT NOT NULL,
    access_key_id TEXT NOT NULL UNIQUE,
    secret_sealed TEXT NOT NULL,
    secret_hint   TEXT NOT NULL,
    read_only     BIGINT NOT NULL,
    buckets       TEXT,
    created_at    BIGINT NOT NULL
);
CREATE INDEX storage_keys_org ON storage_keys (org_id);

-- Objects, listed in key byte order (the "C" collation). `blobs` is a JSON array of
-- [object store key, size] segments (one, or one per multipart part);
-- `headers` holds content headers, user metadata and checksums as JSON.
CREATE TABLE storage_objects (
    bucket_id   TEXT NOT NULL,
    key         TEXT COLLATE "C" NOT NULL,
    size        BIGINT NOT NULL,
    etag        TEXT NOT NULL,
    blobs       TEXT NOT NULL,
    headers     TEXT NOT NULL,
    modified_at BIGINT NOT NULL,
    PRIMARY KEY (bucket_id, key)
);

CREATE TABLE storage_uploads (
    id         TEXT PRIMARY KEY,
    bucket_id  TEXT NOT NULL,
    org_id     TEXT NOT NULL,
    key        TEXT COLLATE "C" NOT NULL,
    headers    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX storage_uploads_bucket ON storage_uploads (bucket_id, key);

CREATE TABLE storage_parts (
    upload_id   TEXT NOT NULL,
    part_number BIGINT NOT NULL,
    size        BIGINT NOT NULL,
    etag        TEXT NOT NULL,
    blob        TEXT NOT NULL,
    checksums   TEXT NOT NULL,
    modified_at BIGINT NOT NULL,
    PRIMARY KEY (upload_id, part_number)
);
