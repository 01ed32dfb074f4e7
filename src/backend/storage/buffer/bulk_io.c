/*-------------------------------------------------------------------------
 *
 * bulk_io.c
 *	  Bulk read-ahead and pre-extension: the polar_bulk_* settings.
 *
 * PostgreSQL 17 already combines the reads of sequential scans and ANALYZE
 * into one vectored read of up to io_combine_limit blocks (read_stream.c).
 * This file adds:
 *
 * - polar_bulk_read_size: the combine size of every read stream, so that
 *   one setting governs read-ahead (0 leaves 17's behaviour: upstream's
 *   streams combine up to io_combine_limit, the paths below read one
 *   block at a time), and the
 *   copy of ALTER TABLE ... SET TABLESPACE (RelationCopyStorage) through a
 *   read stream into shared buffers instead of one smgrread per block, or
 *   for temporary relations with vectored reads into the bulk writer's
 *   pages (VACUUM's first heap pass and B-tree vacuum scans got read
 *   streams in vacuumlazy.c and nbtree.c, with bulk_io_block_range_next
 *   for the latter);
 *
 * - the settings of heap pre-extension, polar_bulk_extend_size and
 *   polar_min_bulk_extend_table_size, whose policy is the heap access
 *   method's (src/backend/access/heap/bulk_io_heap.c);
 *
 * - pre-extension of index builds: a bulk write (bulk_write.c) with a
 *   window keeps the file that many blocks ahead of the highest page
 *   written, writes each contiguous run of pending pages with one
 *   smgrwritev, and cuts the unused tail when the build ends;
 *
 * - counters per backend type and per relation file in shared memory,
 *   read by the pgstrata extension (pgstrata_bulk_io,
 *   pgstrata_bulk_io_relations).
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/buffer/bulk_io.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/relpath.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "pgstrata_compat.h"
#include "port/atomics.h"
#include "storage/bufmgr.h"
#include "storage/bulk_io.h"
#include "storage/bulk_write.h"
#include "storage/lwlock.h"
#include "storage/read_stream.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"

/* The settings, in blocks */
int			polar_bulk_read_size = BULK_IO_DEFAULT_READ_SIZE;
int			polar_bulk_extend_size = BULK_IO_DEFAULT_EXTEND_SIZE;
int			polar_min_bulk_extend_table_size = BULK_IO_DEFAULT_MIN_EXTEND_TABLE_SIZE;
int			polar_index_create_bulk_extend_size = BULK_IO_DEFAULT_EXTEND_SIZE;

/*
 * The counters, one set per backend type and one per relation file, since
 * server start or reset.
 *
 * The relations' counters are in a hash table of fixed size keyed by the
 * relation's file (RelFileLocator): that is what the buffer manager knows
 * when it reads, and what the storage copy and index builds write, where no
 * relation OID is at hand.  pgstat's relation statistics would need new
 * fields, flush code and SQL functions in core; this is one hash table in
 * this file.  A relation that finds the table full is counted in the entry
 * of the "other relations" key (all zeros, no relation has it), so that the
 * sums over the relations stay equal to the sums over the backend types.
 * Entries stay until a reset; their memory is never freed, so a backend may
 * keep a pointer to the entry it counted into last, valid as long as the
 * table's generation, which a reset advances, has not changed.  A count
 * made while a reset runs may land in an entry the reset just removed and
 * be lost, which a reset may do to any count.
 */
#define BULK_IO_MAX_RELATIONS 4096

typedef struct BulkIoRelEntry
{
	RelFileLocator key;			/* the relation's file: hash key */
	pg_atomic_uint64 counters[BULK_IO_NUM_COUNTERS];
} BulkIoRelEntry;

typedef struct BulkIoShared
{
	pg_atomic_uint64 counters[BACKEND_NUM_TYPES][BULK_IO_NUM_COUNTERS];
	int			rel_tranche_id; /* tranche of rel_lock */
	LWLock		rel_lock;		/* adding and removing relations' entries */
	pg_atomic_uint32 rel_generation;	/* advanced by each reset */
} BulkIoShared;

static BulkIoShared *BulkIo = NULL;
static HTAB *BulkIoRels = NULL;

/* the entry this backend counted into last, and the generation it is of */
static BulkIoRelEntry *bulk_io_last_entry = NULL;
static uint32 bulk_io_last_generation = 0;
static bool bulk_io_tranche_named = false;

/* the key of the entry that counts relations that found the table full */
static const RelFileLocator bulk_io_other_relations = {0, 0, 0};

/* Shared memory the counters need */
Size
BulkIoShmemSize(void)
{
	return add_size(MAXALIGN(sizeof(BulkIoShared)),
					hash_estimate_size(BULK_IO_MAX_RELATIONS + 1,
									   sizeof(BulkIoRelEntry)));
}

/* Zero the counters of a relation's entry */
static void
bulk_io_init_rel_entry(BulkIoRelEntry *entry)
{
	for (int c = 0; c < BULK_IO_NUM_COUNTERS; c++)
		pg_atomic_init_u64(&entry->counters[c], 0);
}

/*
 * Enter the "other relations" entry; the caller holds rel_lock exclusively,
 * or is the postmaster setting up shared memory
 */
static void
bulk_io_enter_other_relations(void)
{
	BulkIoRelEntry *entry;
	bool		found;

	/* the table has room for it beyond BULK_IO_MAX_RELATIONS */
	entry = hash_search(BulkIoRels, &bulk_io_other_relations, HASH_ENTER,
						&found);
	if (!found)
		bulk_io_init_rel_entry(entry);
}

/* Create or attach to the counters in shared memory */
void
BulkIoShmemInit(void)
{
	HASHCTL		info;
	bool		found;

	BulkIo = ShmemInitStruct("pgstrata bulk I/O counters",
							 sizeof(BulkIoShared), &found);
	info.keysize = sizeof(RelFileLocator);
	info.entrysize = sizeof(BulkIoRelEntry);
	BulkIoRels = ShmemInitHash("pgstrata bulk I/O counters of relations",
							   BULK_IO_MAX_RELATIONS + 1,
							   BULK_IO_MAX_RELATIONS + 1, &info,
							   HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	if (!found)
	{
		for (int t = 0; t < BACKEND_NUM_TYPES; t++)
			for (int c = 0; c < BULK_IO_NUM_COUNTERS; c++)
				pg_atomic_init_u64(&BulkIo->counters[t][c], 0);
		BulkIo->rel_tranche_id = LWLockNewTrancheId();
		LWLockInitialize(&BulkIo->rel_lock, BulkIo->rel_tranche_id);
		pg_atomic_init_u32(&BulkIo->rel_generation, 0);
		bulk_io_enter_other_relations();
	}
}

/*
 * The counters of a relation's file, entered if new.
 *
 * The lock is taken only when the entry is not the one this backend counted
 * into last: a scan counts into the same entry read after read.
 */
static BulkIoRelEntry *
bulk_io_rel_entry(const RelFileLocator *rlocator)
{
	uint32		generation = pg_atomic_read_u32(&BulkIo->rel_generation);
	BulkIoRelEntry *entry;

	if (bulk_io_last_entry != NULL &&
		bulk_io_last_generation == generation &&
		RelFileLocatorEquals(bulk_io_last_entry->key, *rlocator))
		return bulk_io_last_entry;

	/* name the lock's tranche for wait events; this allocates, once */
	if (!bulk_io_tranche_named)
	{
		LWLockRegisterTranche(BulkIo->rel_tranche_id, "BulkIoRelations");
		bulk_io_tranche_named = true;
	}

	LWLockAcquire(&BulkIo->rel_lock, LW_SHARED);
	entry = hash_search(BulkIoRels, rlocator, HASH_FIND, NULL);
	LWLockRelease(&BulkIo->rel_lock);
	if (entry == NULL)
	{
		bool		found;

		LWLockAcquire(&BulkIo->rel_lock, LW_EXCLUSIVE);
		entry = hash_search(BulkIoRels, rlocator, HASH_ENTER_NULL, &found);
		if (entry == NULL)
			entry = hash_search(BulkIoRels, &bulk_io_other_relations,
								HASH_FIND, NULL);
		else if (!found)
			bulk_io_init_rel_entry(entry);
		LWLockRelease(&BulkIo->rel_lock);
	}
	Assert(entry != NULL);

	bulk_io_last_entry = entry;
	bulk_io_last_generation = generation;
	return entry;
}

/*
 * Add n to a counter of this backend's type and, with a relation's file
 * (rlocator, NULL for none), to that relation's
 */
void
bulk_io_count(const RelFileLocator *rlocator, BulkIoCounter counter,
			  uint64 n)
{
	/* a standalone backend before shared memory exists counts nothing */
	if (BulkIo == NULL || MyBackendType < 0 ||
		MyBackendType >= BACKEND_NUM_TYPES)
		return;
	pg_atomic_fetch_add_u64(&BulkIo->counters[MyBackendType][counter], n);
	if (rlocator != NULL)
		pg_atomic_fetch_add_u64(&bulk_io_rel_entry(rlocator)->counters[counter],
								n);
}

/* Current value of a counter of one backend type */
uint64
bulk_io_counter_value(int backend_type, BulkIoCounter counter)
{
	if (BulkIo == NULL || backend_type < 0 ||
		backend_type >= BACKEND_NUM_TYPES)
		return 0;
	return pg_atomic_read_u64(&BulkIo->counters[backend_type][counter]);
}

/*
 * A copy of the counters of every relation's file that has any, in
 * palloc'd memory; returns how many.  The entry of the other relations has
 * the key {0, 0, 0}.
 */
int
bulk_io_relation_counters(BulkIoRelCounters **result)
{
	HASH_SEQ_STATUS status;
	BulkIoRelEntry *entry;
	int			n = 0;

	*result = NULL;
	if (BulkIo == NULL)
		return 0;

	*result = palloc((BULK_IO_MAX_RELATIONS + 1) * sizeof(BulkIoRelCounters));
	LWLockAcquire(&BulkIo->rel_lock, LW_SHARED);
	hash_seq_init(&status, BulkIoRels);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		BulkIoRelCounters *out = &(*result)[n];
		bool		any = false;

		Assert(n <= BULK_IO_MAX_RELATIONS);
		out->locator = entry->key;
		for (int c = 0; c < BULK_IO_NUM_COUNTERS; c++)
		{
			out->counters[c] = pg_atomic_read_u64(&entry->counters[c]);
			any |= out->counters[c] != 0;
		}
		if (any)
			n++;
	}
	LWLockRelease(&BulkIo->rel_lock);
	return n;
}

/*
 * Set every counter back to zero, and forget the relations: their entries
 * are removed, so that the table makes room for the relations that come
 */
void
bulk_io_reset_counters(void)
{
	HASH_SEQ_STATUS status;
	BulkIoRelEntry *entry;

	if (BulkIo == NULL)
		return;
	for (int t = 0; t < BACKEND_NUM_TYPES; t++)
		for (int c = 0; c < BULK_IO_NUM_COUNTERS; c++)
			pg_atomic_write_u64(&BulkIo->counters[t][c], 0);

	LWLockAcquire(&BulkIo->rel_lock, LW_EXCLUSIVE);
	/* backends that kept a pointer to an entry look it up again */
	pg_atomic_fetch_add_u32(&BulkIo->rel_generation, 1);
	hash_seq_init(&status, BulkIoRels);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (hash_search(BulkIoRels, &entry->key, HASH_REMOVE, NULL) == NULL)
			elog(ERROR, "bulk I/O counters of a relation vanished");
	}
	bulk_io_enter_other_relations();
	LWLockRelease(&BulkIo->rel_lock);
}

/*
 * The number of blocks a read may combine.
 *
 * polar_bulk_read_size sets it; io_combine_limit, upstream's own setting,
 * stays an upper bound (both default to 128 kB), so that neither setting can
 * make a stream build reads larger than the other allows.
 *
 * 0 turns this feature off and leaves PostgreSQL's own behaviour on, as
 * PolarDB's setting does: the read paths this project added (bulk_io_path:
 * VACUUM's heap passes, B-tree vacuum, the storage copy, bitmap heap scans)
 * read one block at a time, as they do in 17, and upstream's read streams
 * (sequential scans, ANALYZE, pg_prewarm) combine up to io_combine_limit,
 * as they do in 17.
 */
int
bulk_io_read_combine_limit(bool bulk_io_path)
{
	if (polar_bulk_read_size <= 0)
		return bulk_io_path ? 1 : io_combine_limit;
	return Min(polar_bulk_read_size, io_combine_limit);
}

/* Count one read of nblocks blocks of a relation's file */
void
bulk_io_count_read(const RelFileLocator *rlocator, int nblocks)
{
	if (nblocks > 1)
	{
		bulk_io_count(rlocator, BULK_IO_READS, 1);
		bulk_io_count(rlocator, BULK_IO_READ_BLOCKS, nblocks);
	}
}

/* Read stream callback: the blocks of a range, in order */
BlockNumber
bulk_io_block_range_next(ReadStream *stream, void *callback_private_data,
						 void *per_buffer_data)
{
	BulkIoBlockRange *range = (BulkIoBlockRange *) callback_private_data;

	if (range->next >= range->end)
		return InvalidBlockNumber;
	return range->next++;
}

/*
 * Verify a page read from src as RelationCopyStorage does: a checksum
 * failure is logged and counted, and the page is refused unless
 * ignore_checksum_failure lets it through.  18 reports checksum failures
 * to the statistics in two steps, and PageIsVerified() takes the flags
 * that 17's PageIsVerifiedExtended() took.
 */
static bool
bulk_io_page_verified(SMgrRelation src, Page page, BlockNumber blkno)
{
#if PG_VERSION_NUM >= 180000
	Oid			dboid = src->smgr_rlocator.locator.dbOid;
	int			piv_flags = PIV_LOG_WARNING;
	bool		checksum_failure;
	bool		verified;

	if (ignore_checksum_failure)
		piv_flags |= PIV_IGNORE_CHECKSUM_FAILURE;
	verified = PageIsVerified(page, blkno, piv_flags, &checksum_failure);
	if (checksum_failure)
	{
		pgstat_prepare_report_checksum_failure(dboid);
		pgstat_report_checksum_failures_in_db(dboid, 1);
	}
	return verified;
#else
	return PageIsVerifiedExtended(page, blkno,
								  PIV_LOG_WARNING | PIV_REPORT_STAT);
#endif
}

/*
 * Copy a fork of a temporary relation with reads of up to
 * polar_bulk_read_size blocks straight into the bulk writer's pages.
 *
 * A temporary relation's pages live in this backend's local buffers, which
 * the buffer manager of 17 cannot read without a relcache entry, so the
 * file is read directly, as the stock copy does (the caller has flushed the
 * local buffers), but one run of blocks per system call instead of one
 * block.  Every page is verified as the stock copy does.
 */
static void
bulk_io_copy_storage_direct(SMgrRelation src, SMgrRelation dst,
							ForkNumber forknum, bool use_wal)
{
	BulkWriteState *bulkstate;
	BlockNumber nblocks;
	BlockNumber blkno = 0;
	int			limit = bulk_io_read_combine_limit(true);

	bulkstate = smgr_bulk_start_smgr(dst, forknum, use_wal);
	nblocks = smgrnblocks(src, forknum);

	while (blkno < nblocks)
	{
		BulkWriteBuffer bufs[MAX_IO_COMBINE_LIMIT];
		void	   *pages[MAX_IO_COMBINE_LIMIT];
		int			n = (int) Min((BlockNumber) limit, nblocks - blkno);

		/* If we got a cancel signal during the copy of the data, quit */
		CHECK_FOR_INTERRUPTS();

		for (int i = 0; i < n; i++)
		{
			bufs[i] = smgr_bulk_get_buf(bulkstate);
			pages[i] = bufs[i]->data;
		}
		smgrreadv(src, forknum, blkno, pages, n);
		bulk_io_count_read(&src->smgr_rlocator.locator, n);

		for (int i = 0; i < n; i++)
		{
			if (!bulk_io_page_verified(src, (Page) pages[i], blkno + i))
			{
				/* the path first, as RelationCopyStorage does */
				char	   *relpath = PGSTRATA_RELPATHBACKEND(src->smgr_rlocator.locator,
															  src->smgr_rlocator.backend,
															  forknum);

				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("invalid page in block %u of relation %s",
								blkno + i, relpath)));
			}
			/* the kind of page is unknown, so it is logged whole */
			smgr_bulk_write(bulkstate, blkno + i, bufs[i], false);
		}
		blkno += n;
	}
	smgr_bulk_finish(bulkstate);
}

/*
 * Copy a fork through a read stream: RelationCopyStorage's work with reads
 * of up to polar_bulk_read_size blocks into shared buffers.
 *
 * Returns false, having done nothing, when the setting is 0; the caller then
 * copies block by block as stock PostgreSQL does.  A temporary relation is
 * copied by bulk_io_copy_storage_direct().  The reads verify every page as a
 * scan does: a damaged page is an ERROR naming relation and block.  The
 * source's buffers go away with its storage at commit; BAS_BULKREAD keeps
 * the copy from pushing other data out of shared buffers.
 */
bool
bulk_io_copy_storage(SMgrRelation src, SMgrRelation dst, ForkNumber forknum,
					 char relpersistence, bool use_wal)
{
	BulkWriteState *bulkstate;
	BufferAccessStrategy strategy;
	BulkIoBlockRange range;
	ReadStream *stream;
	Buffer		buf;

	if (polar_bulk_read_size <= 0)
		return false;
	if (SmgrIsTemp(src))
	{
		bulk_io_copy_storage_direct(src, dst, forknum, use_wal);
		return true;
	}

	bulkstate = smgr_bulk_start_smgr(dst, forknum, use_wal);
	strategy = GetAccessStrategy(BAS_BULKREAD);
	range.next = 0;
	range.end = smgrnblocks(src, forknum);

	stream = read_stream_begin_smgr_relation(READ_STREAM_FULL |
											 READ_STREAM_MAINTENANCE |
											 READ_STREAM_BULK_IO,
											 strategy, src, relpersistence,
											 forknum, bulk_io_block_range_next,
											 &range, 0);
	while ((buf = read_stream_next_buffer(stream, NULL)) != InvalidBuffer)
	{
		BulkWriteBuffer page;
		BlockNumber blkno = BufferGetBlockNumber(buf);

		/* If we got a cancel signal during the copy of the data, quit */
		CHECK_FOR_INTERRUPTS();

		page = smgr_bulk_get_buf(bulkstate);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		memcpy(page->data, BufferGetPage(buf), BLCKSZ);
		UnlockReleaseBuffer(buf);

		/*
		 * As in RelationCopyStorage: the kind of page is unknown, so it is
		 * logged whole.
		 */
		smgr_bulk_write(bulkstate, blkno, page, false);
	}
	read_stream_end(stream);
	FreeAccessStrategy(strategy);

	smgr_bulk_finish(bulkstate);
	return true;
}

/* The pre-extension window of an index build, in blocks (0: none) */
BlockNumber
bulk_io_index_extend_window(void)
{
	return (BlockNumber) Max(polar_index_create_bulk_extend_size, 0);
}

/*
 * Write the sorted pending pages of a bulk write with a window.
 *
 * If the highest page lies at or past *extended_to (the end of the file),
 * the file is first zero-extended to one window past that page.  The last
 * flush of a bulk write passes a window of 0, so that a build that never
 * filled its queue (the index of a new TOAST table, say) extends the file
 * only to its pages and has nothing to trim.  Then each run of consecutive
 * block numbers goes out with one smgrwritev.  *relsize is the end of the
 * pages written so far, which the tail is cut back to at the end
 * (bulk_io_trim).  The checksums are set here, as smgr_bulk_flush does for
 * its own writes.
 */
void
bulk_io_write_runs(SMgrRelation smgr, ForkNumber forknum,
				   BlockNumber *blknos, Page *pages, int n,
				   BlockNumber *relsize, BlockNumber *extended_to,
				   BlockNumber window)
{
	BlockNumber last = blknos[n - 1];
	int			i = 0;

	if (last >= *extended_to)
	{
		uint64		target = (uint64) last + 1 + window;
		BlockNumber nblocks;

		if (target > (uint64) MaxBlockNumber)
			target = MaxBlockNumber;
		nblocks = (BlockNumber) target - *extended_to;
		smgrzeroextend(smgr, forknum, *extended_to, (int) nblocks, true);
		*extended_to = (BlockNumber) target;
		if (window > 0)
		{
			bulk_io_count(&smgr->smgr_rlocator.locator,
						  BULK_IO_INDEX_EXTENSIONS, 1);
			bulk_io_count(&smgr->smgr_rlocator.locator,
						  BULK_IO_INDEX_EXTENDED_BLOCKS, nblocks);
		}
	}

	for (int j = 0; j < n; j++)
		PageSetChecksumInplace(pages[j], blknos[j]);

	while (i < n)
	{
		int			run = 1;

		while (i + run < n && blknos[i + run] == blknos[i] + run)
			run++;
		smgrwritev(smgr, forknum, blknos[i], (const void **) &pages[i],
				   run, true);
		i += run;
	}

	if (last + 1 > *relsize)
		*relsize = last + 1;
}

/*
 * Cut the pre-extended tail of a finished bulk write back to its pages.
 *
 * The tail was never WAL-logged (zero-extension is not), so neither a
 * standby nor crash recovery ever sees it; only the primary's file shrinks.
 */
void
bulk_io_trim(SMgrRelation smgr, ForkNumber forknum, BlockNumber relsize,
			 BlockNumber extended_to)
{
	BlockNumber old_nblocks = extended_to;

	if (extended_to <= relsize)
		return;
#if PG_VERSION_NUM >= 180000
	/* 18's smgrtruncate() is 17's smgrtruncate2() */
	smgrtruncate(smgr, &forknum, 1, &old_nblocks, &relsize);
#else
	smgrtruncate2(smgr, &forknum, 1, &old_nblocks, &relsize);
#endif
	bulk_io_count(&smgr->smgr_rlocator.locator, BULK_IO_INDEX_TRIMMED_BLOCKS,
				  extended_to - relsize);
}
