-- Logical replication of managed PostgreSQL (issue 32): the subscriptions
-- the host made in a database. The subscription itself lives in the
-- subscriber's catalog (its connection string, with the password of the
-- role the host made on the source, only there); this row keeps what the
-- API shows and what dropping it must undo on the source.
CREATE TABLE database_subscriptions (
    database_id        TEXT NOT NULL,
    name               TEXT NOT NULL,
    org_id             TEXT NOT NULL,
    -- The Plateau database replicated from; NULL for a connection string.
    source_database_id TEXT,
    -- host:port/dbname of the source (never a password).
    source_display     TEXT NOT NULL,
    publication        TEXT NOT NULL,
    -- The role the host made on a Plateau source for this subscription,
    -- whose name is also the replication slot's; '' for a connection string.
    source_role        TEXT NOT NULL DEFAULT '',
    slot_name          TEXT NOT NULL,
    -- 1 when the tables were copied first (the Any driver has no booleans).
    copy_data          INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    PRIMARY KEY (database_id, name)
);
CREATE INDEX database_subscriptions_source ON database_subscriptions (source_database_id);
