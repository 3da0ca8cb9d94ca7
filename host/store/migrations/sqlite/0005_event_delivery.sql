-- Delivery of timeline events to the plugins that subscribe to them (sqlite).
-- Keep in step with ../postgres/0005_event_delivery.sql.

-- One row per subscribing plugin: the id of the last event it has seen
-- (ids sort by creation time), the attempts at the event after it, and a
-- lease so that one host at a time delivers a plugin's events, in order.
CREATE TABLE plugin_event_cursors (
    plugin      TEXT PRIMARY KEY,
    position    TEXT NOT NULL,
    attempt     INTEGER NOT NULL DEFAULT 0,
    not_before  INTEGER NOT NULL DEFAULT 0,
    lease_until INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT
);
