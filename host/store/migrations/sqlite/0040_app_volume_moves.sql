-- Volumes moving between runners (issue 31) (sqlite).
-- Keep in step with ../postgres/0040_app_volume_moves.sql.

-- A volume moving with its app to another runner (issue 31): the source
-- runner stopped the app's replicas, stored a snapshot of the volume's
-- image under `object_key` in the volume backup store and handed the
-- volume's row to `to_host_id` (which restores the snapshot into a new
-- image), keeping `from_placement` (its image and mount point there). The
-- row goes when the placement switches (the source then removes its
-- image) or when the migration fails (the volume goes back, as it was).
CREATE TABLE app_volume_moves (
    volume_id      TEXT PRIMARY KEY,
    app_id         TEXT NOT NULL,
    from_host_id   TEXT NOT NULL,
    to_host_id     TEXT NOT NULL,
    from_placement TEXT NOT NULL,
    object_key     TEXT NOT NULL,
    size_bytes     INTEGER NOT NULL,
    created_at     INTEGER NOT NULL
);
CREATE INDEX app_volume_moves_app ON app_volume_moves (app_id);
