/* test/modules/test_pcs/test_pcs--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION test_pcs" to load this file. \quit

-- Add block blkno to the main fork of rel by writing a zero page there
-- with smgrextend(), past the current end, as hash indexes allocate the
-- blocks of a new split point; returns the fork's size in blocks after it.
CREATE FUNCTION test_pcs_extend_to(rel regclass, blkno bigint)
RETURNS bigint
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

-- Check the rules of the free units that compressed segments keep for reuse
-- (pcs_free_pool.c) on a segment of no relation; ERROR at the first that
-- does not hold, else the number of checks made.  The pool is left as it
-- was, but it fills up on the way: run it where nothing else frees units.
CREATE FUNCTION test_pcs_free_pool()
RETURNS integer
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

-- Keep a run of units in each of n segments of no relation, then forget
-- them: how many were kept (the table of segments is fixed in size, so
-- those past it are forgotten).
CREATE FUNCTION test_pcs_free_segments(n integer)
RETURNS integer
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

-- Keep a run in each of n segments of no relation, forget the runs of m
-- relations that keep none, then of the n: how many of the m forgets
-- walked the whole table (the filter of relations spares most of them).
CREATE FUNCTION test_pcs_forget_walks(n integer, m integer)
RETURNS bigint
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

-- Set this session's limit on the bytes of prepared compression
-- dictionaries it keeps (unless null); the bytes they take now.
CREATE FUNCTION test_pcs_dict_cache(lim integer)
RETURNS bigint
AS 'MODULE_PATHNAME'
LANGUAGE C;
