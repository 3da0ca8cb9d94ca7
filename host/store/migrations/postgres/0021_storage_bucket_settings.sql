-- Object storage II (issue 37): a bucket's S3 configurations, one row per
-- kind (`cors`, `tagging`, `acl`), the body as JSON. Deleted with the
-- bucket. Object tags and ACLs live in the object's `headers`.
CREATE TABLE storage_bucket_settings (
    bucket_id  TEXT NOT NULL,
    kind       TEXT NOT NULL,
    body       TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (bucket_id, kind)
);
