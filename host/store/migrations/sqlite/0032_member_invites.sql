-- Invitations to join an organisation (issue 34): the link's secret is
-- kept as its SHA-256 only; an invitation is accepted once, before it
-- expires, unless revoked. Removing a member deletes their membership row
-- (their tokens then fail to authenticate) and keeps their user row.
CREATE TABLE member_invites (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES organizations (id),
    email         TEXT NOT NULL,
    role          TEXT NOT NULL,
    secret_hash   TEXT NOT NULL UNIQUE,
    invited_by    TEXT,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    accepted_at   INTEGER,
    accepted_user TEXT,
    revoked_at    INTEGER
);
CREATE INDEX member_invites_by_org ON member_invites (org_id, id);
