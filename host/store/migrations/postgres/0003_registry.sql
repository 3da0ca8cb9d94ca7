-- The container registry (PostgreSQL). Keep in step with ../sqlite/0003_registry.sql.
-- Names and tags use the "C" collation: lists are in byte order, as the spec asks.
-- Repository names are full names, "<org id>/<path>"; digests are
-- "<algorithm>:<hex>". Blob content lives in the object store under
-- object_key; manifests are kept here byte for byte.

CREATE TABLE registry_repositories (
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    name       TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, name)
);

-- Content stored once per organisation. touched_at restarts GC's grace
-- period whenever an upload, mount or manifest uses the blob.
CREATE TABLE registry_blobs (
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    digest     TEXT NOT NULL,
    size       BIGINT NOT NULL,
    object_key TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    touched_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, digest)
);

-- The blobs a repository may serve (pushed to it, mounted into it, or
-- referenced by one of its manifests).
CREATE TABLE registry_repository_blobs (
    repository TEXT NOT NULL,
    digest     TEXT NOT NULL,
    org_id     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (repository, digest)
);

CREATE TABLE registry_manifests (
    repository    TEXT NOT NULL,
    digest        TEXT NOT NULL,
    org_id        TEXT NOT NULL,
    media_type    TEXT NOT NULL,
    artifact_type TEXT,
    subject       TEXT,
    annotations   TEXT,
    size          BIGINT NOT NULL,
    content       BYTEA NOT NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (repository, digest)
);
CREATE INDEX registry_blobs_by_key ON registry_blobs (object_key);
CREATE INDEX registry_manifests_by_subject ON registry_manifests (repository, subject);
CREATE INDEX registry_manifests_by_org ON registry_manifests (org_id);

-- Blobs and child manifests a manifest references: what GC keeps.
CREATE TABLE registry_manifest_references (
    repository TEXT NOT NULL,
    manifest   TEXT NOT NULL,
    digest     TEXT NOT NULL,
    org_id     TEXT NOT NULL,
    PRIMARY KEY (repository, manifest, digest)
);
CREATE INDEX registry_manifest_references_by_blob ON registry_manifest_references (org_id, digest);

CREATE TABLE registry_tags (
    repository TEXT NOT NULL,
    tag        TEXT COLLATE "C" NOT NULL,
    digest     TEXT NOT NULL,
    org_id     TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (repository, tag)
);

-- Unfinished uploads; parts is a JSON array of object keys in order.
CREATE TABLE registry_uploads (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL,
    repository TEXT NOT NULL,
    algorithm  TEXT NOT NULL,
    size       BIGINT NOT NULL,
    parts      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX registry_uploads_by_org ON registry_uploads (org_id);
CREATE INDEX registry_uploads_by_age ON registry_uploads (updated_at);
