--
-- refdata: DDL and utility commands on refdata tables
--
CREATE EXTENSION refdata;
CREATE EXTENSION pageinspect;
CREATE EXTENSION amcheck;

-- CREATE TABLE ... USING refdata, and through default_table_access_method
CREATE TABLE item (id int PRIMARY KEY, name text, price numeric, tags text[],
                   pos point, body text) USING refdata;
SET default_table_access_method = refdata;
CREATE TABLE item2 (id int);
RESET default_table_access_method;
CREATE TABLE plain (id int);
SELECT c.relname, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
WHERE c.relname IN ('item', 'item2', 'plain') ORDER BY 1;

-- the TOAST table of a refdata table is heap
SELECT a.amname AS toast_am FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid
  JOIN pg_am a ON a.oid = t.relam WHERE c.relname = 'item';

-- INSERT, COPY, UPDATE, DELETE, ON CONFLICT, MERGE
INSERT INTO item SELECT g, 'item ' || g, g * 1.5, ARRAY['t' || (g % 7), 'u' || (g % 3)],
  point(g % 10, g / 10), NULL FROM generate_series(1, 1000) g;
COPY item (id, name, price) FROM stdin;
1001	copied one	1.00
1002	copied two	2.00
\.
UPDATE item SET price = price + 1 WHERE id <= 10;
DELETE FROM item WHERE id BETWEEN 990 AND 1000;
INSERT INTO item (id, name) VALUES (1, 'upsert') ON CONFLICT (id) DO UPDATE SET name = excluded.name;
INSERT INTO item (id, name) VALUES (1, 'nothing') ON CONFLICT DO NOTHING;
MERGE INTO item i USING (VALUES (2, 'merged'), (2000, 'new')) AS v(id, name) ON i.id = v.id
  WHEN MATCHED THEN UPDATE SET name = v.name
  WHEN NOT MATCHED THEN INSERT (id, name) VALUES (v.id, v.name);
SELECT count(*), sum(price), min(name), max(name) FROM item;

-- TOAST: large values go out of line, into the heap TOAST table, and come back
CREATE FUNCTION big(int) RETURNS text LANGUAGE sql IMMUTABLE
  AS $$ SELECT string_agg(md5($1::text || '/' || g), '') FROM generate_series(1, 500) g $$;
UPDATE item SET body = big(id) WHERE id <= 5;
SELECT id, length(body), body = big(id) AS same FROM item WHERE id <= 5 ORDER BY id;
SELECT pg_relation_size(reltoastrelid) > 0 AS toast_used FROM pg_class WHERE relname = 'item';

-- indexes of every kind
CREATE INDEX item_name_btree ON item (name);
CREATE INDEX item_name_hash ON item USING hash (name);
CREATE INDEX item_tags_gin ON item USING gin (tags);
CREATE INDEX item_pos_gist ON item USING gist (pos);
CREATE INDEX item_pos_spgist ON item USING spgist (pos);
CREATE INDEX item_id_brin ON item USING brin (id);
CREATE INDEX item_expr ON item ((lower(name))) WHERE price > 100;
CREATE INDEX CONCURRENTLY item_price_cic ON item (price);
CREATE UNIQUE INDEX CONCURRENTLY item_name_uniq ON item (name, id);
REINDEX TABLE item;
REINDEX TABLE CONCURRENTLY item;
SELECT indexrelid::regclass, indisvalid FROM pg_index WHERE indrelid = 'item'::regclass ORDER BY indexrelid::regclass::text;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id FROM item WHERE name = 'item 77';
SELECT count(*) FROM item WHERE tags @> ARRAY['t3'];
SELECT count(*) FROM item WHERE pos <@ box '(0,0),(2,2)';
SELECT count(*) FROM item WHERE lower(name) = 'item 200' AND price > 100;
SET enable_bitmapscan = on;
SET enable_indexscan = off;
SELECT count(*) FROM item WHERE id BETWEEN 100 AND 199;
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_indexscan;

-- parallel index builds (B-tree and BRIN): the workers scan the table with
-- heap's routine in place too
CREATE TABLE item_p (id int, name text) USING refdata;
INSERT INTO item_p SELECT g, 'item ' || g FROM generate_series(1, 20000) g;
ALTER TABLE item_p SET (parallel_workers = 2);
SET max_parallel_maintenance_workers = 2;
SET min_parallel_table_scan_size = 0;
SET log_temp_files = -1;
SET client_min_messages = debug1;
CREATE INDEX item_p_btree ON item_p (name, id);
CREATE INDEX item_p_brin ON item_p USING brin (id);
RESET client_min_messages;
RESET log_temp_files;
RESET max_parallel_maintenance_workers;
RESET min_parallel_table_scan_size;
SET enable_seqscan = off;
SELECT id FROM item_p WHERE name = 'item 12345';
SELECT count(*) FROM item_p WHERE id BETWEEN 1000 AND 1999;
RESET enable_seqscan;
DROP TABLE item_p;

-- the relcache entry of the table is rebuilt in the middle of an index build
-- (here by a GRANT from the indexed function): the build goes on
CREATE TABLE item_g (id int) USING refdata;
INSERT INTO item_g SELECT generate_series(1, 1000);
CREATE FUNCTION grant_now() RETURNS void LANGUAGE plpgsql VOLATILE
  AS $$ BEGIN EXECUTE 'GRANT SELECT ON public.item_g TO PUBLIC'; END $$;
CREATE FUNCTION grant_midway(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
  AS $$ BEGIN
    IF $1 = 500 THEN PERFORM public.grant_now(); END IF;
    RETURN $1;
  END $$;
CREATE INDEX item_g_midway ON item_g (grant_midway(id));
SELECT count(*) FROM item_g WHERE grant_midway(id) < 100;
DROP TABLE item_g;
DROP FUNCTION grant_midway(int), grant_now();

-- VACUUM, ANALYZE, VACUUM FULL, CLUSTER: the table stays refdata
CREATE TEMP TABLE before AS SELECT id, md5(item::text) AS h FROM item;
VACUUM item;
VACUUM (FREEZE, ANALYZE) item;
SELECT reltuples > 0 AS analyzed FROM pg_class WHERE relname = 'item';
VACUUM FULL item;
CLUSTER item USING item_pkey;
CLUSTER item;
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'item';
SELECT count(*) AS differences
FROM before b FULL JOIN (SELECT id, md5(item::text) AS h FROM item) a USING (id)
WHERE a.h IS DISTINCT FROM b.h;
SELECT * FROM verify_heapam('item');

-- ALTER TABLE ... SET ACCESS METHOD, both ways
ALTER TABLE item SET ACCESS METHOD heap;
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'item';
ALTER TABLE item SET ACCESS METHOD refdata;
SELECT a.amname AS table_am, ta.amname AS toast_am
FROM pg_class c JOIN pg_am a ON a.oid = c.relam
  JOIN pg_class t ON t.oid = c.reltoastrelid JOIN pg_am ta ON ta.oid = t.relam
WHERE c.relname = 'item';
SELECT count(*) AS differences
FROM before b FULL JOIN (SELECT id, md5(item::text) AS h FROM item) a USING (id)
WHERE a.h IS DISTINCT FROM b.h;
ALTER TABLE plain SET ACCESS METHOD refdata;
ALTER TABLE item ADD COLUMN extra int DEFAULT 7;
ALTER TABLE item ALTER COLUMN extra TYPE bigint;
SELECT extra, count(*) FROM item GROUP BY extra;

-- partitioned tables: the access method is inherited by new partitions
CREATE TABLE region (id int PRIMARY KEY, name text) PARTITION BY RANGE (id) USING refdata;
CREATE TABLE region_1 PARTITION OF region FOR VALUES FROM (0) TO (100);
CREATE TABLE region_2 PARTITION OF region FOR VALUES FROM (100) TO (200) USING heap;
INSERT INTO region VALUES (1, 'north'), (150, 'south');
SELECT c.relname, a.amname FROM pg_class c LEFT JOIN pg_am a ON a.oid = c.relam
WHERE c.relname LIKE 'region%' AND c.relkind IN ('r', 'p') ORDER BY 1;
CREATE TABLE place (id int, region_id int REFERENCES region);
INSERT INTO place VALUES (1, 1), (2, 150);
INSERT INTO place VALUES (3, 99);

-- TRUNCATE, also in a transaction that rolls back
BEGIN;
TRUNCATE item2;
INSERT INTO item2 VALUES (1);
ROLLBACK;
TRUNCATE place, region;
SELECT count(*) FROM region;

-- materialized views and CREATE TABLE AS
CREATE MATERIALIZED VIEW item_mv USING refdata AS SELECT id, name FROM item WHERE id < 10;
REFRESH MATERIALIZED VIEW item_mv;
CREATE UNIQUE INDEX ON item_mv (id);
REFRESH MATERIALIZED VIEW CONCURRENTLY item_mv;
CREATE TABLE item_copy USING refdata AS SELECT * FROM item;
SELECT (SELECT count(*) FROM item_mv) AS mv, (SELECT count(*) FROM item_copy) AS copy;

-- temporary and unlogged refdata tables
CREATE TEMP TABLE tmp_ref (id int PRIMARY KEY) USING refdata;
INSERT INTO tmp_ref SELECT generate_series(1, 10);
CREATE UNLOGGED TABLE unl_ref (id int PRIMARY KEY) USING refdata;
INSERT INTO unl_ref SELECT generate_series(1, 10);
SELECT (SELECT count(*) FROM tmp_ref) AS tmp, (SELECT count(*) FROM unl_ref) AS unlogged;

DROP FUNCTION big(int);
DROP MATERIALIZED VIEW item_mv;
DROP TABLE item, item2, plain, region, place, item_copy, tmp_ref, unl_ref;
DROP EXTENSION refdata;
DROP EXTENSION pageinspect;
DROP EXTENSION amcheck;
