-- Bot policies (issue 35): an organisation's (app_id '') and each app's
-- own, which replaces the organisation's for that app. `policy` is the
-- JSON the API shows (plateau_apps::bots::BotPolicy). The decisions the
-- edges take go to waf_events, under rule ids `bots.<class>`.
CREATE TABLE bot_policies (
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    app_id     TEXT NOT NULL DEFAULT '',
    policy     TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (org_id, app_id)
);
