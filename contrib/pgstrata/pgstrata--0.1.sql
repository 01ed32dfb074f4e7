/* contrib/pgstrata/pgstrata--0.1.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pgstrata" to load this file. \quit

-- One row per compressed fork of a relation: logical and physical size,
-- their ratio, and where the physical bytes go.
CREATE FUNCTION pgstrata_relation_compression(rel regclass,
	OUT fork text,
	OUT logical_bytes bigint,
	OUT physical_bytes bigint,
	OUT ratio float8,
	OUT logical_pages bigint,
	OUT stored_pages bigint,
	OUT raw_pages bigint,
	OUT empty_pages bigint,
	OUT stored_bytes bigint,
	OUT slack_bytes bigint,
	OUT garbage_bytes bigint,
	OUT shuffled_pages bigint,
	OUT split_pages bigint,
	OUT dictionary_pages bigint,
	OUT dictionaries bigint,
	OUT dictionary_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgstrata_relation_compression'
LANGUAGE C STRICT PARALLEL SAFE;

REVOKE ALL ON FUNCTION pgstrata_relation_compression(regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgstrata_relation_compression(regclass) TO pg_read_all_stats;

-- Every compressed fork of every relation of this database that this
-- session can open (other sessions' temporary tables cannot be).
CREATE VIEW pgstrata_compression AS
SELECT c.oid::regclass AS relation,
	   c.relkind,
	   coalesce(t.spcname, (SELECT spcname FROM pg_tablespace
							WHERE oid = (SELECT dattablespace FROM pg_database
										 WHERE datname = current_database())))
		   AS tablespace,
	   s.*
FROM pg_class c
	 LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace,
	 LATERAL pgstrata_relation_compression(c.oid) s
WHERE c.relkind IN ('r', 'i', 't', 'm', 'S')
  AND (c.relpersistence <> 't' OR c.relnamespace = pg_my_temp_schema());

REVOKE ALL ON pgstrata_compression FROM PUBLIC;
GRANT SELECT ON pgstrata_compression TO pg_read_all_stats;

-- The bulk I/O counters of the polar_bulk_* settings, one row per backend
-- type, since server start or the last reset.
CREATE FUNCTION pgstrata_bulk_io(
	OUT backend_type text,
	OUT bulk_reads bigint,
	OUT bulk_read_blocks bigint,
	OUT heap_pre_extensions bigint,
	OUT heap_pre_extended_blocks bigint,
	OUT index_pre_extensions bigint,
	OUT index_pre_extended_blocks bigint,
	OUT index_trimmed_blocks bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgstrata_bulk_io'
LANGUAGE C STRICT PARALLEL SAFE;

CREATE VIEW pgstrata_bulk_io AS SELECT * FROM pgstrata_bulk_io();

CREATE FUNCTION pgstrata_bulk_io_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'pgstrata_bulk_io_reset'
LANGUAGE C STRICT PARALLEL SAFE;

REVOKE ALL ON FUNCTION pgstrata_bulk_io() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgstrata_bulk_io() TO pg_read_all_stats;
REVOKE ALL ON pgstrata_bulk_io FROM PUBLIC;
GRANT SELECT ON pgstrata_bulk_io TO pg_read_all_stats;
REVOKE ALL ON FUNCTION pgstrata_bulk_io_reset() FROM PUBLIC;

-- The same counters per relation file, in every database, since server
-- start or the last reset: reltablespace, reldatabase and relfilenode are
-- the file's (0, 0, 0 for the relations that found the table of counters
-- full).
CREATE FUNCTION pgstrata_bulk_io_relations(
	OUT reltablespace oid,
	OUT reldatabase oid,
	OUT relfilenode oid,
	OUT bulk_reads bigint,
	OUT bulk_read_blocks bigint,
	OUT heap_pre_extensions bigint,
	OUT heap_pre_extended_blocks bigint,
	OUT index_pre_extensions bigint,
	OUT index_pre_extended_blocks bigint,
	OUT index_trimmed_blocks bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgstrata_bulk_io_relations'
LANGUAGE C STRICT PARALLEL SAFE;

-- One row per relation of the current database (and shared catalog) whose
-- current file has counts.
CREATE VIEW pgstrata_bulk_io_relations AS
SELECT c.oid AS relid, n.nspname AS schemaname, c.relname,
	   r.bulk_reads, r.bulk_read_blocks,
	   r.heap_pre_extensions, r.heap_pre_extended_blocks,
	   r.index_pre_extensions, r.index_pre_extended_blocks,
	   r.index_trimmed_blocks
FROM pgstrata_bulk_io_relations() r
	 JOIN pg_class c
	   ON c.oid = pg_filenode_relation(r.reltablespace, r.relfilenode)
	 JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE r.relfilenode <> 0
  AND r.reldatabase IN (0, (SELECT oid FROM pg_database
							WHERE datname = current_database()));

REVOKE ALL ON FUNCTION pgstrata_bulk_io_relations() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgstrata_bulk_io_relations() TO pg_read_all_stats;
REVOKE ALL ON pgstrata_bulk_io_relations FROM PUBLIC;
GRANT SELECT ON pgstrata_bulk_io_relations TO pg_read_all_stats;

-- The runs of free units that compressed segments keep for reuse, in one
-- pool for the whole server: its size, the runs kept now, and the runs
-- forgotten since the server started because it, or the table of segments,
-- was full (their units stay allocated until the relation is rewritten or
-- the server restarts).
CREATE FUNCTION pgstrata_free_units(
	OUT pool_runs integer,
	OUT kept_runs integer,
	OUT forgotten_runs bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'pgstrata_free_units'
LANGUAGE C STRICT PARALLEL SAFE;

REVOKE ALL ON FUNCTION pgstrata_free_units() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgstrata_free_units() TO pg_read_all_stats;

-- How many zstd TOAST values of a table are still in the encoding of earlier
-- pgstrata builds; anything that rewrites them (VACUUM FULL, CLUSTER, an
-- UPDATE that changes them) writes the current one.
CREATE FUNCTION pgstrata_toast_legacy_values(rel regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pgstrata_toast_legacy_values'
LANGUAGE C STRICT PARALLEL SAFE;

-- Train a zstd compression dictionary for each segment of a relation in a
-- compressed tablespace, from a sample of its pages, for the images written
-- from now on; with recompress, write every page again with it.  Only the
-- relation's owner may.
CREATE FUNCTION pgstrata_train_dictionary(rel regclass,
	recompress boolean DEFAULT false,
	OUT segment integer,
	OUT dictionary integer,
	OUT dictionary_bytes integer,
	OUT sampled_pages integer,
	OUT rewritten_pages bigint,
	OUT sample_ratio_before float8,
	OUT sample_ratio_after float8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgstrata_train_dictionary'
LANGUAGE C STRICT PARALLEL UNSAFE;

-- What the main fork of a relation, stored anywhere, would compress to in
-- a compressed tablespace of that algorithm and level: its pages sampled
-- and run through the real codec, without and with a trained dictionary.
-- Nothing is written.  Only the relation's owner may.
CREATE FUNCTION pgstrata_estimate_compression(rel regclass,
	algorithm text DEFAULT 'zstd',
	level integer DEFAULT 1,
	OUT pages bigint,
	OUT sampled_pages integer,
	OUT ratio float8,
	OUT ratio_with_dictionary float8,
	OUT dictionary_bytes integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pgstrata_estimate_compression'
LANGUAGE C STRICT PARALLEL SAFE;
