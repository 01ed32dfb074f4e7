/*-------------------------------------------------------------------------
 *
 * pcs_internal.h
 *	  What the files of page-compressed storage share: the layers below
 *	  pcs.c, and what pcs.c offers the asynchronous reads above it.
 *
 * The layers, from the bottom: one segment of a compressed fork, its file,
 * header, map and allocation (pcs_segment.c); its dictionaries
 * (pcs_dict.c); the per-fork format, block I/O and the smgr callbacks
 * (pcs.c); PostgreSQL 18's asynchronous reads (pcs_aio.c).  A file calls
 * only into the layers below it, and each layer below pcs.c has a header
 * of its own (storage/pcs_segment.h, storage/pcs_dict.h), which this one
 * includes.  pcs_shmem.c, which sets up the shared memory of all of them,
 * includes it too; nothing outside src/backend/storage/smgr/ does:
 * storage/pcs.h is the public face.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/storage/pcs_internal.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PCS_INTERNAL_H
#define PCS_INTERNAL_H

#include "storage/pcs.h"
#include "storage/pcs_dict.h"
#include "storage/pcs_format.h"
#include "storage/pcs_segment.h"

/* Values of SMgrRelationData.pcs_format[] */
#define PCS_FORMAT_UNKNOWN		0
#define PCS_FORMAT_MD			1
#define PCS_FORMAT_COMPRESSED	2
#define PCS_FORMAT_EMPTY		3	/* never stored: see pcs_fork_format() */

/*
 * Images of the blocks of one vectored read that lie at most this far apart
 * on disk are fetched with one read: reading a small gap costs less than a
 * second system call, and the gap is usually slack of the image before it.
 */
#define PCS_COALESCE_GAP		(8 * 1024)

/* per-fork format and block I/O (pcs.c) */
extern int	pcs_fork_format(SMgrRelation reln, ForkNumber forknum);
extern void pcs_invalid_page(char *buffer);
extern int	pcs_problem_errcode(PcsProblem problem);

#if PG_VERSION_NUM >= 180000
/* the shared state of asynchronous reads (pcs_aio.c, built by 18 only) */
extern Size pcs_aio_shmem_size(void);
extern void pcs_aio_shmem_init(void);
#endif

/* Is this fork compressed? md forks answer after one cached lookup. */
static inline bool
pcs_is_compressed(SMgrRelation reln, ForkNumber forknum)
{
	int			format = reln->pcs_format[forknum];

	if (likely(format != PCS_FORMAT_UNKNOWN))
		return format == PCS_FORMAT_COMPRESSED;
	return pcs_fork_format(reln, forknum) == PCS_FORMAT_COMPRESSED;
}

/*
 * Count bytes a compressed fork read or wrote for the operation the buffer
 * manager is counting in pg_stat_io (PostgreSQL 18's byte columns; patch
 * "pg_stat_io: count the bytes compressed forks read, write and extend").
 * 17's pg_stat_io counts blocks only.
 */
static inline void
pcs_count_io_bytes(uint64 nbytes)
{
#if PG_VERSION_NUM >= 180000
	smgr_io_bytes_add(nbytes);
#endif
}

#endif							/* PCS_INTERNAL_H */
