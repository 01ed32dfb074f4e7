/*-------------------------------------------------------------------------
 *
 * pcs_segment.h
 *	  One open segment of a compressed fork, and what the segment layer
 *	  (pcs_segment.c) offers the layers above it.
 *
 * Only the files of the storage manager include it, through
 * storage/pcs_internal.h.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/storage/pcs_segment.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PCS_SEGMENT_H
#define PCS_SEGMENT_H

#include "lib/ilist.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "storage/pcs_format.h"
#include "storage/pcs_free_pool.h"
#include "storage/smgr.h"

/*
 * Bytes of the map whose storage is made to exist at once (a kernel page):
 * in versions 2 to 4 a chunk of the sparse map, in version 5 a map page
 */
#define PCS_MAP_CHUNK		4096
#define PCS_MAP_CHUNKS		((int) (PCS_V4_MAP_SIZE / PCS_MAP_CHUNK))
#define PCS_MAP_CHUNK_ENTRIES	(PCS_MAP_CHUNK / PCS_ENTRY_SIZE)
/* the chunk of the map that holds the entry of segblock */
#define PCS_MAP_CHUNK_OF(segblock) \
	((int) (((off_t) (segblock) * PCS_ENTRY_SIZE) / PCS_MAP_CHUNK))

StaticAssertDecl(PCS_MAP_CHUNK == PCS_MAP_PAGE_SIZE &&
				 PCS_MAP_CHUNKS == PCS_MAP_PAGES,
				 "a chunk of the map of version 4 and a map page of version 5 hold the same entries");

/* Bytes of a segment's header that each process keeps a copy of */
#define PCS_HEADER_COPY_SIZE	offsetof(PcsHeader, entries)

/* An open compressed segment of one fork, in one process */
typedef struct PcsSegment
{
	File		vfd;			/* the segment file */

	/*
	 * this process's copy of its header block, read at opening: the fields
	 * that identify the segment never change; the shared words and the map
	 * entries in it are stale, read and written in the file (pcs_meta.c)
	 */
	PcsHeader  *header;
	LWLock	   *word_lock;		/* the lock of its shared words */
	BlockNumber segno;			/* its number within the fork */
	ForkNumber	forknum;		/* its fork */
	int			shift;			/* log2 of its unit size, from its header */
	uint32		capacity;		/* units the file is known to hold */
	uint64		alloc_seen;		/* allocation word when capacity was read */
	PcsCodecState codec;		/* what the codec learnt of its pages */

	/*
	 * its dictionaries prepared in this process (pcs_dict.c): by number for
	 * decoding, and the one new images use for compressing
	 */
	PcsDict    *dicts[PCS_MAX_DICTIONARIES + 1];
	PcsDict    *encoder;
	int			encoder_number; /* the encoder's number, 0 if none */
	bool		dict_user;		/* in the list of users of prepared ones */
	dlist_node	dict_lru;		/* its place there */
	uint16		dicts_failed;	/* numbers that failed to load, as bits */
	/* the dictionary sector's word last seen, and the number it gave */
	bool		dict_word_known;
	uint64		dict_word_seen;
	int			dict_number_seen;
	/* pages of its first extensions, for a dictionary (pcs_seg_sample()) */
	bool		sampling_over;
	BlockNumber sample_next;	/* the block the next extension must be */
	int			nsample;		/* pages in sample */
	char	   *sample;			/* PCS_AUTO_TRAIN_PAGES pages, or NULL */

	/*
	 * versions 2 to 4: chunks of the map known to have storage
	 * (pcs_map_chunk_ready(), pcs_map_chunk_readable())
	 */
	uint64		map_ready[(PCS_MAP_CHUNKS + 63) / 64];

	/*
	 * version 5: the first unit + 1 of its directory and of each map page
	 * known to exist (0: not known), the latter palloc'd at the first one
	 * found (pcs_directory_lookup(), pcs_map_page_lookup()); whether this
	 * process gave the directory storage (pcs_map_chunk_ready()); map_ready
	 * says the same of map pages
	 */
	uint32		directory_unit;
	bool		directory_backed;
	uint32	   *map_pages;

	/* where header points: the header up to its map entries */
	uint64		header_copy[PCS_HEADER_COPY_SIZE / sizeof(uint64)];
} PcsSegment;

/* the memory of open segments, for the life of the process (pcs_segment.c) */
extern PGDLLIMPORT MemoryContext PcsCxt;

/* one segment: open, map, grow, allocate, count (pcs_segment.c) */
extern uint32 pcs_allocate(SMgrRelation reln, PcsSegment *seg, int units,
						   bool writeback);
extern void pcs_close_segments(SMgrRelation reln, ForkNumber forknum);
extern uint32 pcs_current_generation(void);
extern void pcs_fill_segments_before(SMgrRelation reln, ForkNumber forknum,
									 BlockNumber segno, bool skipFsync);
extern void pcs_free_key(SMgrRelation reln, ForkNumber forknum,
						 BlockNumber segno, PcsFreeKey *key);
extern PcsSegment *pcs_getseg(SMgrRelation reln, ForkNumber forknum,
							  BlockNumber segno, bool create);
extern void pcs_init_segment_file(File vfd, BlockNumber segno,
								  PcsAlgorithm algorithm, int level,
								  bool sync);
extern bool pcs_map_chunk_readable(PcsSegment *seg, int chunk);
extern int	pcs_seg_back_units(SMgrRelation reln, PcsSegment *seg,
							   uint32 first, uint32 count, bool writeback);
extern void pcs_map_chunk_ready(SMgrRelation reln, PcsSegment *seg,
								BlockNumber segblock, bool writeback);
extern int	pcs_read_fully(PcsSegment *seg, char *buf, int len, off_t offset);
extern void pcs_register_dirty(SMgrRelation reln, ForkNumber forknum,
							   BlockNumber segno, PcsSegment *seg);
extern void pcs_seg_clear(PcsSegment *seg, BlockNumber from, BlockNumber to);
extern BlockNumber pcs_seg_nblocks(PcsSegment *seg);
extern void pcs_seg_words(PcsSegment *seg, BlockNumber *nblocks,
						  uint32 *limit);
extern void pcs_seg_raise_nblocks(PcsSegment *seg, BlockNumber n);
extern void pcs_seg_store_nblocks(PcsSegment *seg, BlockNumber n);
extern void pcs_seg_truncate_entries(SMgrRelation reln, ForkNumber forknum,
									 PcsSegment *seg, BlockNumber from,
									 BlockNumber to);
extern void pcs_sync_fork(SMgrRelation reln, ForkNumber forknum,
						  bool immediate);
extern void pcs_sync_now(SMgrRelation reln, ForkNumber forknum,
						 PcsSegment *seg, uint32 wait_event);
extern uint32 pcs_unit_limit(PcsSegment *seg);
extern uint32 pcs_seg_units_below(PcsSegment *seg, off_t size);

/* the header and map, with ordinary calls (pcs_meta.c) */
extern Size pcs_meta_shmem_size(void);
extern void pcs_meta_shmem_init(void);
extern void pcs_meta_attach(void);
extern LWLock *pcs_meta_word_lock(const PcsFreeKey *key);
extern void pcs_meta_read(PcsSegment *seg, void *buf, int len, off_t offset);
extern void pcs_meta_write(PcsSegment *seg, const void *buf, int len,
						   off_t offset);
extern uint64 pcs_word_read(PcsSegment *seg, pg_atomic_uint64 *word);
extern void pcs_words_read(PcsSegment *seg, pg_atomic_uint64 *first,
						   pg_atomic_uint64 *last);
extern void pcs_word_write(PcsSegment *seg, pg_atomic_uint64 *word,
						   uint64 value);
extern bool pcs_word_compare_exchange(PcsSegment *seg, pg_atomic_uint64 *word,
									  uint64 *expected, uint64 value);
extern int	pcs_directory_lookup(PcsSegment *seg, bool tolerate,
								 uint32 *unit);
extern void pcs_directory_read(PcsSegment *seg, uint32 unit,
							   PcsDirectory *directory);
extern uint64 pcs_directory_slot_word(PcsSegment *seg, uint32 unit, int page);
extern bool pcs_directory_slot_set(PcsSegment *seg, uint32 unit, int page,
								   uint64 *expected, uint64 value);
extern int	pcs_map_page_lookup(PcsSegment *seg, int page, bool tolerate,
								uint32 *unit);
extern void pcs_map_page_remember(PcsSegment *seg, int page, uint32 unit);
extern PcsMapEntry pcs_map_entry(PcsSegment *seg, BlockNumber segblock);
extern void pcs_map_entries(PcsSegment *seg, BlockNumber from, int n,
							PcsMapEntry *entries);
extern int	pcs_map_entries_known(PcsSegment *seg, BlockNumber from, int n,
								  PcsMapEntry *entries);
extern void pcs_map_store(PcsSegment *seg, BlockNumber segblock,
						  const PcsMapEntry *entry);
extern void pcs_meta_read_dictionaries(PcsSegment *seg);
extern void pcs_meta_store_dict_record(PcsSegment *seg, int number,
									   const PcsDictRecord *record);

#endif							/* PCS_SEGMENT_H */
