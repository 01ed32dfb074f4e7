/*-------------------------------------------------------------------------
 *
 * bulk_io_heap.h
 *	  Heap pre-extension by polar_bulk_extend_size.
 *
 * See src/backend/access/heap/bulk_io_heap.c.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/access/bulk_io_heap.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef BULK_IO_HEAP_H
#define BULK_IO_HEAP_H

#include "storage/block.h"
#include "storage/bufmgr.h"
#include "utils/relcache.h"

struct BulkInsertStateData;

extern bool bulk_io_heap_wants_pre_extension(Relation rel);
extern BlockNumber bulk_io_heap_prepare_extension(Relation rel, Size needed,
												  BlockNumber *target);
extern BlockNumber bulk_io_heap_last_page(Relation rel, Size needed);
extern BlockNumber bulk_io_heap_window(Relation rel,
									   struct BulkInsertStateData *bistate,
									   BlockNumber seen_size,
									   BlockNumber first_block,
									   uint32 extended_by);
extern void bulk_io_heap_pre_extend(Relation rel,
									BufferAccessStrategy strategy,
									BlockNumber nblocks,
									uint32 extended_by);
extern void bulk_io_heap_record_free(Relation rel, BlockNumber from,
									 BlockNumber to);
extern bool bulk_io_heap_reclaim_window(Relation rel,
										BufferAccessStrategy strategy);
extern bool bulk_io_heap_unused_window(Relation rel,
									   BlockNumber nonempty_pages,
									   BlockNumber rel_pages,
									   TransactionId oldest_xmin);

#endif							/* BULK_IO_HEAP_H */
