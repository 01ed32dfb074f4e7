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
 * test_pcs_dict_cache() sets, in this session, how many bytes of prepared
 * compression dictionaries it keeps (pcs_dict.c), so that a test can show
 * the bound with a few segments rather than a thousand.
 *
 * test_pcs_free_pool() drives the free units that compressed segments keep
 * for reuse (pcs_free_pool.c) through their own functions, for a segment
 * of a relation that does not exist: which run a write is given, when a
 * run becomes reusable, merging, more runs than a segment's pages, and a
 * full pool.  What an update-heavy table or a full pool would take
 * minutes to show, this shows in one call.
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
#include "catalog/pg_tablespace_d.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/bufpage.h"
#include "storage/lmgr.h"
#include "storage/pcs_dict.h"
#include "storage/pcs_format.h"
#include "storage/pcs_free_pool.h"
#include "storage/smgr.h"
#include "utils/rel.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(test_pcs_extend_to);
PG_FUNCTION_INFO_V1(test_pcs_free_pool);
PG_FUNCTION_INFO_V1(test_pcs_free_segments);
PG_FUNCTION_INFO_V1(test_pcs_forget_walks);
PG_FUNCTION_INFO_V1(test_pcs_dict_cache);

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

/* The segment test_pcs_free_pool() works on: no relation has its number */
static void
test_free_key(PcsFreeKey *key, FileTag *tag)
{
	memset(key, 0, sizeof(PcsFreeKey));
	key->rlocator.spcOid = DEFAULTTABLESPACE_OID;
	key->rlocator.dbOid = MyDatabaseId;
	key->rlocator.relNumber = (RelFileNumber) 4000000000U;
	key->backend = INVALID_PROC_NUMBER;
	key->forknum = MAIN_FORKNUM;
	key->segno = 7;

	memset(tag, 0, sizeof(FileTag));
	tag->handler = SYNC_HANDLER_MD;
	tag->forknum = key->forknum;
	tag->rlocator = key->rlocator;
	tag->segno = key->segno;
}

/*
 * The header of the test segment, as the free pool takes it: a new segment
 * of the current format (its unit size and data area)
 */
static const PcsHeader *
test_pcs_header(void)
{
	static PcsHeader header;
	static bool made = false;

	if (!made)
	{
		pcs_header_init(&header, PCS_ALGO_ZSTD, PCS_ZSTD_DEFAULT_LEVEL, 7);
		made = true;
	}
	return &header;
}

/* Claim count units of the test segment; -1 if no run holds them */
static int64
test_claim(const PcsFreeKey *key, uint32 count)
{
	uint32		first;

	return pcs_claim_units(key, count, &first) ? (int64) first : -1;
}

/* Fail the test unless got is expected */
static void
test_expect(const char *what, int64 got, int64 expected)
{
	if (got != expected)
		elog(ERROR, "%s: got " INT64_FORMAT ", expected " INT64_FORMAT,
			 what, got, expected);
}

/*
 * Check the free-unit pool's rules on a segment of its own; ERROR at the
 * first that does not hold, else the number of checks made.
 */
Datum
test_pcs_free_pool(PG_FUNCTION_ARGS)
{
	PcsFreeKey	key;
	FileTag		tag;
	int32		pool_runs;
	int32		kept;
	int32		kept_before;
	uint64		forgotten;
	uint64		forgotten_before;
	uint64		clock;
	int			checks = 0;
	const int	shift = PCS_UNIT_SHIFT;
	const PcsHeader *hdr = test_pcs_header();

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to use the free-unit pool directly")));
	test_free_key(&key, &tag);
	pcs_forget_fork(key.rlocator, InvalidForkNumber);

	/* the smallest run that holds a claim goes, from its first unit */
	pcs_free_units(&key, hdr, 1000, 10, true, false, -1);
	pcs_free_units(&key, hdr, 2000, 4, true, false, -1);
	pcs_free_units(&key, hdr, 3000, 6, true, false, -1);
	test_expect("a claim of 5 units takes the 6-unit run", test_claim(&key, 5), 3000);
	test_expect("a claim of 4 units takes the 4-unit run", test_claim(&key, 4), 2000);
	test_expect("a claim of 1 unit takes what is left of the 6-unit run",
				test_claim(&key, 1), 3005);
	test_expect("a claim of 11 units finds no run", test_claim(&key, 11), -1);
	test_expect("a claim of 10 units takes the 10-unit run", test_claim(&key, 10), 1000);
	test_expect("nothing is left", test_claim(&key, 1), -1);
	checks += 6;

	/* a run freed while the map on disk may point to it waits for an fsync */
	pcs_free_units(&key, hdr, 5000, 8, false, false, -1);
	test_expect("a run is not handed out before an fsync", test_claim(&key, 8), -1);
	clock = pcs_sync_begin(&tag);
	pcs_free_units(&key, hdr, 6000, 8, false, false, -1);
	pcs_sync_done(&tag, clock, -1);
	test_expect("after an fsync that began after it was freed, it is",
				test_claim(&key, 8), 5000);
	test_expect("a run freed while that fsync ran still waits",
				test_claim(&key, 8), -1);
	clock = pcs_sync_begin(&tag);
	pcs_sync_done(&tag, clock, -1);
	test_expect("until the next fsync", test_claim(&key, 8), 6000);
	checks += 4;

	/*
	 * Runs that touch are merged when the lists are tidied (after an fsync):
	 * reusable ones with each other, and a reusable one never with one that
	 * waits.
	 */
	for (uint32 i = 0; i < 20; i++)
		pcs_free_units(&key, hdr, 10000 + 4 * i, 4, false, false, -1);
	clock = pcs_sync_begin(&tag);
	pcs_free_units(&key, hdr, 10080, 4, false, false, -1);
	pcs_sync_done(&tag, clock, -1);
	test_expect("twenty reusable runs that touch are merged into one of 80 units",
				test_claim(&key, PCS_MAX_UNITS), 10000);
	test_expect("the run that touches them but waits was not merged",
				test_claim(&key, 4), -1);
	clock = pcs_sync_begin(&tag);
	pcs_sync_done(&tag, clock, -1);
	test_expect("it is handed out after the next fsync", test_claim(&key, 4), 10080);
	checks += 3;

	/*
	 * A segment keeps many more runs than the 64 the first version kept:
	 * every page that moved leaves one.
	 */
	for (uint32 i = 0; i < 5000; i++)
		pcs_free_units(&key, hdr, 100000 + 10 * i, 1 + i % 8, true, false, -1);
	for (uint32 i = 0; i < 5000; i++)
	{
		uint32		count = 1 + (4999 - i) % 8;
		int64		first = test_claim(&key, count);

		if (first < 100000 || (first - 100000) % 10 != 0)
			elog(ERROR, "claim %u of %u units: got " INT64_FORMAT
				 ", expected a run of 5,000 freed apart",
				 i, count, first);
	}
	test_expect("all 5,000 runs were kept and handed out", test_claim(&key, 1), -1);
	checks += 5001;

	/*
	 * Once a megabyte freed since the segment's last fsync waits, the writer
	 * that freed the last of it, and no other, is asked to fsync the segment
	 * early; the fsync asks the next megabyte's writer again.
	 */
	{
		const uint32 run = 16;
		int			runs_per_mb = (int) ((1024 * 1024) >> shift) / run;

		for (int round = 0; round < 2; round++)
		{
			int			asked_at = -1;
			int			asked = 0;

			for (int i = 0; i < 2 * runs_per_mb; i++)
			{
				if (pcs_free_units(&key, hdr,
								   200000 + round * 100000 + run * (uint32) i,
								   run, false, false, -1))
				{
					asked++;
					if (asked_at < 0)
						asked_at = i;
				}
			}
			test_expect("the writer that makes a megabyte wait is asked to fsync early",
						asked_at, runs_per_mb - 1);
			test_expect("and no writer after it, until the fsync", asked, 1);
			test_expect("they wait for it", test_claim(&key, run), -1);
			clock = pcs_sync_begin(&tag);
			pcs_sync_done(&tag, clock, -1);
			test_expect("after it, they are handed out (merged)",
						test_claim(&key, run), 200000 + round * 100000);
			checks += 4;
			pcs_forget_fork(key.rlocator, InvalidForkNumber);
		}
		/* freed while the segment is not written with an fsync: no request */
		test_expect("units reusable at once never ask for an fsync",
					pcs_free_units(&key, hdr, 900000, PCS_MAX_UNITS, true,
								   false, -1), false);
		checks++;
		(void) test_claim(&key, PCS_MAX_UNITS);
	}

	/*
	 * A full pool: a run smaller than any the segment keeps is forgotten, a
	 * larger one takes the place of the smallest.
	 */
	pcs_free_usage(&pool_runs, &kept_before, &forgotten_before);
	for (int32 i = 0; i < pool_runs - kept_before + 10; i++)
		pcs_free_units(&key, hdr, 2 * (uint32) i + 1000000, 1, true, false, -1);
	pcs_free_usage(&pool_runs, &kept, &forgotten);
	test_expect("the pool is full", kept, pool_runs);
	test_expect("the runs past its size were forgotten",
				(int64) (forgotten - forgotten_before), 10);
	pcs_free_units(&key, hdr, 5000000, 40, true, false, -1);
	pcs_free_usage(&pool_runs, &kept, &forgotten);
	test_expect("a larger run took the place of a smaller one",
				(int64) (forgotten - forgotten_before), 11);
	test_expect("which is handed out", test_claim(&key, 40), 5000000);
	checks += 4;

	/* forgetting the fork gives every run back to the pool */
	pcs_forget_fork(key.rlocator, InvalidForkNumber);
	pcs_free_usage(&pool_runs, &kept, &forgotten);
	test_expect("the fork's runs went back to the pool", kept, kept_before);
	test_expect("and none is handed out", test_claim(&key, 1), -1);
	checks += 2;

	PG_RETURN_INT32(checks);
}

/* Fail unless the caller is a superuser: the functions below use the pool */
static void
test_require_superuser(void)
{
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to use the free-unit pool directly")));
}

/*
 * Keep a run of units (reuse_now) or forget the runs (!keep) in segment 7
 * of each of n relations of no file, numbered from first on
 */
static void
test_runs_of_relations(PcsFreeKey *key, RelFileNumber first, int32 n,
					   bool keep)
{
	for (int32 i = 0; i < n; i++)
	{
		key->rlocator.relNumber = first + i;
		if (keep)
			pcs_free_units(key, test_pcs_header(), 1000, 4, true, false, -1);
		else
			pcs_forget_fork(key->rlocator, MAIN_FORKNUM);
	}
}

/*
 * Keep a run of units in each of n segments of no relation, one after the
 * other, and forget them all again: how many of the runs were kept.  The
 * table of segments is fixed in size, so the runs of segments past it are
 * forgotten, and the table takes no shared memory beyond its own.
 */
Datum
test_pcs_free_segments(PG_FUNCTION_ARGS)
{
	int32		n = PG_GETARG_INT32(0);
	PcsFreeKey	key;
	FileTag		tag;
	int32		pool_runs;
	int32		kept_before;
	int32		kept;
	uint64		forgotten;

	test_require_superuser();
	test_free_key(&key, &tag);
	pcs_free_usage(&pool_runs, &kept_before, &forgotten);
	test_runs_of_relations(&key, 4000000001U, n, true);
	pcs_free_usage(&pool_runs, &kept, &forgotten);
	test_runs_of_relations(&key, 4000000001U, n, false);
	PG_RETURN_INT32(kept - kept_before);
}

/*
 * Keep a run in each of n segments of no relation, each of a relation of
 * its own, then forget the runs of m other relations, which keep none, and
 * last those of the n: how many of the m forgets walked the table (only
 * those whose relation shares a slot of the filter with one of the n
 * should).  ERROR if forgetting the n left a run behind.
 */
Datum
test_pcs_forget_walks(PG_FUNCTION_ARGS)
{
	int32		n = PG_GETARG_INT32(0);
	int32		m = PG_GETARG_INT32(1);
	PcsFreeKey	key;
	FileTag		tag;
	int32		pool_runs;
	int32		kept_before;
	int32		kept;
	uint64		forgotten;
	uint64		walks;

	test_require_superuser();
	test_free_key(&key, &tag);
	pcs_free_usage(&pool_runs, &kept_before, &forgotten);
	test_runs_of_relations(&key, 4000000001U, n, true);
	walks = pcs_free_walks();
	test_runs_of_relations(&key, 4100000001U, m, false);
	walks = pcs_free_walks() - walks;
	test_runs_of_relations(&key, 4000000001U, n, false);
	pcs_free_usage(&pool_runs, &kept, &forgotten);
	test_expect("the runs of the n relations were forgotten", kept, kept_before);
	PG_RETURN_INT64((int64) walks);
}

/*
 * Set this session's limit on the bytes of prepared dictionaries it keeps
 * (pcs_dict_cache_limit), if limit is not null; the bytes they take now
 */
Datum
test_pcs_dict_cache(PG_FUNCTION_ARGS)
{
	test_require_superuser();
	if (!PG_ARGISNULL(0))
		pcs_dict_cache_limit = PG_GETARG_INT32(0);
	PG_RETURN_INT64((int64) pcs_dict_memory());
}
