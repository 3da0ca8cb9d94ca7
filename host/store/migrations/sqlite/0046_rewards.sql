-- Rewards and referrals (spec 4.3, issue 34): the lines the operator
-- configures (which actions pay and how much), each organisation's
-- account (its balance, referral code, clicks and sign-ups), the
-- submissions that claim a line, and the redemptions of the balance as
-- credit or gift card. Money is in integer cents.

-- A line: `kind` says how a claim is verified from the platform's own
-- records: `event` (the organisation's timeline has an event of
-- `event_type`), `usage` (the series store holds at least `threshold` of
-- `metric` in a month), `resource` (a live resource of `resource_type`
-- exists), `referral` (credited when an organisation is created with the
-- organisation's referral code; never claimed by hand).
CREATE TABLE reward_lines (
    id              TEXT PRIMARY KEY,
    -- the `reason` a claim names
    key             TEXT NOT NULL UNIQUE,
    title           TEXT NOT NULL,
    description     TEXT NOT NULL,
    kind            TEXT NOT NULL,
    event_type      TEXT,
    resource_type   TEXT,
    metric          TEXT,
    threshold       REAL,
    amount_cents    INTEGER NOT NULL,
    requires_review INTEGER NOT NULL,
    -- claims per organisation that are not rejected
    max_claims      INTEGER NOT NULL,
    enabled         INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
-- One referral line at most.
CREATE UNIQUE INDEX reward_lines_one_referral ON reward_lines (kind) WHERE kind = 'referral';

-- An organisation's account, made on its first use. `balance_cents` is
-- approved earnings less redemptions not cancelled; a redemption takes
-- from it with a conditional update, so it never goes below zero.
CREATE TABLE reward_accounts (
    org_id        TEXT PRIMARY KEY REFERENCES organizations (id),
    referral_code TEXT NOT NULL UNIQUE,
    balance_cents INTEGER NOT NULL DEFAULT 0,
    clicks        INTEGER NOT NULL DEFAULT 0,
    signups       INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

-- A claim of a line: pending (awaiting the operator's review), approved
-- (credited) or rejected. `evidence` is what the platform's records
-- showed (`event:evt_…`, `resource:app_…`, `usage:2026-11`,
-- `signup:org_…`); one piece of evidence backs one live claim of a line.
CREATE TABLE reward_submissions (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES organizations (id),
    line_id      TEXT NOT NULL REFERENCES reward_lines (id),
    reason       TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    status       TEXT NOT NULL,
    evidence     TEXT NOT NULL,
    -- JSON object the claimant sent
    details      TEXT NOT NULL,
    note         TEXT,
    actor_id     TEXT,
    created_at   INTEGER NOT NULL,
    reviewed_at  INTEGER
);
CREATE INDEX reward_submissions_by_org ON reward_submissions (org_id, id);
CREATE INDEX reward_submissions_by_status ON reward_submissions (status, id);
CREATE UNIQUE INDEX reward_submissions_evidence ON reward_submissions (org_id, line_id, evidence)
    WHERE status <> 'rejected';

-- A redemption: `credit` (applied, lowering the invoices from `period`,
-- the month it was made, on) or `giftcard` (pending until the operator
-- fulfils or cancels it; a cancelled one returns its amount).
CREATE TABLE reward_redemptions (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES organizations (id),
    kind         TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    status       TEXT NOT NULL,
    -- YYYY-MM (UTC) of the redemption
    period       TEXT NOT NULL,
    note         TEXT,
    created_at   INTEGER NOT NULL,
    settled_at   INTEGER
);
CREATE INDEX reward_redemptions_by_org ON reward_redemptions (org_id, id);
CREATE INDEX reward_redemptions_by_status ON reward_redemptions (status, id);
