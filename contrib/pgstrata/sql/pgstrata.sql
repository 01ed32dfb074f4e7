--
-- The SQL interface of the pgstrata extension: the compression statistics
-- of a relation (pgstrata_relation_compression, the view
-- pgstrata_compression), the bulk I/O counters (pgstrata_bulk_io and its
-- reset) and the count of zstd TOAST values in the legacy encoding
-- (pgstrata_toast_legacy_values), on a compressed tablespace and on plain
-- relations, with their privileges and errors.
--
-- Sizes depend on the compressor's version, so they are checked against
-- each other and against the server's own size functions, not printed.
--
CREATE EXTENSION pgstrata;

-- what the extension installs, and who may call it
SELECT p.oid::regprocedure AS function, p.proisstrict AS strict,
	   p.proacl IS NULL AS default_acl,
	   has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pgstrata')
ORDER BY p.proname;
SELECT c.relname, c.relkind,
	   has_table_privilege('pg_read_all_stats', c.oid, 'SELECT') AS read_all_stats
FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.classid = 'pg_class'::regclass
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pgstrata')
ORDER BY 1;

SET allow_in_place_tablespaces = on;
CREATE TABLESPACE pgstrata_cts LOCATION '' WITH (compression = 'zstd');
CREATE TABLESPACE pgstrata_lz4 LOCATION '' WITH (compression = 'lz4');

-- a table, its index and its TOAST table in a compressed tablespace
CREATE TABLE ct (id int PRIMARY KEY USING INDEX TABLESPACE pgstrata_cts,
	v text, big text) TABLESPACE pgstrata_cts;
INSERT INTO ct SELECT g, repeat('compressible ', 20), NULL
FROM generate_series(1, 5000) g;
UPDATE ct SET big = (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 200) i)
WHERE id <= 10;
VACUUM ct;
CHECKPOINT;

-- one row per fork, each adding up
SELECT fork,
	   physical_bytes = pg_relation_size('ct', fork) AS physical_is_relation_size,
	   logical_bytes = logical_pages * 8192 AS logical_is_pages,
	   stored_pages + empty_pages = logical_pages AS pages_add_up,
	   raw_pages <= stored_pages AS raw_within_stored,
	   stored_bytes > 0 AND slack_bytes >= 0 AND garbage_bytes >= 0 AS bytes_known,
	   ratio = logical_bytes::float8 / physical_bytes AS ratio_is_quotient
FROM pgstrata_relation_compression('ct') ORDER BY fork;
SELECT logical_pages = (SELECT relpages FROM pg_class WHERE relname = 'ct')
	   AS logical_is_relpages,
	   ratio > 3 AS ratio_over_3, raw_pages = 0 AS none_raw
FROM pgstrata_relation_compression('ct') WHERE fork = 'main';
SELECT fork, ratio > 1 AS compressed
FROM pgstrata_relation_compression('ct_pkey') ORDER BY fork;
-- the TOAST table of ct follows its table into the tablespace
SELECT fork, logical_pages > 0 AS has_pages
FROM pgstrata_relation_compression((SELECT reltoastrelid FROM pg_class
									WHERE relname = 'ct'))
WHERE fork = 'main';

-- the view: every compressed fork of the database, with its tablespace
SELECT relation, relkind, tablespace, fork FROM pgstrata_compression
WHERE relation IN ('ct'::regclass, 'ct_pkey'::regclass) ORDER BY 1, 4;
SELECT count(*) = (SELECT count(*) FROM pgstrata_relation_compression('ct'))
	AS view_matches_function
FROM pgstrata_compression WHERE relation = 'ct'::regclass;

-- lz4, a temporary table, a materialized view (autovacuum would add forks
-- at a time of its choosing)
CREATE TABLE ct_lz4 (a int, b text) WITH (autovacuum_enabled = off)
	TABLESPACE pgstrata_lz4;
INSERT INTO ct_lz4 SELECT g, repeat('y', 100) FROM generate_series(1, 1000) g;
CREATE TEMP TABLE ct_temp (a int) TABLESPACE pgstrata_cts;
INSERT INTO ct_temp SELECT generate_series(1, 1000);
CREATE MATERIALIZED VIEW ct_mv WITH (autovacuum_enabled = off)
	TABLESPACE pgstrata_cts AS SELECT id FROM ct;
CHECKPOINT;
SELECT relation, relkind, tablespace, fork, ratio > 1 AS compressed
FROM pgstrata_compression
WHERE relation IN ('ct_lz4'::regclass, 'ct_temp'::regclass, 'ct_mv'::regclass)
ORDER BY 1, 4;

-- plain relations, and relations without storage, have no compressed fork
CREATE TABLE plain (a int PRIMARY KEY) WITH (autovacuum_enabled = off);
INSERT INTO plain SELECT generate_series(1, 1000);
CREATE VIEW v AS SELECT * FROM ct;
CREATE TABLE parted (a int) PARTITION BY RANGE (a) TABLESPACE pgstrata_cts;
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
CREATE SEQUENCE seq;
SELECT r AS relation, count(f.fork) AS compressed_forks
FROM unnest(ARRAY['plain', 'plain_pkey', 'v', 'parted', 'seq', 'pg_class']::regclass[]) r
	 LEFT JOIN LATERAL pgstrata_relation_compression(r) f ON true
GROUP BY r ORDER BY r::text;
-- a partition takes its parent's tablespace (compressed from its first row)
INSERT INTO parted VALUES (1);
SELECT count(*) > 0 AS partition_compressed
FROM pgstrata_relation_compression('parted_1');
-- plain copies leave the view, compressed copies join it
ALTER TABLE plain SET TABLESPACE pgstrata_cts;
ALTER TABLE ct_lz4 SET TABLESPACE pg_default;
SELECT relation, fork FROM pgstrata_compression
WHERE relation IN ('plain'::regclass, 'ct_lz4'::regclass) ORDER BY 1, 2;

-- NULL, a relation that does not exist, an OID without a relation
SELECT count(*) FROM pgstrata_relation_compression(NULL);
SELECT * FROM pgstrata_relation_compression('no_such_table');
SELECT count(*) FROM pgstrata_relation_compression(0);

-- the bulk I/O counters: one row per backend type, reset to zero
SELECT pgstrata_bulk_io_reset();
SELECT count(*) > 10 AS backend_types,
	   count(*) = count(DISTINCT backend_type) AS one_row_each
FROM pgstrata_bulk_io;
SELECT bulk_reads, bulk_read_blocks, heap_pre_extensions, heap_pre_extended_blocks,
	   index_pre_extensions, index_pre_extended_blocks, index_trimmed_blocks
FROM pgstrata_bulk_io WHERE backend_type = 'client backend';
-- moving a temporary table copies its file in combined reads
CREATE TEMP TABLE moved (a int, b text);
INSERT INTO moved SELECT g, repeat('z', 200) FROM generate_series(1, 5000) g;
SELECT pg_relation_size('moved') / 8192 AS moved_pages,
	   pg_total_relation_size('moved') / 8192 AS moved_all_pages \gset
ALTER TABLE moved SET TABLESPACE pgstrata_cts;
SELECT bulk_reads > 0 AS combined_reads,
	   bulk_read_blocks >= 2 * bulk_reads AS two_blocks_or_more_each,
	   bulk_read_blocks BETWEEN :moved_pages - 1 AND :moved_all_pages
	   AS every_page_once
FROM pgstrata_bulk_io WHERE backend_type = 'client backend';
-- a B-tree build pre-extends its file and trims what it did not use
SET max_parallel_maintenance_workers = 0;
CREATE INDEX ct_v ON ct (v, id);
SELECT index_pre_extensions > 0 AS pre_extended,
	   index_trimmed_blocks <= index_pre_extended_blocks AS trimmed_within
FROM pgstrata_bulk_io WHERE backend_type = 'client backend';
RESET max_parallel_maintenance_workers;
SELECT pgstrata_bulk_io_reset();
SELECT bulk_reads + bulk_read_blocks + heap_pre_extensions + heap_pre_extended_blocks
	   + index_pre_extensions + index_pre_extended_blocks + index_trimmed_blocks AS total
FROM pgstrata_bulk_io WHERE backend_type = 'client backend';

-- zstd TOAST values in the legacy encoding, in and out of the compressed
-- tablespace
CREATE TABLE zt (id int, v text COMPRESSION zstd) TABLESPACE pgstrata_cts;
CREATE TABLE zt_plain (id int, v text COMPRESSION zstd);
SET toast_zstd_debug_legacy_encoding = on;
INSERT INTO zt SELECT g, repeat('legacy ', 1000 * g) FROM generate_series(1, 3) g;
INSERT INTO zt_plain SELECT g, repeat('legacy ', 1000 * g) FROM generate_series(1, 2) g;
RESET toast_zstd_debug_legacy_encoding;
INSERT INTO zt SELECT g, repeat('current ', 1000 * g) FROM generate_series(4, 5) g;
INSERT INTO zt_plain VALUES (3, NULL), (4, 'short');
SELECT pgstrata_toast_legacy_values('zt') AS zt,
	   pgstrata_toast_legacy_values('zt_plain') AS zt_plain,
	   pgstrata_toast_legacy_values('plain') AS plain,
	   pgstrata_toast_legacy_values('ct_mv') AS matview;
VACUUM FULL zt;
SELECT pgstrata_toast_legacy_values('zt') AS after_vacuum_full;
SELECT pgstrata_toast_legacy_values(NULL);
-- not a table
SELECT pgstrata_toast_legacy_values('ct_pkey');
SELECT pgstrata_toast_legacy_values('v');
SELECT pgstrata_toast_legacy_values('seq');
SELECT pgstrata_toast_legacy_values('parted');

-- privileges: the statistics are for pg_read_all_stats, the legacy count
-- for whoever may read the table, the reset for superusers
CREATE ROLE regress_pgstrata_nobody;
CREATE ROLE regress_pgstrata_stats IN ROLE pg_read_all_stats;
GRANT SELECT ON zt_plain TO regress_pgstrata_nobody;
SET ROLE regress_pgstrata_nobody;
SELECT * FROM pgstrata_relation_compression('ct');
SELECT * FROM pgstrata_compression;
SELECT * FROM pgstrata_bulk_io;
SELECT * FROM pgstrata_bulk_io();
SELECT pgstrata_bulk_io_reset();
SELECT pgstrata_toast_legacy_values('zt');
SELECT pgstrata_toast_legacy_values('zt_plain');
SELECT * FROM pgstrata_free_units();
RESET ROLE;
SET ROLE regress_pgstrata_stats;
-- the pool has at least 32,768 runs, and this suite fills none of it
SELECT pool_runs >= 32768 AS pool, kept_runs BETWEEN 0 AND pool_runs AS kept,
	   forgotten_runs = 0 AS none_forgotten
FROM pgstrata_free_units();
SELECT count(*) > 0 AS sees_forks FROM pgstrata_relation_compression('ct');
SELECT count(*) > 0 AS sees_view FROM pgstrata_compression
WHERE relation = 'ct'::regclass;
SELECT count(*) > 0 AS sees_counters FROM pgstrata_bulk_io;
SELECT pgstrata_bulk_io_reset();
RESET ROLE;

-- clean up
DROP TABLE ct, ct_lz4, ct_temp, moved, plain, parted, zt, zt_plain CASCADE;
DROP ROLE regress_pgstrata_nobody, regress_pgstrata_stats;
DROP SEQUENCE seq;
DROP EXTENSION pgstrata;
DROP TABLESPACE pgstrata_cts;
DROP TABLESPACE pgstrata_lz4;
