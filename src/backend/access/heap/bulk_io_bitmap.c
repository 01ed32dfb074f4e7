/*-------------------------------------------------------------------------
 *
 * bulk_io_bitmap.c
 *	  Combined reads of consecutive heap blocks in bitmap heap scans.
 *
 * In PostgreSQL 17 a bitmap heap scan reads the heap one 8 kB block per
 * system call (ReleaseAndReadBuffer in heapam_scan_bitmap_next_block), and
 * its prefetching only gives the kernel advice.  A bitmap of a range query
 * or of a lossy (page-level) bitmap often holds long runs of consecutive
 * blocks; this file reads each such run with one vectored read of up to
 * polar_bulk_read_size blocks straight into the buffer pool.
 *
 * PostgreSQL 18 moved the iteration over the bitmap into the table AM and
 * feeds a read stream from it.  Here the executor node keeps iterating, so
 * that the node, its prefetching, its EXPLAIN counters, parallel bitmap
 * scans and rescans stay as they are; the node only takes its results
 * through bulk_io_bitmap_iterate() instead of the iterator:
 *
 * - when the heap AM needs a block that was not read with an earlier run
 *   (bulk_io_bitmap_read), the results that follow it are taken from the
 *   iterator ahead of the node, as long as they continue the run of
 *   consecutive blocks, and kept in a small queue (copies: the iterator
 *   reuses its result); the run is read with StartReadBuffers() /
 *   WaitReadBuffers(), which stop early at a block already in the buffer
 *   pool, and the pins of the blocks after the first are kept with their
 *   results;
 *
 * - bulk_io_bitmap_iterate hands the node the queued results first, in
 *   the iterator's order, and the AM gets the pinned buffer with its result.
 *
 * So every result reaches the node exactly once and in order, whether the
 * iterator is private or shared by the processes of a parallel scan (a
 * result taken ahead belongs to this process, as if the node had taken it).
 * Lossy and exact results are alike here; the AM still decides how to use
 * the page.  A run stops before a block past the end the scan started with
 * (the AM ignores those outside SERIALIZABLE, and reads them one by one
 * inside it) and before a block the AM would skip without reading (the
 * skip-fetch case: no tuples needed, exact, all-visible; 17.11 has it
 * turned off in the node, but the AM still tests for it).  Rescans and the
 * end of the scan drop the queue and its pins (heap_rescan, heap_endscan).
 *
 * With polar_bulk_read_size at 0 or one block, or for table AMs that do not
 * scan as heap does, the node gets the iterator's own results and the AM
 * reads as stock PostgreSQL does.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/access/heap/bulk_io_bitmap.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/bulk_io_bitmap.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "storage/bufmgr.h"
#include "storage/bulk_io.h"
#include "utils/memutils.h"
#include "utils/rel.h"

/* Results that can wait in the queue: a run is at most this long */
#define BULK_IO_BITMAP_QUEUE	MAX_IO_COMBINE_LIMIT

/* Room for a result of any page */
#define BULK_IO_BITMAP_RESULT_SIZE \
	(offsetof(TBMIterateResult, offsets) + \
	 MaxHeapTuplesPerPage * sizeof(OffsetNumber))

/* The state of one bitmap heap scan, hung off its HeapScanDesc */
typedef struct BulkIoBitmapState
{
	/* the iterator the node passed last (one of the two is NULL) */
	TBMIterator *iterator;
	TBMSharedIterator *shared_iterator;
	bool		exhausted;		/* the iterator has returned NULL */

	/* the result handed to the node last, and its pin if read in a run */
	TBMIterateResult *current;
	Buffer		current_buffer;

	/*
	 * Results taken ahead of the node, in order.  Those with a pin form a
	 * prefix, which the pin of current, if any, precedes.  Slots past nqueued
	 * keep their memory for reuse.
	 */
	int			nqueued;
	TBMIterateResult *queued[BULK_IO_BITMAP_QUEUE];
	Buffer		queued_buffer[BULK_IO_BITMAP_QUEUE];
} BulkIoBitmapState;

/* The next result of whichever iterator the node has */
static TBMIterateResult *
iterator_next(BulkIoBitmapState *state)
{
	TBMIterateResult *result;

	if (state->exhausted)
		return NULL;
	if (state->shared_iterator)
		result = tbm_shared_iterate(state->shared_iterator);
	else
		result = tbm_iterate(state->iterator);
	if (result == NULL)
		state->exhausted = true;
	return result;
}

/* Copy a result into a slot, allocating the slot the first time */
static TBMIterateResult *
copy_result(BulkIoBitmapState *state, TBMIterateResult **slot,
			TBMIterateResult *result)
{
	if (*slot == NULL)
		*slot = MemoryContextAlloc(GetMemoryChunkContext(state),
								   BULK_IO_BITMAP_RESULT_SIZE);
	Assert(result->ntuples <= MaxHeapTuplesPerPage);
	memcpy(*slot, result, offsetof(TBMIterateResult, offsets) +
		   Max(result->ntuples, 0) * sizeof(OffsetNumber));
	return *slot;
}

/*
 * Whether a table AM scans as heap does: its scan descriptors are heap's
 * (heap_beginscan, heap_rescan, heap_endscan) and its bitmap scans read
 * through bulk_io_bitmap_read().  True for heap, and for AMs that copy
 * heap's routine and change only how rows are written (contrib/refdata).
 */
static bool
scans_as_heap(const TableAmRoutine *am)
{
	const TableAmRoutine *heap = GetHeapamTableAmRoutine();

	return am == heap ||
		(am->scan_begin == heap->scan_begin &&
		 am->scan_rescan == heap->scan_rescan &&
		 am->scan_end == heap->scan_end &&
		 am->scan_bitmap_next_block == heap->scan_bitmap_next_block);
}

/*
 * The bulk state of a heap bitmap scan, created on first use; NULL for other
 * table AMs, and while bulk reads are off and nothing is queued.
 */
static BulkIoBitmapState *
get_state(TableScanDesc scan)
{
	HeapScanDesc hscan = (HeapScanDesc) scan;
	BulkIoBitmapState *state;

	if (!scans_as_heap(scan->rs_rd->rd_tableam))
		return NULL;
	if (hscan->rs_bulk_bitmap != NULL)
		return hscan->rs_bulk_bitmap;
	if (bulk_io_read_combine_limit(true) <= 1)
		return NULL;

	state = MemoryContextAllocZero(GetMemoryChunkContext(hscan),
								   sizeof(BulkIoBitmapState));
	state->current_buffer = InvalidBuffer;
	hscan->rs_bulk_bitmap = state;
	return state;
}

/*
 * The executor node's next result of the bitmap: the queued results first,
 * then the iterator's.  Called instead of tbm_iterate / tbm_shared_iterate
 * with the node's iterator; the result stays valid until the next call.
 */
TBMIterateResult *
bulk_io_bitmap_iterate(TableScanDesc scan, TBMIterator *iterator,
					   TBMSharedIterator *shared_iterator)
{
	BulkIoBitmapState *state = get_state(scan);
	TBMIterateResult *result;

	if (state == NULL)
		return shared_iterator ? tbm_shared_iterate(shared_iterator) :
			tbm_iterate(iterator);

	state->iterator = iterator;
	state->shared_iterator = shared_iterator;

	/* a block read with a run that the AM did not ask for after all */
	if (BufferIsValid(state->current_buffer))
	{
		ReleaseBuffer(state->current_buffer);
		state->current_buffer = InvalidBuffer;
	}

	if (state->nqueued > 0)
	{
		/* the head of the queue becomes current; its slot goes to the end */
		TBMIterateResult *head = state->queued[0];
		Buffer		head_buffer = state->queued_buffer[0];
		int			n = state->nqueued;

		memmove(&state->queued[0], &state->queued[1],
				(BULK_IO_BITMAP_QUEUE - 1) * sizeof(TBMIterateResult *));
		memmove(&state->queued_buffer[0], &state->queued_buffer[1],
				(n - 1) * sizeof(Buffer));
		state->queued[BULK_IO_BITMAP_QUEUE - 1] = state->current;
		state->current = head;
		state->current_buffer = head_buffer;
		state->nqueued--;
		return head;
	}

	result = iterator_next(state);
	if (result == NULL)
		return NULL;
	return copy_result(state, &state->current, result);
}

/*
 * Whether the heap AM would skip this page without reading it: the
 * skip-fetch test of heapam_scan_bitmap_next_block.
 */
static bool
would_skip_fetch(HeapScanDesc hscan, TBMIterateResult *result)
{
	return !(hscan->rs_base.rs_flags & SO_NEED_TUPLES) &&
		!result->recheck &&
		VM_ALL_VISIBLE(hscan->rs_base.rs_rd, result->blockno,
					   &hscan->rs_vmbuffer);
}

/*
 * A pin on the block of tbmres, the result the node got last, for the heap
 * AM; the scan's previous pin (rs_cbuf) is released.  Called instead of
 * ReleaseAndReadBuffer.
 *
 * The block comes pinned from an earlier run, or is read now together with
 * the consecutive blocks of the results that follow it, up to
 * polar_bulk_read_size blocks in all.
 */
Buffer
bulk_io_bitmap_read(HeapScanDesc hscan, TBMIterateResult *tbmres)
{
	BulkIoBitmapState *state = hscan->rs_bulk_bitmap;
	Relation	rel = hscan->rs_base.rs_rd;
	BlockNumber block = tbmres->blockno;
	ReadBuffersOperation operation;
	Buffer		buffers[BULK_IO_BITMAP_QUEUE];
	uint32		max_pins;
	int			limit;
	int			nblocks;

	if (state != NULL && tbmres == state->current &&
		BufferIsValid(state->current_buffer))
	{
		Buffer		buffer = state->current_buffer;

		Assert(BufferGetBlockNumber(buffer) == block);
		state->current_buffer = InvalidBuffer;
		if (BufferIsValid(hscan->rs_cbuf))
			ReleaseBuffer(hscan->rs_cbuf);
		hscan->rs_cbuf = InvalidBuffer;
		return buffer;
	}

	limit = Min(bulk_io_read_combine_limit(true), BULK_IO_BITMAP_QUEUE);
	if (state == NULL || tbmres != state->current || limit <= 1 ||
		block >= hscan->rs_nblocks)
		return ReleaseAndReadBuffer(hscan->rs_cbuf, rel, block);

	if (BufferIsValid(hscan->rs_cbuf))
		ReleaseBuffer(hscan->rs_cbuf);
	hscan->rs_cbuf = InvalidBuffer;

	/* the run: this block and the consecutive ones the bitmap has next */
	nblocks = 1;
	while (nblocks < limit)
	{
		TBMIterateResult *next;

		if (nblocks - 1 < state->nqueued)
			next = state->queued[nblocks - 1];
		else
		{
			TBMIterateResult *result = iterator_next(state);

			if (result == NULL)
				break;
			Assert(state->nqueued < BULK_IO_BITMAP_QUEUE);
			next = copy_result(state, &state->queued[state->nqueued], result);
			state->queued_buffer[state->nqueued] = InvalidBuffer;
			state->nqueued++;
		}
		/* no pins after an unpinned current (see BulkIoBitmapState) */
		Assert(!BufferIsValid(state->queued_buffer[nblocks - 1]));

		if (next->blockno != block + nblocks ||
			next->blockno >= hscan->rs_nblocks ||
			would_skip_fetch(hscan, next))
			break;
		nblocks++;
	}

	/* as many pins as the buffer pool lets one backend take */
	max_pins = nblocks;
	if (RelationUsesLocalBuffers(rel))
		LimitAdditionalLocalPins(&max_pins);
	else
		LimitAdditionalPins(&max_pins);
	nblocks = Max((int) max_pins, 1);

	operation.rel = rel;
	operation.smgr = RelationGetSmgr(rel);
	operation.smgr_persistence = 0;
	operation.forknum = MAIN_FORKNUM;
	operation.strategy = NULL;	/* bitmap heap scans use no ring */
	if (StartReadBuffers(&operation, buffers, block, &nblocks, 0))
		WaitReadBuffers(&operation);

	/* the read may stop short, at a block already in the buffer pool */
	for (int i = 1; i < nblocks; i++)
	{
		Assert(BufferGetBlockNumber(buffers[i]) == state->queued[i - 1]->blockno);
		state->queued_buffer[i - 1] = buffers[i];
	}
	return buffers[0];
}

/*
 * Drop the queue and its pins: at a rescan (the node then starts a new
 * iteration), and with free_state at the end of the scan.
 */
void
bulk_io_bitmap_release(HeapScanDesc hscan, bool free_state)
{
	BulkIoBitmapState *state = hscan->rs_bulk_bitmap;

	if (state == NULL)
		return;

	if (BufferIsValid(state->current_buffer))
		ReleaseBuffer(state->current_buffer);
	state->current_buffer = InvalidBuffer;
	for (int i = 0; i < state->nqueued; i++)
	{
		if (BufferIsValid(state->queued_buffer[i]))
			ReleaseBuffer(state->queued_buffer[i]);
	}
	state->nqueued = 0;
	state->iterator = NULL;
	state->shared_iterator = NULL;
	state->exhausted = false;

	if (free_state)
	{
		if (state->current)
			pfree(state->current);
		for (int i = 0; i < BULK_IO_BITMAP_QUEUE; i++)
		{
			if (state->queued[i])
				pfree(state->queued[i]);
		}
		pfree(state);
		hscan->rs_bulk_bitmap = NULL;
	}
}
