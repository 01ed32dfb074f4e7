/*-------------------------------------------------------------------------
 *
 * pgstrata_compat.h
 *	  What differs between the PostgreSQL major releases that the shared
 *	  sources of pgstrata are built for (17 and 18).
 *
 * The new files of src/ and contrib/ are the same for both series
 * (patches/ and patches/18/).  Where an upstream interface they call
 * changed in 18, this header gives one name that works with both, so that
 * the code of a release reads the same and compiles exactly as before on
 * 17.  Differences that are more than a spelling are written out with
 * #if PG_VERSION_NUM >= 180000 where they are, with a comment.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/pgstrata_compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSTRATA_COMPAT_H
#define PGSTRATA_COMPAT_H

/*
 * A relation file's path as a palloc'd string.  18's relpath() and
 * relpathbackend() return the path in a struct (RelPathStr) instead of a
 * palloc'd string; a copy keeps 17's lifetime, and callers may pfree() it
 * on both.
 */
#if PG_VERSION_NUM >= 180000
#define PGSTRATA_RELPATH(rlocator, forknum) \
	pstrdup(relpath((rlocator), (forknum)).str)
#define PGSTRATA_RELPATHBACKEND(rlocator, backend, forknum) \
	pstrdup(relpathbackend((rlocator), (backend), (forknum)).str)
#else
#define PGSTRATA_RELPATH(rlocator, forknum) \
	relpath((rlocator), (forknum))
#define PGSTRATA_RELPATHBACKEND(rlocator, backend, forknum) \
	relpathbackend((rlocator), (backend), (forknum))
#endif

/*
 * Run an injection point.  18's INJECTION_POINT() takes an argument for the
 * callback as well; pgstrata's points pass none.
 */
#if PG_VERSION_NUM >= 180000
#define PGSTRATA_INJECTION_POINT(name) INJECTION_POINT(name, NULL)
#else
#define PGSTRATA_INJECTION_POINT(name) INJECTION_POINT(name)
#endif

/*
 * pgstat_count_io_op_time() for one operation that moves no bytes: 18
 * added the byte count
 */
#if PG_VERSION_NUM >= 180000
#define PGSTRATA_COUNT_IO_OP_TIME(io_object, io_context, io_op, start) \
	pgstat_count_io_op_time(io_object, io_context, io_op, start, 1, 0)
#else
#define PGSTRATA_COUNT_IO_OP_TIME(io_object, io_context, io_op, start) \
	pgstat_count_io_op_time(io_object, io_context, io_op, start, 1)
#endif

#endif							/* PGSTRATA_COMPAT_H */
