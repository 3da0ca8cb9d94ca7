-- App source uploads (issue 15): times in milliseconds and sizes in bytes
-- need 64 bits; 0011 made them PostgreSQL's 32-bit INTEGER.

ALTER TABLE app_uploads ALTER COLUMN stored_at TYPE BIGINT;
ALTER TABLE app_uploads ALTER COLUMN bytes TYPE BIGINT;
ALTER TABLE app_uploads ALTER COLUMN expires_at TYPE BIGINT;
ALTER TABLE app_uploads ALTER COLUMN created_at TYPE BIGINT;
