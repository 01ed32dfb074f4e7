/*-------------------------------------------------------------------------
 *
 * bulk_io_bitmap.h
 *	  Combined reads of consecutive heap blocks in bitmap heap scans.
 *
 * With polar_bulk_read_size above one block, a bitmap heap scan reads each
 * run of consecutive blocks of its bitmap with one vectored read into
 * shared (or local) buffers.  See src/backend/access/heap/bulk_io_bitmap.c.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/access/bulk_io_bitmap.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef BULK_IO_BITMAP_H
#define BULK_IO_BITMAP_H

#include "access/relscan.h"
#include "nodes/tidbitmap.h"
#include "storage/buf.h"

struct HeapScanDescData;

extern TBMIterateResult *bulk_io_bitmap_iterate(TableScanDesc scan,
												TBMIterator *iterator,
												TBMSharedIterator *shared_iterator);
extern Buffer bulk_io_bitmap_read(struct HeapScanDescData *hscan,
								  TBMIterateResult *tbmres);
extern void bulk_io_bitmap_release(struct HeapScanDescData *hscan,
								   bool free_state);

#endif							/* BULK_IO_BITMAP_H */
