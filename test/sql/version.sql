--
-- The server names the patch set next to the PostgreSQL version, and leaves
-- the settings that clients parse alone.
--
SELECT version() ~ '^PostgreSQL 17\.[0-9]+ \(pgstrata [0-9]+\.[0-9]+\) on '
	AS version_names_pgstrata;
SELECT current_setting('server_version') ~ '^17\.[0-9]+$'
	AS server_version_is_upstream;
SELECT current_setting('server_version_num')::int / 10000 AS major;
