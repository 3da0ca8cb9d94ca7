-- A token's spend (issue 34, `maxCostCents`): which token's call created
-- each resource, and the exact cost attributed to each token, kept by the
-- usage writer in the transaction that adds the usage.
--
-- `token_resources` is written with the resource's `create` event when a
-- token is the actor; it starts from the events recorded so far.
CREATE TABLE token_resources (
    resource_id TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    token_id    TEXT NOT NULL
);
CREATE INDEX token_resources_by_token ON token_resources (token_id);

INSERT INTO token_resources (resource_id, org_id, token_id)
SELECT resource_id, MIN(org_id), MIN(actor_id) FROM events
WHERE action = 'create' AND actor_type = 'token'
  AND resource_id IS NOT NULL AND actor_id IS NOT NULL
GROUP BY resource_id;

-- Cents at list price, unrounded; `spent_cents` is its ceiling. NULL for
-- the tokens that predate this migration until their first charge or
-- read settles them from the whole series (plateau_store::token_spend).
ALTER TABLE tokens ADD COLUMN spent_exact DOUBLE PRECISION DEFAULT 0;
UPDATE tokens SET spent_exact = NULL;
