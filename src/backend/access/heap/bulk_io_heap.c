/*-------------------------------------------------------------------------
 *
 * bulk_io_heap.c
 *	  Heap pre-extension: the policy of polar_bulk_extend_size and
 *	  polar_min_bulk_extend_table_size.
 *
 * A heap relation of at least polar_min_bulk_extend_table_size blocks that
 * runs out of free space grows by polar_bulk_extend_size blocks at once
 * where that pays: when other backends queue on the relation's extension
 * lock, and for a bulk load (COPY into an existing table: a
 * BulkInsertState that uses the FSM) while it is the only one loading the
 * relation.  A single session inserting row by row, and bulk loads that
 * run side by side, extend as in stock PostgreSQL.  The pages the buffer
 * manager extends with buffers are as in stock PostgreSQL, victims found
 * before the extension lock; the rest of the window is zero-extended in
 * the file under the lock without buffers and entered into the free space
 * map, and its first part is read into shared buffers once the lock is
 * released.  Zero pages are initialised by the first insert that picks
 * them (hio.c does that for every new page found through the FSM), so a
 * crash leaves only zero pages, which inserts find again at the end of the
 * relation and VACUUM enters into the FSM.  VACUUM gives back the trailing
 * pages of a window nobody is filling.
 *
 * hio.c and vacuumlazy.c call in here; the settings and the counters are
 * the storage layer's (src/backend/storage/buffer/bulk_io.c).
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/access/heap/bulk_io_heap.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/bulk_io_heap.h"
#include "access/heapam.h"
#include "access/hio.h"
#include "access/htup_details.h"
#include "access/transam.h"
#include "pgstrata_compat.h"
#include "storage/bufmgr.h"
#include "storage/bulk_io.h"
#include "storage/freespace.h"
#include "storage/lmgr.h"
#include "storage/read_stream.h"
#include "storage/smgr.h"
#include "utils/injection_point.h"
#include "utils/rel.h"

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
 * every queued backend wait for that too.  So another backend can still
 * extend the relation between this look and our extension, window
 * included; the caller extends only up to the size returned here plus its
 * own pages (ExtendBufferedRelByUpto), and looks in the FSM again if the
 * relation has grown past that, rather than extend past that window and
 * leave its unused pages below a used one, where VACUUM cannot give them
 * back.
 */
BlockNumber
bulk_io_heap_prepare_extension(Relation rel, Size needed, BlockNumber *target)
{
	BlockNumber size;

	*target = InvalidBlockNumber;
	if (!bulk_io_heap_wants_pre_extension(rel))
		return InvalidBlockNumber;

	/* a test holds a backend here until another one extends */
	PGSTRATA_INJECTION_POINT("bulk-io-extension-prepare");

	if (RelationExtensionLockWaiterCount(rel) > 0)
	{
		LockRelationForExtension(rel, ExclusiveLock);
		UnlockRelationForExtension(rel, ExclusiveLock);
		*target = GetPageWithFreeSpace(rel, needed);
		if (*target != InvalidBlockNumber)
			return InvalidBlockNumber;
	}
	size = RelationGetNumberOfBlocks(rel);

	/* a test holds a backend here, the size seen, while another extends */
	PGSTRATA_INJECTION_POINT("bulk-io-extension-sized");

	return size;
}

/*
 * The page an insert into a relation that may pre-extend tries when it has
 * no target page and the FSM knows no page with "needed" bytes free, in
 * place of stock PostgreSQL's choice, the relation's last page
 * (RelationGetBufferForTuple); InvalidBlockNumber leaves that choice to
 * the caller.
 *
 * Another backend may be between zero-extending a window and entering it
 * into the FSM, which it does holding the extension lock
 * (bulk_io_heap_pre_extend).  The relation's last page is then the
 * window's last page; rows put there would keep VACUUM from giving back the
 * window below them, since it truncates only the empty pages at the end
 * (bulk_io_heap_unused_window).  So we look in the FSM again, and take the
 * last page, under the extension lock: the window, if any, is then in the
 * FSM, and nobody is adding one.  The lock is taken only when the FSM knows
 * no page with room, that is, when the relation is about to be extended
 * anyway; uncontended, it is one lock round trip.
 */
BlockNumber
bulk_io_heap_last_page(Relation rel, Size needed)
{
	BlockNumber target;

	if (!bulk_io_heap_wants_pre_extension(rel))
		return InvalidBlockNumber;

	LockRelationForExtension(rel, ExclusiveLock);
	target = GetPageWithFreeSpace(rel, needed);
	if (target == InvalidBlockNumber)
	{
		BlockNumber nblocks = RelationGetNumberOfBlocks(rel);

		if (nblocks > 0)
			target = nblocks - 1;
	}
	UnlockRelationForExtension(rel, ExclusiveLock);
	return target;
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
 * A window pays when other backends are queued on the extension lock, which
 * is the contention that PolarDB's setting is for: they take their pages
 * from the window instead of each extending in turn.  A single session
 * inserting row by row into a large table gains little from it on a local
 * file system (one small extension per page filled, uncontended) and would
 * leave up to a window of empty pages at the end of the table for good; it
 * extends as stock PostgreSQL does, by as many pages as upstream chooses.
 *
 * A bulk load (bistate not NULL: COPY) fills a window soon, and gets one
 * while it is the only backend loading the relation: nobody waits for the
 * lock, nobody extended the relation since its own previous extension, it
 * initialised nearly all the pages that extension added (others took at
 * most an eighth of them), and no new page that others added.  Where
 * several sessions load one relation at once, sharing windows through the
 * FSM cost them 5-13 % of their time against stock PostgreSQL, which gives
 * each bulk load up to 64 pages of its own per extension (BulkInsertState's
 * next_free); so concurrent bulk loads extend as stock PostgreSQL does, and
 * a load that finds itself alone again gets windows again.
 *
 * If another backend extended the relation after we looked at it, it may
 * have added a window that the FSM now knows: we add none, and use its
 * pages next time.
 */
BlockNumber
bulk_io_heap_window(Relation rel, BulkInsertState bistate,
					BlockNumber seen_size, BlockNumber first_block,
					uint32 extended_by)
{
	BlockNumber window = (BlockNumber) polar_bulk_extend_size;
	BlockNumber next_block = first_block + extended_by;
	int			waiters;

	Assert(BlockNumberIsValid(seen_size));
	Assert(!RelationUsesLocalBuffers(rel));

	/* a test holds the extender here until a second backend queues */
	PGSTRATA_INJECTION_POINT("bulk-io-extension-locked");

	if (first_block != seen_size || extended_by >= window)
		return 0;
	/* the lock's count of requests includes ours */
	waiters = RelationExtensionLockWaiterCount(rel) - 1;
	if (bistate == NULL)
	{
		if (waiters <= 0)
			return 0;
	}
	else
	{
		uint32		added = bistate->bulk_io_added;
		uint32		used = bistate->bulk_io_used;

		/*
		 * Others load the relation too if anybody waits, or since our last
		 * extension anybody extended the relation, took more than an eighth
		 * of the new pages it added, or gave us new pages of theirs (we
		 * initialised more than it added; before our first extension, any).
		 */
		if (waiters > 0 ||
			(BlockNumberIsValid(bistate->bulk_io_end) &&
			 bistate->bulk_io_end != first_block) ||
			used < added - added / 8 || used > added)
			return 0;
	}
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

	/* a test holds the backend here while others take pages of its window */
	PGSTRATA_INJECTION_POINT("bulk-io-window-entered");

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
	PGSTRATA_INJECTION_POINT("bulk-io-window-before-fsm");

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
