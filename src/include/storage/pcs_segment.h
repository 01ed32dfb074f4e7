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
#include "storage/pcs_format.h"
#include "storage/pcs_free_pool.h"
#include "storage/smgr.h"

/* Bytes of the map whose storage is made to exist at once (a kernel page) */
#define PCS_MAP_CHUNK		4096
#define PCS_MAP_CHUNKS		((int) (PCS_MAP_SIZE / PCS_MAP_CHUNK))
#define PCS_MAP_CHUNK_ENTRIES	(PCS_MAP_CHUNK / PCS_ENTRY_SIZE)
/* the chunk of the map that holds the entry of segblock */
#define PCS_MAP_CHUNK_OF(segblock) \
	((int) (((off_t) (segblock) * PCS_ENTRY_SIZE) / PCS_MAP_CHUNK))

/* An open compressed segment of one fork, in one process */
typedef struct PcsSegment
{
	File		vfd;			/* the segment file */
	PcsHeader  *header;			/* MAP_SHARED mapping of header and map, or
								 * NULL while unmapped (pcs_limit_mappings) */
	BlockNumber segno;			/* its number within the fork */
	ForkNumber	forknum;		/* its fork */
	int			shift;			/* log2 of its unit size, from its header */
	uint32		capacity;		/* units the file is known to hold */
	uint64		alloc_seen;		/* allocation word when capacity was read */
	dlist_node	lru;			/* place in pcs_mapped, while mapped */
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
	 * chunks of the map known to have storage (pcs_map_chunk_ready(),
	 * pcs_map_entry())
	 */
	uint64		map_ready[(PCS_MAP_CHUNKS + 63) / 64];
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

/*
 * Where the map entry of segblock lies in the mapping of a segment: in its
 * header or in its map, by format version (pcs_entry_slot())
 */
static inline PcsMapEntry *
pcs_seg_entry(PcsSegment *seg, BlockNumber segblock)
{
	Assert(seg->header != NULL && segblock < RELSEG_SIZE);
	return pcs_entry_slot(seg->header, segblock);
}

/* May the entry of segblock be read through the mapping (see above)? */
static inline bool
pcs_entry_readable(PcsSegment *seg, BlockNumber segblock)
{
	return segblock < pcs_header_entries(seg->header) ||
		pcs_map_chunk_readable(seg, PCS_MAP_CHUNK_OF(segblock));
}

/* The map entry of segblock, or an empty one where its chunk is a hole */
static inline PcsMapEntry
pcs_map_entry(PcsSegment *seg, BlockNumber segblock)
{
	PcsMapEntry entry;

	Assert(segblock < RELSEG_SIZE);
	if (unlikely(!pcs_entry_readable(seg, segblock)))
	{
		memset(&entry, 0, sizeof(entry));
		Assert(pcs_entry_is_empty(&entry));
		return entry;
	}
	entry = *pcs_seg_entry(seg, segblock);
	return entry;
}

#endif							/* PCS_SEGMENT_H */
