--
-- demo_compare.sql: sizes and answers of the plain and the compressed
-- database that run-demo.sh filled with the same data.
--
\set ECHO none
CREATE EXTENSION IF NOT EXISTS dblink;
\set ECHO queries
\echo
\echo '=== Sizes: physical bytes (pg_relation_size) of the same relations'
-- a compressed page takes space when it is written: write them all first
CHECKPOINT;
SELECT p.relname,
	   pg_size_pretty(p.bytes) AS plain,
	   pg_size_pretty(c.bytes) AS compressed,
	   round(p.bytes::numeric / nullif(c.bytes, 0), 2) AS ratio
FROM dblink(:'plain',
		$$SELECT relname, pg_relation_size(oid) FROM pg_class
		  WHERE relname ~ '^(pgbench_|sbtest|k_1)' AND relkind IN ('r', 'i')$$)
	 AS p(relname name, bytes bigint)
JOIN dblink(:'compressed',
		$$SELECT relname, pg_relation_size(oid) FROM pg_class
		  WHERE relname ~ '^(pgbench_|sbtest|k_1)' AND relkind IN ('r', 'i')$$)
	 AS c(relname name, bytes bigint) USING (relname)
ORDER BY p.bytes DESC;
SELECT pg_size_pretty(pg_database_size('plain')) AS plain_database,
	   pg_size_pretty(pg_database_size('compressed')) AS compressed_database;

\echo
\echo '=== The same answers from both'
SELECT * FROM dblink(:'plain',
	$$SELECT count(*), sum(abalance), md5(string_agg(aid || ':' || bid || ':' || abalance, ',' ORDER BY aid))
	  FROM pgbench_accounts$$) AS plain(n bigint, s bigint, h text)
UNION ALL
SELECT * FROM dblink(:'compressed',
	$$SELECT count(*), sum(abalance), md5(string_agg(aid || ':' || bid || ':' || abalance, ',' ORDER BY aid))
	  FROM pgbench_accounts$$) AS compressed(n bigint, s bigint, h text);
SELECT * FROM dblink(:'plain',
	$$SELECT count(*), md5(string_agg(c || pad, '' ORDER BY id)) FROM sbtest1 WHERE k < 50000$$)
	AS plain(n bigint, h text)
UNION ALL
SELECT * FROM dblink(:'compressed',
	$$SELECT count(*), md5(string_agg(c || pad, '' ORDER BY id)) FROM sbtest1 WHERE k < 50000$$)
	AS compressed(n bigint, h text);
