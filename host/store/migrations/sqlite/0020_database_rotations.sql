-- Password rotation of managed PostgreSQL (issue 32): which of a
-- database's two login roles the connection details name (its owner role,
-- or the host-made one that acts as it), the one whose password stops at
-- `retire_at` (the overlap in which both passwords work), and the
-- schedule. The current password is the database's sealed owner password.
CREATE TABLE database_rotations (
    database_id   TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    -- Days between scheduled rotations; 0: only on demand.
    interval_days INTEGER NOT NULL DEFAULT 0,
    -- The role the connection details name; '': the owner role.
    login_role    TEXT NOT NULL DEFAULT '',
    -- The role whose password is removed at retire_at; '': none.
    retiring_role TEXT NOT NULL DEFAULT '',
    retire_at     INTEGER,
    rotated_at    INTEGER,
    updated_at    INTEGER NOT NULL
);
