-- Edge plugins (issue 35).
--
-- Edge-filter components: the operator's (org_id NULL, every organisation
-- may enable them) and each organisation's own. Stored once, read by the
-- agents, which load them into the plugin runtime.
CREATE TABLE edge_filters (
    id             TEXT PRIMARY KEY,
    org_id         TEXT REFERENCES organizations (id),
    name           TEXT NOT NULL,
    version        TEXT NOT NULL,
    digest         TEXT NOT NULL,
    wasm           BLOB NOT NULL,
    -- 1 when the filter asked for the response phase.
    response_phase INTEGER NOT NULL,
    created_at     INTEGER NOT NULL
);
CREATE INDEX edge_filters_by_org ON edge_filters (org_id, id);

-- The filters an app runs, in order (`position` from 0); `fail_mode` is
-- `open` or `closed`.
CREATE TABLE app_filters (
    app_id     TEXT NOT NULL REFERENCES apps (id),
    position   INTEGER NOT NULL,
    filter_id  TEXT NOT NULL REFERENCES edge_filters (id),
    fail_mode  TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, position)
);

-- Firewall rules: an expression (plateau-waf-expr) and an action
-- (`block`, `log`, `skip`, `challenge`), for one app or (app_id NULL) for
-- every app of the organisation; lower priorities run first.
CREATE TABLE waf_rules (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organizations (id),
    app_id      TEXT REFERENCES apps (id),
    description TEXT NOT NULL,
    expression  TEXT NOT NULL,
    action      TEXT NOT NULL,
    priority    INTEGER NOT NULL,
    enabled     INTEGER NOT NULL DEFAULT 1,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX waf_rules_by_org ON waf_rules (org_id, id);

-- What the rules matched, written by the agents: the request's facts
-- only (no body, no query string, no header but the user agent, the
-- client's address cut to its /24 or /48).
CREATE TABLE waf_events (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL,
    app_id     TEXT NOT NULL,
    rule_id    TEXT NOT NULL,
    action     TEXT NOT NULL,
    method     TEXT NOT NULL,
    host       TEXT NOT NULL,
    path       TEXT NOT NULL,
    client_net TEXT NOT NULL,
    user_agent TEXT NOT NULL,
    at         INTEGER NOT NULL
);
CREATE INDEX waf_events_by_org ON waf_events (org_id, id);

-- The managed rule set (plateau-waf-expr's MANAGED_RULES), switched on per
-- organisation with the action its matches take; it runs after the
-- organisation's own rules (a `skip` rule exempts requests from it).
CREATE TABLE waf_managed (
    org_id     TEXT PRIMARY KEY REFERENCES organizations (id),
    enabled    INTEGER NOT NULL,
    action     TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
