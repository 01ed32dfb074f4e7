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
 * - heap pre-extension: a relation of at least
 *   polar_min_bulk_extend_table_size blocks that runs out of free space
 *   grows by polar_bulk_extend_size blocks at once where that pays: for a
 *   bulk load (COPY, CREATE TABLE AS, REFRESH MATERIALIZED VIEW: a
 *   BulkInsertState) and when other backends queue on the relation's
 *   extension lock.  A single session inserting row by row extends as in
 *   stock PostgreSQL.  The part that the buffer manager extends with pinned
 *   buffers is as in stock PostgreSQL; the rest of the window is
 *   zero-extended in the file without buffers and entered into the free
 *   space map.  Zero pages are initialised by the first insert that picks
 *   them (hio.c does that for every new page found through the FSM), so a
 *   crash leaves only zero pages, which VACUUM enters into the FSM again.
 *   VACUUM gives back the trailing pages of a window nobody is filling;
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

#include "access/htup_details.h"
#include "access/transam.h"
#include "common/relpath.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/bufmgr.h"
#include "storage/bulk_io.h"
#include "storage/bulk_write.h"
#include "storage/freespace.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/read_stream.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/injection_point.h"
#include "utils/rel.h"

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
 * table's generation, which a reset advances, has not changed.
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
			if (!PageIsVerifiedExtended((Page) pages[i], blkno + i,
										PIV_LOG_WARNING | PIV_REPORT_STAT))
			{
				/* the path first, as RelationCopyStorage does */
				char	   *relpath = relpathbackend(src->smgr_rlocator.locator,
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

/*
 * Whether extending this heap relation should pre-extend it by the window.
 *
 * Only relations in shared buffers (temporary ones are private and small)
 * of at least polar_min_bulk_extend_table_size blocks qualify.
 */
bool
bulk_io_heap_wants_pre_extension(Relation rel)
{
	if (polar_bulk_extend_size <= 0 || RelationUsesLocalBuffers(rel))
		return false;
	return RelationGetNumberOfBlocks(rel) >=
		(BlockNumber) polar_min_bulk_extend_table_size;
}

/*
 * Prepare the extension of a heap relation that found no page with room.
 *
 * Returns the relation's size if the extension may add a pre-extension
 * window: the caller then extends with EB_BULK_IO_KEEP_EXTENSION_LOCK, so
 * that the buffer manager evicts its victim buffers before it takes the
 * extension lock, as always, and returns still holding it, and calls
 * bulk_io_heap_window() under the lock.  Returns InvalidBlockNumber,
 * holding no lock, when the relation does not pre-extend, or when another
 * backend was extending it and left a page with "needed" bytes free in the
 * FSM: *target is then that page, and the caller tries it instead of
 * extending again.  Without that look, every backend queued behind a
 * pre-extension would extend the relation once more after it.  That
 * backend recorded its window in the FSM before it released the lock
 * (bulk_io_heap_pre_extend), so the look finds it.  We only wait for the
 * lock here, and do not keep it: holding it while the buffer manager
 * evicted victims (and wrote them out, WAL flush included) would make
 * every queued backend wait for that too.
 */
BlockNumber
bulk_io_heap_prepare_extension(Relation rel, Size needed, BlockNumber *target)
{
	*target = InvalidBlockNumber;
	if (!bulk_io_heap_wants_pre_extension(rel))
		return InvalidBlockNumber;

	/* a test holds a backend here until another one extends */
	INJECTION_POINT("bulk-io-extension-prepare");

	if (RelationExtensionLockWaiterCount(rel) > 0)
	{
		LockRelationForExtension(rel, ExclusiveLock);
		UnlockRelationForExtension(rel, ExclusiveLock);
		*target = GetPageWithFreeSpace(rel, needed);
		if (*target != InvalidBlockNumber)
			return InvalidBlockNumber;
	}
	return RelationGetNumberOfBlocks(rel);
}

/*
 * How many blocks of pre-extension window to add after an extension, 0 for
 * none.
 *
 * The caller holds the relation extension lock, has just extended the
 * relation by extended_by blocks from first_block, and found the relation
 * seen_size blocks long before (bulk_io_heap_prepare_extension).  With a
 * result above 0 it passes it to bulk_io_heap_pre_extend() with the lock
 * still held; with 0 it releases the lock.
 *
 * A window pays for a bulk load (bulk_load: the caller has a
 * BulkInsertState, as COPY has), which fills it soon, and when other
 * backends are queued on the extension lock, which is the contention that
 * PolarDB's setting is for: they take their pages from the window instead
 * of each extending in turn.  A single session inserting row by row into a
 * large table gains little from it on a local file system (one small
 * extension per page filled, uncontended) and would leave up to a window of
 * empty pages at the end of the table for good; it extends as stock
 * PostgreSQL does, by as many pages as upstream chooses.  If another
 * backend extended the relation after we looked at it, it may have added a
 * window that the FSM now knows: we add none, and use its pages next time.
 */
BlockNumber
bulk_io_heap_window(Relation rel, bool bulk_load, BlockNumber seen_size,
					BlockNumber first_block, uint32 extended_by)
{
	BlockNumber window = (BlockNumber) polar_bulk_extend_size;
	BlockNumber next_block = first_block + extended_by;

	Assert(BlockNumberIsValid(seen_size));
	Assert(!RelationUsesLocalBuffers(rel));

	/* a test holds the extender here until a second backend queues */
	INJECTION_POINT("bulk-io-extension-locked");

	if (first_block != seen_size || extended_by >= window)
		return 0;
	/* the lock's count of requests includes ours */
	if (!bulk_load && RelationExtensionLockWaiterCount(rel) <= 1)
		return 0;
	if ((uint64) next_block + (window - extended_by) > (uint64) MaxBlockNumber)
		return MaxBlockNumber - next_block;
	return window - extended_by;
}

/*
 * Add nblocks blocks of pre-extension window to a heap relation, enter them
 * into the FSM, and release the relation extension lock.
 *
 * The caller holds the extension lock and no buffer lock, and has just
 * extended the relation by extended_by blocks with buffers (the buffer
 * manager took their victim buffers before the lock).  The window is
 * zero-extended in the file without buffers (smgrzeroextend uses fallocate
 * where it can, and a compressed fork only raises its logical size), so
 * that nothing is evicted while the lock is held: evicting a dirty victim
 * can mean a write and a WAL flush, and every backend queued on the lock
 * would wait for it.  The window goes into the FSM before the lock is
 * released, so that the backends queued on it find it there.
 *
 * Then, with no lock held, the first part of the window is read into shared
 * buffers with combined reads (the file system returns the zeros of
 * fallocated blocks without device I/O), so that the inserters that take
 * those pages later find valid, clean buffers instead of reading each page
 * from the file with one system call.  Those buffers come from the caller's
 * strategy ring when it has one (COPY's bulk-write ring), from the whole
 * pool otherwise, so at most 1/PRE_EXTEND_BUFFER_SHARE of shared buffers is
 * read that way: a window must not push a busy pool's useful pages out.
 * This is an ordinary read, so a page that an inserter took from the FSM
 * meanwhile is found in the pool, or read with what it wrote.
 */
#define PRE_EXTEND_BUFFER_SHARE 32

void
bulk_io_heap_pre_extend(Relation rel, BufferAccessStrategy strategy,
						BlockNumber nblocks, uint32 extended_by)
{
	BlockNumber start;
	BulkIoBlockRange range;
	ReadStream *stream;
	Buffer		buf;

	Assert(nblocks > 0);

	/* we hold the extension lock: our own extension ends the relation */
	start = RelationGetNumberOfBlocks(rel);
	smgrzeroextend(RelationGetSmgr(rel), MAIN_FORKNUM, start, (int) nblocks,
				   false);
	bulk_io_heap_record_free(rel, start, start + nblocks);

	UnlockRelationForExtension(rel, ExclusiveLock);

	bulk_io_count(&rel->rd_locator, BULK_IO_HEAP_EXTENSIONS, 1);
	bulk_io_count(&rel->rd_locator, BULK_IO_HEAP_EXTENDED_BLOCKS,
				  extended_by + nblocks);

	range.next = start;
	range.end = start + Min(nblocks,
							(BlockNumber) (NBuffers / PRE_EXTEND_BUFFER_SHARE));
	if (range.end <= range.next)
		return;
	stream = read_stream_begin_relation(READ_STREAM_FULL |
										READ_STREAM_SEQUENTIAL,
										strategy, rel, MAIN_FORKNUM,
										bulk_io_block_range_next, &range, 0);
	while ((buf = read_stream_next_buffer(stream, NULL)) != InvalidBuffer)
		ReleaseBuffer(buf);
	read_stream_end(stream);
}

/*
 * Before a heap relation is extended because its FSM knows no page with room:
 * if the relation ends in never-used pages, enter them into the FSM and
 * return true, so that the caller looks there instead of extending.
 *
 * The FSM is not WAL-logged, so a crash between a pre-extension and the
 * checkpoint that would write its FSM pages leaves the window on disk and
 * unknown to the FSM; without this, the next insert would pre-extend again
 * and the old window would stay empty in the middle of the file until a
 * VACUUM.  Such a window is at the end of the relation, since nothing
 * extends past it without filling it first, except that an insert that
 * finds no FSM entry tries the last page first (RelationGetBufferForTuple),
 * so the last page may be in use above a run of unused ones.  So the run
 * looked for is the never-used pages ending at the last page or the one
 * before it.  In the common case the last two pages hold tuples and only
 * they are read; after a crash, at most one window of pages is read, once.
 * No lock is needed: a page that another backend is about to initialise is
 * merely entered into the FSM once more, which the FSM's users correct as
 * they do any stale entry.
 */
bool
bulk_io_heap_reclaim_window(Relation rel, BufferAccessStrategy strategy)
{
	BlockNumber nblocks;
	BlockNumber limit;
	BlockNumber low = InvalidBlockNumber;
	BlockNumber high = InvalidBlockNumber;

	if (!bulk_io_heap_wants_pre_extension(rel))
		return false;
	nblocks = RelationGetNumberOfBlocks(rel);
	limit = Min(nblocks, (BlockNumber) polar_bulk_extend_size + 1);

	for (BlockNumber blkno = nblocks; blkno-- > nblocks - limit;)
	{
		Buffer		buf;
		bool		unused;

		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL,
								 strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		unused = PageIsNew(BufferGetPage(buf));
		UnlockReleaseBuffer(buf);
		if (unused)
		{
			if (high == InvalidBlockNumber)
				high = blkno;
			low = blkno;
		}
		else if (high != InvalidBlockNumber || blkno + 1 < nblocks)
			break;				/* below the run, or two used pages at the end */
	}
	if (high == InvalidBlockNumber)
		return false;

	Assert(low <= high && high >= nblocks - 2);
	bulk_io_heap_record_free(rel, low, high + 1);
	return true;
}

/* Enter the zero pages [from, to) of a heap relation into its FSM */
void
bulk_io_heap_record_free(Relation rel, BlockNumber from, BlockNumber to)
{
	Size		freespace = BLCKSZ - SizeOfPageHeaderData;

	/*
	 * The window exists on disk, the FSM does not know it yet: a crash here
	 * orphans it, which bulk_io_heap_reclaim_window() must undo.
	 */
	INJECTION_POINT("bulk-io-window-before-fsm");

	for (BlockNumber blkno = from; blkno < to; blkno++)
		RecordPageWithFreeSpace(rel, blkno, freespace);

	/* make the space visible to searches from the top of the map */
	FreeSpaceMapVacuumRange(rel, from, to);
}

/*
 * Whether VACUUM should give back the empty pages at the end of a heap
 * relation because they are a pre-extension window nobody is filling.
 *
 * VACUUM truncates an empty tail only when it is at least 1/16 of the table
 * or 1,000 pages (should_attempt_truncation), since truncation takes an
 * AccessExclusiveLock, which a standby replays.  A window of 4 MB on a
 * table above 64 MB is neither, so without this it would stay for good, and
 * every VACUUM would read its pages again (zero pages are never marked
 * all-visible).  This says yes when:
 *
 * - the relation ends in a never-used page (PageIsNew): the tail is what an
 *   extension added, not pages emptied by DELETE, which stock rules
 *   govern;
 * - the last page with tuples holds no row inserted by a transaction that
 *   is still running or ended after VACUUM's cutoff (oldest_xmin): nobody
 *   is filling the window right now.  A window under a steady stream of
 *   inserts stays, and is not cut and added again at every VACUUM, and
 *   VACUUM does not wait 5 s for a lock that a running COPY holds.  (The
 *   page's all-visible bit would say the same, but VACUUM cannot set it
 *   right after an asynchronously committed load.)
 *
 * lazy_truncate_heap() then takes the AccessExclusiveLock only if nobody
 * holds a lock on the relation, gives up as soon as someone queues for
 * one, and counts again under the lock the pages that are still empty, so
 * a writer that took a page of the window meanwhile keeps it.  With
 * polar_bulk_extend_size = 0 VACUUM truncates as stock PostgreSQL does.
 */
bool
bulk_io_heap_unused_window(Relation rel, BlockNumber nonempty_pages,
						   BlockNumber rel_pages, TransactionId oldest_xmin)
{
	Buffer		buf;
	bool		never_used;
	bool		quiet = true;

	if (polar_bulk_extend_size <= 0 || RelationUsesLocalBuffers(rel) ||
		rel_pages < (BlockNumber) polar_min_bulk_extend_table_size ||
		nonempty_pages >= rel_pages)
		return false;

	buf = ReadBufferExtended(rel, MAIN_FORKNUM, rel_pages - 1, RBM_NORMAL,
							 NULL);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	never_used = PageIsNew(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	if (!never_used)
		return false;

	if (nonempty_pages > 0)
	{
		Page		page;
		OffsetNumber maxoff;

		buf = ReadBufferExtended(rel, MAIN_FORKNUM, nonempty_pages - 1,
								 RBM_NORMAL, NULL);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		maxoff = PageIsNew(page) ? InvalidOffsetNumber :
			PageGetMaxOffsetNumber(page);
		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
		{
			ItemId		itemid = PageGetItemId(page, off);
			HeapTupleHeader tuple;

			if (!ItemIdIsNormal(itemid))
				continue;
			tuple = (HeapTupleHeader) PageGetItem(page, itemid);
			if (!TransactionIdPrecedes(HeapTupleHeaderGetXmin(tuple),
									   oldest_xmin))
			{
				quiet = false;
				break;
			}
		}
		UnlockReleaseBuffer(buf);
	}
	return quiet;
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
	smgrtruncate2(smgr, &forknum, 1, &old_nblocks, &relsize);
	bulk_io_count(&smgr->smgr_rlocator.locator, BULK_IO_INDEX_TRIMMED_BLOCKS,
				  extended_to - relsize);
}
