/*-------------------------------------------------------------------------
 *
 * test_pcs.c
 *	  Test functions of compressed storage (pcs), for the project's tests.
 *
 * test_pcs_extend_to() extends a relation's main fork by writing one block
 * past its end, skipping the blocks between, which is what hash indexes do
 * when they allocate a split point (_hash_alloc_buckets()).  Reproducing
 * that with a hash index past a 1 GB segment boundary takes millions of
 * rows; this takes one call.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  test/modules/test_pcs/test_pcs.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/bufpage.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/rel.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(test_pcs_extend_to);

/* Write a zero page at block blkno of rel's main fork, past its end */
Datum
test_pcs_extend_to(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	int64		blkno = PG_GETARG_INT64(1);
	Relation	rel;
	PGIOAlignedBlock zerobuf;
	BlockNumber nblocks;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to extend relations directly")));
	if (blkno < 0 || blkno >= MaxBlockNumber)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("block number %lld is out of range",
						(long long) blkno)));

	rel = relation_open(relid, AccessExclusiveLock);
	LockRelationForExtension(rel, ExclusiveLock);
	nblocks = smgrnblocks(RelationGetSmgr(rel), MAIN_FORKNUM);
	if ((BlockNumber) blkno < nblocks)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("block %lld is not past the end of relation \"%s\" (%u blocks)",
						(long long) blkno, RelationGetRelationName(rel),
						nblocks)));

	/* as _hash_alloc_buckets(): a zero page, the fork's size changes */
	memset(zerobuf.data, 0, BLCKSZ);
	smgrextend(RelationGetSmgr(rel), MAIN_FORKNUM, (BlockNumber) blkno,
			   zerobuf.data, false);
	nblocks = smgrnblocks(RelationGetSmgr(rel), MAIN_FORKNUM);

	UnlockRelationForExtension(rel, ExclusiveLock);
	relation_close(rel, AccessExclusiveLock);
	PG_RETURN_INT64((int64) nblocks);
}
