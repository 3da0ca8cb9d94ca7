-- GET /metrics over a year of daily points (issue 34): one index per way
-- the series is read, each in the order the answer is sorted (day,
-- resource, metric), so that the planner needs no statistics to pick it
-- and a page (LIMIT after a keyset position) stops after its rows. Before,
-- a query on one resource or one project walked every point of the
-- organisation in the range through (org_id, day) and sorted them.
-- quantity rides in the organisation-wide and per-metric indexes so that
-- the totals of a range (GROUP BY metric, SUM) read the index alone.
DROP INDEX usage_points_org_day;
-- The organisation's points by day; the first page's totals.
CREATE INDEX usage_points_org_day ON usage_points (org_id, day, resource_id, metric, quantity);
-- One metric (metric=, alarms, anomalies, the derived CDN hit ratio).
CREATE INDEX usage_points_org_metric ON usage_points (org_id, metric, day, resource_id, quantity);
-- One project (project=, project-scoped tokens, project spend).
CREATE INDEX usage_points_org_project ON usage_points (org_id, project_id, day, resource_id, metric);
-- One resource (resource=), by day; the primary key orders it by metric.
CREATE INDEX usage_points_org_resource ON usage_points (org_id, resource_id, day, metric);
