/* contrib/refdata/refdata--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION refdata" to load this file. \quit

CREATE FUNCTION refdata_handler(internal)
RETURNS table_am_handler
AS 'MODULE_PATHNAME'
LANGUAGE C;

CREATE ACCESS METHOD refdata TYPE TABLE HANDLER refdata_handler;
COMMENT ON ACCESS METHOD refdata IS 'heap storage; writers take ExclusiveLock on the table, foreign-key checks take no row locks';

CREATE FUNCTION refdata_rowlocks(IN rel regclass,
    OUT locked_row tid,
    OUT xmax xid,
    OUT multi boolean,
    OUT locker xid,
    OUT mode text)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT PARALLEL RESTRICTED;

-- To check a refdata table, use amcheck's verify_heapam() or pg_amcheck:
-- refdata stores heap pages, which pgstrata's amcheck accepts.
