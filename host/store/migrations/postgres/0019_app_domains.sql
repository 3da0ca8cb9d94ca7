-- Custom domains of apps, and the ACME accounts their certificates are
-- issued under (issue 30) (postgres).
-- Keep in step with ../sqlite/0021_app_domains.sql.

-- One row per attached domain; the primary key makes a domain belong to
-- one app of one organisation. `verified_at` is set once the DNS records
-- were seen; the host's agent then obtains a certificate over ACME and
-- stores it sealed (the chain and its key, one PEM text) in `cert_sealed`.
CREATE TABLE app_domains (
    domain            TEXT PRIMARY KEY,
    app_id            TEXT NOT NULL REFERENCES apps (id),
    org_id            TEXT NOT NULL,
    -- The ownership token a TXT record must carry.
    token             TEXT NOT NULL,
    verified_at       BIGINT,
    -- What the last check of the records saw missing.
    dns_detail        TEXT,
    cert_sealed       BYTEA,
    cert_expires_at   BIGINT,
    cert_issued_at    BIGINT,
    -- Why the last issuance failed, and when the next try is due.
    cert_error        TEXT,
    cert_attempts     BIGINT NOT NULL DEFAULT 0,
    cert_next_at      BIGINT NOT NULL DEFAULT 0,
    -- An issuance in progress on some host holds the domain until then.
    cert_lease_until  BIGINT NOT NULL DEFAULT 0,
    -- The HTTP-01 challenge of the issuance in progress.
    challenge_token   TEXT,
    challenge_answer  TEXT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
CREATE INDEX app_domains_by_app ON app_domains (app_id, domain);

-- The ACME account of each directory, its credentials sealed.
CREATE TABLE acme_accounts (
    directory  TEXT PRIMARY KEY,
    sealed     BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);
