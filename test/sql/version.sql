--
-- The server names the patch set next to the PostgreSQL version, and leaves
-- the settings that clients parse alone.  The major release is the one of
-- server_version_num, which the last query shows: 17 (expected/version.out)
-- or 18 (expected/version_1.out, the series of patches/18).
--
SELECT version() ~ ('^PostgreSQL ' ||
					current_setting('server_version_num')::int / 10000 ||
					'\.[0-9]+ \(pgstrata [0-9]+\.[0-9]+\) on ')
	AS version_names_pgstrata;
SELECT current_setting('server_version') ~ ('^' ||
					current_setting('server_version_num')::int / 10000 ||
					'\.[0-9]+$')
	AS server_version_is_upstream;
SELECT current_setting('server_version_num')::int / 10000 AS major;
