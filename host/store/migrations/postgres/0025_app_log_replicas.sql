-- Each runtime log line names the replica that printed it (issue 31,
-- "Builds and logs"); lines of Wasm apps, which run an instance per
-- request, name none.
ALTER TABLE app_logs ADD COLUMN replica TEXT;
