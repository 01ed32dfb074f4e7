--
-- Compressed tablespaces: options, errors, every relation kind stored
-- compressed, conversions both ways, sizes.
--
-- A compressed segment starts with the bytes 'PCS1' ff ff ff 7f; magic(rel)
-- says whether each fork of a relation does.  A fork never extended is an
-- empty file, in either format ('empty'): its first extension writes the
-- header.
--
SET allow_in_place_tablespaces = on;

CREATE FUNCTION magic(rel regclass, fork text DEFAULT '')
RETURNS text LANGUAGE sql AS $$
	SELECT CASE substr(pg_read_binary_file(
				pg_relation_filepath(rel) || fork, 0, 8, true), 1, 8)
		WHEN '\x50435331ffffff7f'::bytea THEN 'compressed'
		WHEN ''::bytea THEN 'empty'
		ELSE 'plain' END
$$;

-- bad options
CREATE TABLESPACE bad LOCATION '' WITH (compression = 'brotli');
CREATE TABLESPACE bad LOCATION '' WITH (compression = '');
CREATE TABLESPACE bad LOCATION '' WITH (compression = 'lz4', compression_level = 3);
CREATE TABLESPACE bad LOCATION '' WITH (compression = 'zstd', compression_level = 0);
CREATE TABLESPACE bad LOCATION '' WITH (compression = 'zstd', compression_level = 20);
CREATE TABLESPACE bad LOCATION '' WITH (compression_level = 3);
CREATE TABLESPACE bad LOCATION '' WITH (compresion = 'zstd');

-- good ones, and how they show
CREATE TABLESPACE cts LOCATION '' WITH (compression = 'zstd');
CREATE TABLESPACE cts_lz4 LOCATION '' WITH (compression = 'lz4', random_page_cost = 1.5);
CREATE TABLESPACE cts_true LOCATION '' WITH (compression = true, compression_level = 3);
CREATE TABLESPACE cts_none LOCATION '' WITH (compression = none);
SELECT spcname, spcoptions FROM pg_tablespace WHERE spcname LIKE 'cts%' ORDER BY 1;

-- compression is fixed at creation; other options stay changeable
ALTER TABLESPACE cts SET (compression = 'lz4');
ALTER TABLESPACE cts SET (compression_level = 5);
ALTER TABLESPACE cts RESET (compression);
ALTER TABLESPACE cts SET (random_page_cost = 2.0);
ALTER TABLESPACE cts RESET (random_page_cost);

-- a table with an index of every kind, TOAST, in the tablespace
CREATE TABLE t (id int PRIMARY KEY USING INDEX TABLESPACE cts,
	v text, arr int[], p point, r int4range, big text)
	TABLESPACE cts;
INSERT INTO t SELECT g, 'value ' || (g % 100), ARRAY[g % 7, g % 11],
	point(g % 50, g % 30), int4range(g, g + 10),
	CASE WHEN g % 500 = 0 THEN repeat(md5(g::text), 400) END
	FROM generate_series(1, 20000) g;
CREATE INDEX t_hash ON t USING hash (v) TABLESPACE cts;
CREATE INDEX t_gin ON t USING gin (arr) TABLESPACE cts;
CREATE INDEX t_gist ON t USING gist (p) TABLESPACE cts;
CREATE INDEX t_spgist ON t USING spgist (r) TABLESPACE cts;
CREATE INDEX t_brin ON t USING brin (id) TABLESPACE cts;
VACUUM ANALYZE t;
SELECT c.relname, magic(c.oid)
FROM pg_class c WHERE c.relname LIKE 't\_%' OR c.relname = 't'
ORDER BY 1;
SELECT magic(reltoastrelid) AS toast FROM pg_class WHERE relname = 't';
SELECT magic('t', '_fsm') AS fsm, magic('t', '_vm') AS vm;

-- the same answers as from a plain copy
CREATE TABLE t_plain AS SELECT * FROM t;
SELECT (SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM t) =
	   (SELECT md5(string_agg(t_plain::text, ',' ORDER BY id)) FROM t_plain)
	AS same_rows;
SET enable_seqscan = off;
SELECT count(*) FROM t WHERE v = 'value 42';
SELECT count(*) FROM t WHERE arr @> ARRAY[3];
SELECT count(*) FROM t WHERE p <@ box '((0,0),(10,10))';
SELECT count(*) FROM t WHERE r @> 500;
SELECT count(*) FROM t WHERE id BETWEEN 100 AND 199;
RESET enable_seqscan;

-- physical sizes are smaller, relpages stays logical (a compressed page
-- takes space when it is written out: write them all first)
CHECKPOINT;
SELECT pg_relation_size('t') < pg_relation_size('t_plain') / 2 AS heap_smaller,
	   pg_relation_size('t') < (SELECT relpages FROM pg_class WHERE relname = 't') * 8192 / 2
		AS smaller_than_relpages,
	   pg_indexes_size('t') > 0 AND pg_table_size('t') > pg_relation_size('t')
		AS sizes_add_up,
	   pg_total_relation_size('t') = pg_table_size('t') + pg_indexes_size('t')
		AS total_is_sum,
	   pg_tablespace_size('cts') >= pg_total_relation_size('t') AS tablespace_size;

-- what the pgstrata extension reports: sizes, ratio, raw pages, garbage
CREATE EXTENSION pgstrata;
SELECT fork, ratio > 2 AS ratio_over_2,
	   physical_bytes = pg_relation_size('t', fork) AS physical_is_relation_size,
	   logical_bytes = logical_pages * 8192 AS logical_is_pages,
	   stored_pages + empty_pages = logical_pages AS pages_add_up,
	   raw_pages = 0 AS none_raw, garbage_bytes >= 0 AS garbage
FROM pgstrata_relation_compression('t') ORDER BY fork;
SELECT logical_pages = (SELECT relpages FROM pg_class WHERE relname = 't')
	AS logical_is_relpages
FROM pgstrata_relation_compression('t') WHERE fork = 'main';
SELECT count(*) AS plain_forks FROM pgstrata_relation_compression('t_plain');
SELECT relation, fork FROM pgstrata_compression
WHERE relation IN ('t'::regclass, 't_pkey'::regclass) ORDER BY 1, 2;

-- incompressible pages are stored raw
CREATE TABLE noise (b bytea) TABLESPACE cts;
ALTER TABLE noise ALTER b SET STORAGE PLAIN;
INSERT INTO noise SELECT (SELECT string_agg(decode(md5(g::text || i::text), 'hex'), '')
						  FROM generate_series(1, 120) i)
FROM generate_series(1, 300) g;
CHECKPOINT;
SELECT stored_pages > 0 AND raw_pages = stored_pages AS all_raw,
	   ratio BETWEEN 0.8 AND 1.1 AS ratio_about_1
FROM pgstrata_relation_compression('noise') WHERE fork = 'main';

-- pages that outgrow their allocation move (test/pcs/018_compression_reuse.pl
-- checks that the units they leave are reused); VACUUM FULL leaves none
CREATE TABLE grow (id int, v text) WITH (fillfactor = 50) TABLESPACE cts;
INSERT INTO grow SELECT g, 'x' FROM generate_series(1, 5000) g;
CHECKPOINT;
SELECT garbage_bytes = 0 AS no_garbage_yet
FROM pgstrata_relation_compression('grow') WHERE fork = 'main';
UPDATE grow SET v = md5(id::text) || md5((id + 1)::text);
CHECKPOINT;
VACUUM FULL grow;
CHECKPOINT;
SELECT garbage_bytes = 0 AS no_garbage_after_vacuum_full,
	   stored_pages = logical_pages AS all_stored
FROM pgstrata_relation_compression('grow') WHERE fork = 'main';
SELECT count(*), count(DISTINCT v) FROM grow;
DROP TABLE noise, grow;

-- conversions both ways keep the rows
ALTER TABLE t_plain SET TABLESPACE cts_lz4;
SELECT magic('t_plain');
ALTER TABLE t SET TABLESPACE pg_default;
ALTER INDEX t_pkey SET TABLESPACE pg_default;
SELECT magic('t') AS heap, magic('t_pkey') AS pkey, magic('t_gin') AS gin;
SELECT (SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM t) =
	   (SELECT md5(string_agg(t_plain::text, ',' ORDER BY id)) FROM t_plain)
	AS same_rows;
ALTER TABLE t SET TABLESPACE cts_true;
SELECT magic('t');

-- other relation kinds (sequences ignore default_tablespace, as upstream:
-- they are compressed when their database's tablespace is, see the TAP test)
SET default_tablespace = cts;
CREATE TABLE by_default (a int);
CREATE UNLOGGED TABLE unlogged (a int);
CREATE MATERIALIZED VIEW mv AS SELECT id, v FROM t WHERE id < 100;
CREATE TABLE parted (a int) PARTITION BY RANGE (a);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
CREATE SEQUENCE seq;
RESET default_tablespace;
SET temp_tablespaces = cts;
CREATE TEMP TABLE tmp AS SELECT g FROM generate_series(1, 1000) g;
RESET temp_tablespaces;
CREATE TABLE in_none (a int) TABLESPACE cts_none;
INSERT INTO by_default VALUES (1);
INSERT INTO unlogged VALUES (1);
INSERT INTO parted VALUES (1);
INSERT INTO in_none VALUES (1);
SELECT magic('by_default') AS by_default, magic('unlogged') AS unlogged,
	   magic('unlogged', '_init') AS unlogged_init, magic('mv') AS mv,
	   magic('parted_1') AS partition, magic('tmp') AS temp,
	   magic('seq') AS seq, magic('in_none') AS in_none;
SELECT nextval('seq'), nextval('seq');
SELECT count(*) FROM mv;
SELECT sum(g) FROM tmp;
INSERT INTO parted SELECT g FROM generate_series(0, 99) g;
SELECT count(*) FROM parted;
TRUNCATE parted;
INSERT INTO parted VALUES (1);
SELECT count(*) FROM parted;

-- a tablespace with relations cannot go; an empty one can
DROP TABLESPACE cts_none;
DROP TABLE in_none;
DROP TABLESPACE cts_none;

DROP MATERIALIZED VIEW mv;
DROP TABLE t, t_plain, by_default, unlogged, parted, tmp;
DROP SEQUENCE seq;
DROP FUNCTION magic;
DROP EXTENSION pgstrata;
DROP TABLESPACE cts;
DROP TABLESPACE cts_lz4;
DROP TABLESPACE cts_true;
