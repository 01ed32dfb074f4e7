/*-------------------------------------------------------------------------
 *
 * bulk_io.h
 *	  Bulk read-ahead and pre-extension: the polar_bulk_* settings.
 *
 * The settings carry PolarDB for PostgreSQL's names, defaults and units.
 * polar_bulk_read_size bounds the size of combined reads into shared
 * buffers; polar_bulk_extend_size and polar_min_bulk_extend_table_size make
 * heap relations grow by a window of zero pages instead of page by page;
 * polar_index_create_bulk_extend_size keeps the file of a B-tree build
 * ahead of the pages written.  See src/backend/storage/buffer/bulk_io.c.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/storage/bulk_io.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef BULK_IO_H
#define BULK_IO_H

#include "storage/block.h"
#include "storage/buf.h"
#include "storage/bufpage.h"
#include "storage/smgr.h"
#include "utils/relcache.h"

/* Defaults and limits of the settings, in blocks */
#define BULK_IO_DEFAULT_READ_SIZE		((128 * 1024) / BLCKSZ)
#define BULK_IO_DEFAULT_EXTEND_SIZE		((4 * 1024 * 1024) / BLCKSZ)
#define BULK_IO_DEFAULT_MIN_EXTEND_TABLE_SIZE	((8 * 1024 * 1024) / BLCKSZ)
#define BULK_IO_MAX_EXTEND_SIZE			((1024 * 1024 * 1024) / BLCKSZ)

/* The settings (GUCs), in blocks; 0 turns the feature off */
extern PGDLLIMPORT int polar_bulk_read_size;
extern PGDLLIMPORT int polar_bulk_extend_size;
extern PGDLLIMPORT int polar_min_bulk_extend_table_size;
extern PGDLLIMPORT int polar_index_create_bulk_extend_size;

/* The counters kept per backend type and per relation in shared memory */
typedef enum BulkIoCounter
{
	BULK_IO_READS,				/* reads of two or more blocks at once */
	BULK_IO_READ_BLOCKS,		/* blocks those reads brought in */
	BULK_IO_HEAP_EXTENSIONS,	/* heap pre-extensions */
	BULK_IO_HEAP_EXTENDED_BLOCKS,	/* blocks added by them */
	BULK_IO_INDEX_EXTENSIONS,	/* pre-extensions of index builds */
	BULK_IO_INDEX_EXTENDED_BLOCKS,	/* blocks added by them */
	BULK_IO_INDEX_TRIMMED_BLOCKS,	/* unused blocks cut at build end */
} BulkIoCounter;

#define BULK_IO_NUM_COUNTERS (BULK_IO_INDEX_TRIMMED_BLOCKS + 1)

/* shared memory and counters */
extern Size BulkIoShmemSize(void);
extern void BulkIoShmemInit(void);

/* The counters of one relation file, as bulk_io_relation_counters() copies */
typedef struct BulkIoRelCounters
{
	RelFileLocator locator;		/* {0, 0, 0}: relations that found no room */
	uint64		counters[BULK_IO_NUM_COUNTERS];
} BulkIoRelCounters;

extern void bulk_io_count(const RelFileLocator *rlocator,
						  BulkIoCounter counter, uint64 n);
extern uint64 bulk_io_counter_value(int backend_type, BulkIoCounter counter);
extern int	bulk_io_relation_counters(BulkIoRelCounters **result);
extern void bulk_io_reset_counters(void);

/* read side */
struct ReadStream;

/* The block range a read stream of bulk_io_block_range_next() reads */
typedef struct BulkIoBlockRange
{
	BlockNumber next;			/* next block to return */
	BlockNumber end;			/* end of the range (exclusive) */
} BulkIoBlockRange;

extern BlockNumber bulk_io_block_range_next(struct ReadStream *stream,
											void *callback_private_data,
											void *per_buffer_data);
extern int	bulk_io_read_combine_limit(bool bulk_io_path);
extern void bulk_io_count_read(const RelFileLocator *rlocator, int nblocks);
extern bool bulk_io_copy_storage(SMgrRelation src, SMgrRelation dst,
								 ForkNumber forknum, char relpersistence,
								 bool use_wal);

/* pre-extension of index builds */
extern BlockNumber bulk_io_index_extend_window(void);
extern void bulk_io_write_runs(SMgrRelation smgr, ForkNumber forknum,
							   BlockNumber *blknos, Page *pages, int n,
							   BlockNumber *relsize, BlockNumber *extended_to,
							   BlockNumber window);
extern void bulk_io_trim(SMgrRelation smgr, ForkNumber forknum,
						 BlockNumber relsize, BlockNumber extended_to);

#endif							/* BULK_IO_H */
