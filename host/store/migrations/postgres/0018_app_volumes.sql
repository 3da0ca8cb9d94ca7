-- Volumes of apps and their backups (issue 31) (postgres).
-- Keep in step with ../sqlite/0018_app_volumes.sql.

-- A volume is a managed resource of the kernel (desired state): the API
-- writes the row (`creating`, or `deleting` with a new generation) and
-- the agent of `host_id` makes the ext4 image, mounts it, and records
-- `running` with its `placement` (the image and mount point, JSON).
-- `replicas` is the kernel's shape (one image per volume). A volume
-- restored from a backup names it in `source_backup_id`.
CREATE TABLE app_volumes (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES organizations(id),
    app_id           TEXT NOT NULL REFERENCES apps(id),
    name             TEXT NOT NULL,
    size_gb          BIGINT NOT NULL,
    mount_path       TEXT NOT NULL,
    host_id          TEXT NOT NULL,
    source_backup_id TEXT,
    status           TEXT NOT NULL,
    status_detail    TEXT,
    generation       BIGINT NOT NULL DEFAULT 1,
    replicas         BIGINT NOT NULL DEFAULT 1,
    placement        TEXT NOT NULL DEFAULT '',
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    UNIQUE (app_id, name),
    UNIQUE (app_id, mount_path)
);
CREATE INDEX app_volumes_host ON app_volumes (host_id);

-- Consistent snapshots of a volume's image, their bytes in the volume
-- backup store under `object_key`; they outlive the volume.
CREATE TABLE app_volume_backups (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organizations(id),
    app_id      TEXT NOT NULL,
    volume_id   TEXT NOT NULL,
    volume_name TEXT NOT NULL,
    mount_path  TEXT NOT NULL,
    size_gb     BIGINT NOT NULL,
    object_key  TEXT NOT NULL,
    size_bytes  BIGINT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX app_volume_backups_volume ON app_volume_backups (volume_id);
