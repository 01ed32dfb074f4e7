--
-- demo.sql: what pgstrata does, on a throwaway cluster (make demo).
--
-- psql variables: sgml (PostgreSQL's documentation sources, used as a
-- corpus of real text) and tsdir (an empty directory for a tablespace).
--

\echo
\echo '=== The server says what it is'
SELECT version();

\echo
\echo '=== The features of the patch set in this build'
\set ECHO none
SELECT feature, CASE WHEN available THEN 'yes' ELSE 'not yet' END AS available
FROM (VALUES
	('compressed tablespaces (CREATE TABLESPACE ... WITH (compression))',
	 EXISTS (SELECT FROM pg_available_extensions WHERE name = 'pgstrata')),
	('bulk I/O settings (polar_bulk_read_size and friends)',
	 EXISTS (SELECT FROM pg_settings WHERE name = 'polar_bulk_read_size')),
	('refdata table access method (CREATE EXTENSION refdata)',
	 EXISTS (SELECT FROM pg_available_extensions WHERE name = 'refdata')),
	('TOAST compression lz4',
	 EXISTS (SELECT FROM pg_settings WHERE name = 'default_toast_compression'
			 AND 'lz4' = ANY (enumvals))),
	('TOAST compression zstd',
	 EXISTS (SELECT FROM pg_settings WHERE name = 'default_toast_compression'
			 AND 'zstd' = ANY (enumvals)))
) AS f(feature, available);
\set ECHO queries

\echo
\echo '=== TOAST compression on real text: the documentation, one file per row'
CREATE TABLE docs_pglz (name text, body text COMPRESSION pglz);
CREATE TABLE docs_lz4 (name text, body text COMPRESSION lz4);
CREATE TABLE docs_zstd (name text, body text COMPRESSION zstd);
INSERT INTO docs_pglz
	SELECT f, pg_read_file(:'sgml' || '/' || f)
	FROM pg_ls_dir(:'sgml') AS f WHERE f LIKE '%.sgml';
-- (INSERT ... SELECT would keep the pglz values as they are: read the files again)
INSERT INTO docs_lz4
	SELECT f, pg_read_file(:'sgml' || '/' || f)
	FROM pg_ls_dir(:'sgml') AS f WHERE f LIKE '%.sgml';
INSERT INTO docs_zstd
	SELECT f, pg_read_file(:'sgml' || '/' || f)
	FROM pg_ls_dir(:'sgml') AS f WHERE f LIKE '%.sgml';
SELECT method, files, pg_size_pretty(raw) AS raw,
	   pg_size_pretty(stored) AS stored, round(raw::numeric / stored, 2) AS ratio
FROM (SELECT 'pglz' AS method, count(*) AS files,
			 sum(octet_length(body)) AS raw, sum(pg_column_size(body)) AS stored
	  FROM docs_pglz
	  UNION ALL
	  SELECT 'lz4', count(*), sum(octet_length(body)), sum(pg_column_size(body))
	  FROM docs_lz4
	  UNION ALL
	  SELECT 'zstd', count(*), sum(octet_length(body)), sum(pg_column_size(body))
	  FROM docs_zstd) AS s;
SELECT coalesce(pg_column_compression(body), '(not compressed)') AS method,
	count(*) AS values
FROM (SELECT body FROM docs_lz4 UNION ALL SELECT body FROM docs_zstd) AS d
GROUP BY 1 ORDER BY 1;
SELECT (SELECT md5(string_agg(body, '' ORDER BY name)) FROM docs_pglz) =
	   (SELECT md5(string_agg(body, '' ORDER BY name)) FROM docs_lz4)
   AND (SELECT md5(string_agg(body, '' ORDER BY name)) FROM docs_pglz) =
	   (SELECT md5(string_agg(body, '' ORDER BY name)) FROM docs_zstd)
	AS same_text_back;
-- the level of zstd is a setting (1 to 19, default 3)
SHOW toast_zstd_level;

\echo
\echo '=== refdata: foreign-key checks against a reference table take no row locks'
CREATE EXTENSION refdata;
CREATE EXTENSION pageinspect;
CREATE EXTENSION amcheck;
CREATE TABLE item (id int PRIMARY KEY, name text) USING refdata;
CREATE TABLE item_heap (id int PRIMARY KEY, name text);
INSERT INTO item SELECT g, 'item ' || g FROM generate_series(1, 10) g;
INSERT INTO item_heap SELECT * FROM item;
CREATE TABLE order_line (id int, item_id int REFERENCES item);
CREATE TABLE order_line_heap (id int, item_id int REFERENCES item_heap);
-- two transactions at once insert lines referencing the same item
BEGIN;
INSERT INTO order_line VALUES (1, 1);
INSERT INTO order_line_heap VALUES (1, 1);
\echo '-- meanwhile a second session inserts lines for item 1 into both tables'
\! $PSQL_AGAIN -c "INSERT INTO order_line VALUES (2, 1); INSERT INTO order_line_heap VALUES (2, 1)"
COMMIT;
-- xmax of the item row: heap left a MultiXact there, refdata nothing
SELECT 'refdata' AS parent, t_xmax, (t_infomask & 4096) <> 0 AS xmax_is_multixact
FROM heap_page_items(get_raw_page('item', 0)) WHERE lp = 1
UNION ALL
SELECT 'heap', t_xmax, (t_infomask & 4096) <> 0
FROM heap_page_items(get_raw_page('item_heap', 0)) WHERE lp = 1;
-- writers take the table lock: serialize them explicitly
BEGIN;
LOCK TABLE item IN EXCLUSIVE MODE;
UPDATE item SET name = 'renamed' WHERE id = 2;
COMMIT;
-- amcheck checks refdata tables: their pages are heap's
SELECT count(*) AS problems FROM verify_heapam('item');

\echo
\echo '=== Compressed tablespaces: a plain and a compressed database, same data'
CREATE TABLESPACE cts LOCATION :'tsdir' WITH (compression = 'zstd');
\db+ cts
CREATE DATABASE plain;
CREATE DATABASE compressed TABLESPACE cts;
\c compressed
\ir sbtest.sql
\c plain
\ir sbtest.sql
