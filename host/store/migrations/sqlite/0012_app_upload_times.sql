-- App source uploads (issue 15): PostgreSQL's columns of app_uploads
-- become 64-bit here; SQLite's INTEGER already is, so nothing changes.

SELECT 1;
