/*-------------------------------------------------------------------------
 *
 * pcs_format.c
 *	  Encoding and validation of page-compressed storage (pcs) segments:
 *	  the header, the map entries, and the page codec.
 *
 * Nothing here does I/O or raises errors: every check returns NULL when the
 * bytes are sound or a short description of what is wrong, and the storage
 * manager turns that into an ERROR with ERRCODE_DATA_CORRUPTED naming the
 * relation, fork and block.  This keeps the code that parses untrusted
 * bytes small enough to fuzz on its own.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * The same file is compiled into frontend programs (see fe_utils/pcs_file.c),
 * with FRONTEND defined.
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_format.c
 *
 *-------------------------------------------------------------------------
 */
#ifndef FRONTEND
#include "postgres.h"
#else
#include "postgres_fe.h"
#endif

#ifdef USE_LZ4
#include <lz4.h>
#endif
#ifdef USE_ZSTD
#include <zstd.h>
#endif

#include "port/pg_bitutils.h"
#include "port/pg_crc32c.h"
#include "storage/bufpage.h"
#include "storage/pcs_format.h"

#ifdef USE_ZSTD
/* Contexts are reused for the life of the process: creating one per page costs more than compressing it. */
static ZSTD_CCtx *pcs_zstd_cctx = NULL;
static ZSTD_DCtx *pcs_zstd_dctx = NULL;
#endif

/* Name of an algorithm, as users write it */
const char *
pcs_algorithm_name(PcsAlgorithm algorithm)
{
	switch (algorithm)
	{
		case PCS_ALGO_NONE:
			return "none";
		case PCS_ALGO_ZSTD:
			return "zstd";
		case PCS_ALGO_LZ4:
			return "lz4";
	}
	return "unknown";
}

/* Parse an algorithm name; false if there is no such algorithm */
bool
pcs_algorithm_from_name(const char *name, PcsAlgorithm *algorithm)
{
	if (pg_strcasecmp(name, "zstd") == 0)
		*algorithm = PCS_ALGO_ZSTD;
	else if (pg_strcasecmp(name, "lz4") == 0)
		*algorithm = PCS_ALGO_LZ4;
	else if (pg_strcasecmp(name, "none") == 0)
		*algorithm = PCS_ALGO_NONE;
	else
		return false;
	return true;
}

/* CRC32C of the header's fixed fields, those before header_crc */
static uint32
pcs_header_crc(const PcsHeader *header)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, header, offsetof(PcsHeader, header_crc));
	FIN_CRC32C(crc);
	return crc;
}

/*
 * Fill in a new segment header (zeroed by the caller's buffer or not), for
 * segment segno of its fork: the check of the block count word covers the
 * segment number.
 */
void
pcs_header_init(PcsHeader *header, PcsAlgorithm algorithm, int level,
				BlockNumber segno)
{
	memset(header, 0, sizeof(PcsHeader));
	header->magic = PCS_MAGIC;
	header->version = PCS_FORMAT_VERSION;
	header->algorithm = (uint8) algorithm;
	header->level = (int8) level;
	header->unit_shift = PCS_UNIT_SHIFT;
	header->blcksz = BLCKSZ;
	header->relseg_size = RELSEG_SIZE;
	header->header_crc = pcs_header_crc(header);
	/* zero is no generation's word: the first allocation computes it */
	pg_atomic_init_u64(&header->alloc, 0);
	pg_atomic_init_u64(&header->nblocks, pcs_nblocks_word(header, segno, 0));
}

/*
 * Check the fixed fields of a header read from disk; NULL if they are sound.
 * The two shared words are checked by pcs_nblocks_decode() and
 * pcs_alloc_decode() wherever they are read, since they change while the
 * segment is in use.
 */
const char *
pcs_header_check(const PcsHeader *header)
{
	if (header->magic != PCS_MAGIC)
		return "bad magic number in compressed segment header";
	if (header->header_crc != pcs_header_crc(header))
		return "checksum mismatch in compressed segment header";
	if (header->version != PCS_FORMAT_VERSION)
		return "unsupported compressed segment format version";
	if (header->algorithm != PCS_ALGO_ZSTD && header->algorithm != PCS_ALGO_LZ4)
		return "unknown compression algorithm in compressed segment header";
	/* the writer uses the level; the CRC does not vouch for crafted bytes */
	if (header->algorithm == PCS_ALGO_ZSTD &&
		(header->level < PCS_ZSTD_MIN_LEVEL || header->level > PCS_ZSTD_MAX_LEVEL))
		return "compression level out of range in compressed segment header";
	/* no flag is defined in this format version: one set is not ours */
	if (header->flags != 0)
		return "unknown flags in compressed segment header";
	if (header->unit_shift != PCS_UNIT_SHIFT ||
		header->blcksz != BLCKSZ || header->relseg_size != RELSEG_SIZE)
		return "compressed segment was made by a build with another block, segment or unit size";
	return NULL;
}

/*
 * The format version of an intact header of another version, or 0.  Callers
 * use it to tell a file made by another build, which is refused with a hint,
 * from a damaged one: the version is covered by the header CRC.
 */
uint32
pcs_header_other_version(const PcsHeader *header)
{
	if (header->magic != PCS_MAGIC ||
		header->header_crc != pcs_header_crc(header) ||
		header->version == PCS_FORMAT_VERSION)
		return 0;
	return header->version;
}

/* What the check of a shared header word covers; the kind keeps them apart */
#define PCS_WORD_NBLOCKS	0x4e	/* 'N' */
#define PCS_WORD_ALLOC		0x41	/* 'A' */

/*
 * The check half of a shared header word: CRC32C of the value, of what kind
 * of word it is, of the segment (its header CRC, which covers the settings,
 * and its number within the fork) and, for the allocation word, of the
 * server generation.  So a word copied from another segment or from the
 * other slot fails too.  For a fixed rest, CRC32C maps distinct 32-bit
 * values to distinct checks, so a change confined to either half of a word
 * is always caught.
 */
static uint32
pcs_word_check(const PcsHeader *header, BlockNumber segno, uint32 kind,
			   uint32 generation, uint32 value)
{
	uint32		input[5];
	pg_crc32c	crc;

	input[0] = header->header_crc;
	input[1] = segno;
	input[2] = kind;
	input[3] = generation;
	input[4] = value;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, input, sizeof(input));
	FIN_CRC32C(crc);
	return crc;
}

/* The block count word of segment segno holding nblocks */
uint64
pcs_nblocks_word(const PcsHeader *header, BlockNumber segno,
				 BlockNumber nblocks)
{
	uint32		check = pcs_word_check(header, segno, PCS_WORD_NBLOCKS, 0,
									   nblocks);

	return ((uint64) check << 32) | (uint32) ~nblocks;
}

/*
 * Read the block count of segment segno out of its word.  NULL if the word
 * is sound, else what is wrong with it (and *nblocks is not set).
 */
const char *
pcs_nblocks_decode(const PcsHeader *header, BlockNumber segno, uint64 word,
				   BlockNumber *nblocks)
{
	BlockNumber n = ~(uint32) word;

	if ((uint32) (word >> 32) !=
		pcs_word_check(header, segno, PCS_WORD_NBLOCKS, 0, n))
		return "checksum mismatch in the block count of the compressed segment header";
	if (n > RELSEG_SIZE)
		return "block count out of range in compressed segment header";
	*nblocks = n;
	return NULL;
}

/* The allocation word of segment segno: next_unit, handed out by generation */
uint64
pcs_alloc_word(const PcsHeader *header, BlockNumber segno, uint32 generation,
			   uint32 next_unit)
{
	uint32		check = pcs_word_check(header, segno, PCS_WORD_ALLOC,
									   generation, next_unit);

	return ((uint64) check << 32) | next_unit;
}

/*
 * Read the next free unit out of an allocation word, if the word was written
 * by this generation and is intact: false for a word of an earlier server
 * generation and for a damaged one alike, which callers treat the same way.
 */
bool
pcs_alloc_decode(const PcsHeader *header, BlockNumber segno,
				 uint32 generation, uint64 word, uint32 *next_unit)
{
	uint32		next = (uint32) word;

	if ((uint32) (word >> 32) !=
		pcs_word_check(header, segno, PCS_WORD_ALLOC, generation, next))
		return false;
	*next_unit = next;
	return true;
}

/*
 * CRC32C of an entry's first 12 bytes and of the block number within the
 * segment, so that an entry copied to the wrong slot is caught too.
 */
static uint32
pcs_entry_crc(const PcsMapEntry *entry, BlockNumber segblock)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, entry, offsetof(PcsMapEntry, entry_crc));
	COMP_CRC32C(crc, &segblock, sizeof(segblock));
	FIN_CRC32C(crc);
	return crc;
}

/* Fill in the entry of block segblock (block number within its segment) */
void
pcs_entry_set(PcsMapEntry *entry, BlockNumber segblock, uint32 first_unit,
			  int stored, int units, uint8 image_flags, uint32 data_crc)
{
	Assert(stored > 0 && stored <= BLCKSZ);
	Assert(units >= pcs_units_for(stored) && units <= PCS_MAX_UNITS);
	Assert(image_flags == 0 || image_flags == PCS_ENTRY_RAW ||
		   image_flags == PCS_ENTRY_SHUFFLED || image_flags == PCS_ENTRY_SPLIT);

	entry->first_unit = first_unit;
	entry->stored = (uint16) stored;
	entry->units = (uint8) units;
	entry->flags = PCS_ENTRY_ALLOCATED | image_flags;
	entry->data_crc = data_crc;
	entry->entry_crc = pcs_entry_crc(entry, segblock);
}

/*
 * Check the entry of block segblock.  unit_limit is the first unit past
 * those handed out in the segment: an image must lie below it.  An empty
 * entry is sound (the block reads as zeros).  NULL if sound.
 */
const char *
pcs_entry_check(const PcsMapEntry *entry, BlockNumber segblock,
				uint32 unit_limit)
{
	if (pcs_entry_is_empty(entry))
		return NULL;
	if (entry->entry_crc != pcs_entry_crc(entry, segblock))
		return "checksum mismatch in compressed block map entry";
	if ((entry->flags & ~PCS_ENTRY_KNOWN_FLAGS) != 0 ||
		(entry->flags & PCS_ENTRY_ALLOCATED) == 0)
		return "invalid flags in compressed block map entry";
	if (entry->stored == 0 || entry->stored > BLCKSZ)
		return "invalid stored length in compressed block map entry";
	if ((entry->flags & PCS_ENTRY_RAW) != 0 && entry->stored != BLCKSZ)
		return "raw block map entry does not hold a whole block";
	if ((entry->flags & PCS_ENTRY_RAW) != 0 &&
		(entry->flags & (PCS_ENTRY_SHUFFLED | PCS_ENTRY_SPLIT)) != 0)
		return "raw block map entry is marked as shuffled";
	if ((entry->flags & PCS_ENTRY_SHUFFLED) != 0 &&
		(entry->flags & PCS_ENTRY_SPLIT) != 0)
		return "block map entry is marked as both shuffled and split";
	if (entry->units < pcs_units_for(entry->stored) ||
		entry->units > PCS_MAX_UNITS)
		return "invalid unit count in compressed block map entry";
	if ((uint64) entry->first_unit + entry->units > unit_limit)
		return "compressed block map entry points past the allocated data";
	return NULL;
}

/*
 * Units to allocate for an image of stored bytes.  A block's first image
 * gets exactly what it needs: most pages are written full (bulk loads, index
 * builds) and never grow.  A block that outgrew its allocation has shown
 * that it grows, so its new one gets a quarter more (at least one unit) to
 * be rewritten in place next time.  A raw image never gets slack: it cannot
 * grow.
 */
int
pcs_units_to_allocate(int stored, bool grown)
{
	int			units = pcs_units_for(stored);

	if (stored >= BLCKSZ)
		return PCS_RAW_UNITS;
	if (grown)
		units += Max(1, units / 4);
	return Min(units, PCS_MAX_UNITS);
}

/* CRC32C of a stored image */
uint32
pcs_data_crc(const char *data, int len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, len);
	FIN_CRC32C(crc);
	return crc;
}

/*
 * The page shuffle.
 *
 * General-purpose compressors model a stream of bytes; a PostgreSQL page is
 * a table.  Its line pointer array is, more often than not, an arithmetic
 * progression (items added one after another, each as long as the one
 * before), which an LZ coder sees as 4-byte words that all differ.  Its
 * tuples are rows of fields: the same field of successive tuples (a header
 * word, an ascending key, alignment padding) repeats or changes slowly, but
 * the repeats lie a tuple's length apart, behind bytes that differ.  So
 * before compression a page in the standard layout is rearranged,
 * reversibly:
 *
 * 1. every line pointer is replaced by its difference, as a uint32 modulo
 *    2^32, from the one before it (the first from zero): a progression
 *    becomes one repeated word;
 * 2. the tuple space, pd_upper to pd_special, is read as rows of a stride S,
 *    aligned to end at pd_special (items are placed downwards from there),
 *    and written out column by column, so that each field of the tuples
 *    becomes one run; the (length mod S) bytes at pd_upper stay in place.
 *    S is the most common MAXALIGNed length of the page's normal items (the
 *    smaller on a tie), at most PCS_SHUFFLE_MAX_STRIDE.
 *
 * The header, the hole between pd_lower and pd_upper and the special space
 * are copied unchanged.  The inverse finds all it needs in the header
 * (unchanged) and in the line pointers (restored first), so the image
 * carries nothing extra; the map entry's PCS_ENTRY_SHUFFLED flag says the
 * image was shuffled.  Pages whose header offsets do not describe a
 * standard layout, pages without line pointers and pages whose line
 * pointers point outside the tuple space are not shuffled (index pages of
 * tuples of many lengths are split instead: see below).  Any
 * bytes at all go through the pair unchanged; the offsets of the layout are
 * only used after they are checked.  test/unit/pcs_format_test.c checks the
 * round trip, and test/bench/compression/results-ratio.md what it saves.
 */
#define PCS_SHUFFLE_MAX_STRIDE	1024

/*
 * Does the page's header describe a standard layout?  If so, sets the number
 * of line pointers, pd_upper and pd_special.
 */
static bool
pcs_page_layout(const char *page, int *nitems, int *upper, int *special)
{
	PageHeaderData header;

	memcpy(&header, page, SizeOfPageHeaderData);
	if (header.pd_lower < SizeOfPageHeaderData ||
		header.pd_lower > header.pd_upper ||
		header.pd_upper > header.pd_special ||
		header.pd_special > BLCKSZ ||
		(header.pd_lower - SizeOfPageHeaderData) % sizeof(ItemIdData) != 0)
		return false;
	*nitems = (header.pd_lower - SizeOfPageHeaderData) / sizeof(ItemIdData);
	*upper = header.pd_upper;
	*special = header.pd_special;
	return true;
}

/* The line pointer array of a page, as 32-bit words */
static inline uint32
pcs_lp_word(const char *page, int i)
{
	uint32		word;

	memcpy(&word, page + SizeOfPageHeaderData + i * sizeof(ItemIdData),
		   sizeof(word));
	return word;
}

static inline void
pcs_set_lp_word(char *page, int i, uint32 word)
{
	memcpy(page + SizeOfPageHeaderData + i * sizeof(ItemIdData), &word,
		   sizeof(word));
}

/*
 * The stride of step 2, from the page's (unshuffled) line pointers; 0:
 * none.  If rows is not NULL, sets it to the number of items that long.
 */
static int
pcs_shuffle_stride(const char *page, int nitems, int *rows)
{
	uint16		counts[PCS_SHUFFLE_MAX_STRIDE / MAXIMUM_ALIGNOF + 1];
	int			best = 0;
	int			stride = 0;

	memset(counts, 0, sizeof(counts));
	for (int i = 0; i < nitems; i++)
	{
		ItemIdData	lp;
		int			len;
		int			count;

		memcpy(&lp, page + SizeOfPageHeaderData + i * sizeof(ItemIdData),
			   sizeof(lp));
		if (lp.lp_flags != LP_NORMAL || lp.lp_len == 0)
			continue;
		len = MAXALIGN(lp.lp_len);
		if (len > PCS_SHUFFLE_MAX_STRIDE)
			continue;
		count = ++counts[len / MAXIMUM_ALIGNOF];
		if (count > best || (count == best && len < stride))
		{
			best = count;
			stride = len;
		}
	}
	if (rows != NULL)
		*rows = best;
	return stride;
}

/*
 * Transpose the 8x8 matrix of bytes held in x[0..7] (x[i] holding row i,
 * byte j of it in bits 8j..8j+7): three rounds of swapping blocks across
 * the diagonal, of one byte, then two, then four.
 */
static inline void
pcs_transpose8x8(uint64 *x)
{
	for (int i = 0; i < 8; i += 2)
	{
		uint64		t = ((x[i] >> 8) ^ x[i + 1]) & UINT64CONST(0x00FF00FF00FF00FF);

		x[i + 1] ^= t;
		x[i] ^= t << 8;
	}
	for (int i = 0; i < 8; i++)
	{
		uint64		t;

		if (i & 2)
			continue;			/* pairs (0,2), (1,3), (4,6), (5,7) */
		t = ((x[i] >> 16) ^ x[i + 2]) & UINT64CONST(0x0000FFFF0000FFFF);

		x[i + 2] ^= t;
		x[i] ^= t << 16;
	}
	for (int i = 0; i < 4; i++)
	{
		uint64		t = ((x[i] >> 32) ^ x[i + 4]) & UINT64CONST(0x00000000FFFFFFFF);

		x[i + 4] ^= t;
		x[i] ^= t << 32;
	}
}

/*
 * Step 2 and its inverse on the len bytes of the tuple space: rows of stride
 * bytes ending at its end, to columns (or back, with inverse); the (len mod
 * stride) bytes before the rows are copied as they are.  Blocks of
 * 8 rows by 8 columns are moved as eight 64-bit words, transposed in
 * registers (on little-endian machines, where byte j of a loaded word is
 * its bits 8j..8j+7); the rest byte by byte.  Both ways give the same
 * bytes.
 */
static void
pcs_transpose(const char *src, char *dst, int len, int stride, bool inverse)
{
	int			rows = len / stride;
	int			lead = len % stride;
	int			block_rows = 0;
	int			block_cols = 0;

	memcpy(dst, src, lead);
	src += lead;
	dst += lead;

#ifndef WORDS_BIGENDIAN
	block_rows = rows - rows % 8;
	block_cols = stride - stride % 8;
	for (int r = 0; r < block_rows; r += 8)
	{
		for (int c = 0; c < block_cols; c += 8)
		{
			uint64		x[8];

			for (int i = 0; i < 8; i++)
			{
				if (inverse)
					memcpy(&x[i], src + (c + i) * rows + r, 8);
				else
					memcpy(&x[i], src + (r + i) * stride + c, 8);
			}
			pcs_transpose8x8(x);
			for (int i = 0; i < 8; i++)
			{
				if (inverse)
					memcpy(dst + (r + i) * stride + c, &x[i], 8);
				else
					memcpy(dst + (c + i) * rows + r, &x[i], 8);
			}
		}
	}
#endif

	/* what the blocks did not cover: the last rows, and the last columns */
	for (int r = 0; r < rows; r++)
	{
		for (int c = (r < block_rows ? block_cols : 0); c < stride; c++)
		{
			if (inverse)
				dst[r * stride + c] = src[c * rows + r];
			else
				dst[c * rows + r] = src[r * stride + c];
		}
	}
}

/*
 * The index split.
 *
 * On index pages the transposition above falls short: a B-tree leaf whose
 * keys repeat holds posting lists of varying length, so the tuples are no
 * rows of one stride, and the heap TIDs that make most of such a page are
 * sorted within each list but spread over all of the heap.  Pages whose
 * special space is 16 bytes (B-tree, hash and GiST pages; the test depends
 * on nothing else) and whose line pointers describe index tuples that lie
 * apart from one another inside the tuple space are split instead: the
 * tuple space is rewritten as streams, each a run of one kind of field,
 * taking the tuples in line pointer order (key order, on a B-tree page):
 *
 * A. every tuple's t_info (IndexTupleData), transposed by 2;
 * B. the t_tid of tuples with INDEX_ALT_TID_MASK (B-tree pivot tuples and
 *    posting list tuples, whose t_tid holds other things), transposed by 6;
 * C. the heap TIDs: each other tuple's t_tid and, on B-tree leaf pages,
 *    each TID of a posting list (BTreeTupleIsPosting(), with its offset and
 *    count in bounds), as its block number's difference from the TID
 *    before (modulo 2^32) and its offset number, transposed by 6: a posting
 *    list's sorted block numbers become small differences;
 * D. the key bytes of every tuple (from the header to the posting list or
 *    to the tuple's end), transposed by the most common key length;
 * E. the bytes that follow a posting list inside its tuple;
 * F. the bytes of the tuple space that no tuple covers, in address order.
 *
 * Every byte of the tuple space ends up in exactly one stream, so the image
 * is a page again.  The inverse restores the line pointers first, which
 * give the tuples' places; then A and B, which say what every tuple holds;
 * then the rest.  The map entry's PCS_ENTRY_SPLIT flag says an image was
 * split.  Pages the split does not apply to, and pages whose tuples are
 * nine in ten of one length (where the transposition does as well, for
 * less), are shuffled as above: pcs_page_shuffle() decides.
 *
 * The constants are those of access/itup.h and access/nbtree.h, fixed here
 * because they are now part of the stored format.
 */
#define PCS_SPLIT_SPECIAL		16	/* MAXALIGN(sizeof(BTPageOpaqueData)) */
#define PCS_SPLIT_HEADER		8	/* sizeof(IndexTupleData) */
#define PCS_SPLIT_TID			6	/* sizeof(ItemPointerData) */
#define PCS_ALT_TID_MASK		0x2000	/* INDEX_ALT_TID_MASK */
#define PCS_BT_IS_POSTING		0x2000	/* BT_IS_POSTING */
#define PCS_BT_OFFSET_MASK		0x0FFF	/* BT_OFFSET_MASK */
#define PCS_BTP_LEAF			0x0001	/* BTP_LEAF */
#define PCS_MAX_BT_CYCLE_ID		0xFF7F	/* MAX_BT_CYCLE_ID */
#define PCS_BT_FLAGS_OFFSET		12	/* offsetof(BTPageOpaqueData, btpo_flags) */
#define PCS_BT_CYCLEID_OFFSET	14	/* ... btpo_cycleid, which hash and GiST
									 * pages set to a page id above
									 * MAX_BT_CYCLE_ID */

/* No page has room for more tuples with storage (a line pointer and a header) */
#define PCS_SPLIT_MAX_ITEMS \
	((BLCKSZ - SizeOfPageHeaderData) / (sizeof(ItemIdData) + PCS_SPLIT_HEADER))

/* One index tuple of a page being split */
typedef struct PcsSplitItem
{
	uint16		off;			/* where it starts */
	uint16		len;			/* lp_len */
	uint16		keyend;			/* end of its key bytes (stream D) */
	uint16		nposting;		/* TIDs in its posting list, at keyend */
	uint16		info;			/* its t_info */
	bool		alt;			/* t_tid is not a heap TID */
} PcsSplitItem;

/* A page being split or joined again */
typedef struct PcsSplit
{
	int			nitems;
	PcsSplitItem items[PCS_SPLIT_MAX_ITEMS];
	uint64		covered[BLCKSZ / 64];	/* bit per byte: it is a tuple's */
} PcsSplit;

/*
 * Mark bytes [start, end) of the page as covered by a tuple.  False if any
 * of them was already.
 */
static inline bool
pcs_split_cover(uint64 *covered, int start, int end)
{
	while (start < end)
	{
		int			word = start / 64;
		int			bit = start % 64;
		int			nbits = Min(64 - bit, end - start);
		uint64		mask = (nbits == 64 ? ~UINT64CONST(0) :
							((UINT64CONST(1) << nbits) - 1) << bit);

		if (covered[word] & mask)
			return false;
		covered[word] |= mask;
		start += nbits;
	}
	return true;
}

/*
 * Find the tuples of a page whose line pointers are set (restored, in the
 * inverse).  False if the page is not one to split.
 */
static bool
pcs_split_items(const char *page, int nlp, int upper, int special,
				PcsSplit *split)
{
	if (special != BLCKSZ - PCS_SPLIT_SPECIAL)
		return false;
	split->nitems = 0;
	memset(split->covered, 0, sizeof(split->covered));
	for (int i = 0; i < nlp; i++)
	{
		ItemIdData	lp;
		PcsSplitItem *item;

		memcpy(&lp, page + SizeOfPageHeaderData + i * sizeof(ItemIdData),
			   sizeof(lp));
		if (lp.lp_len == 0)
			continue;			/* no storage */
		if (lp.lp_len < PCS_SPLIT_HEADER || lp.lp_off < upper ||
			lp.lp_off + lp.lp_len > special ||
			split->nitems >= PCS_SPLIT_MAX_ITEMS)
			return false;
		if (!pcs_split_cover(split->covered, lp.lp_off,
							 lp.lp_off + lp.lp_len))
			return false;		/* tuples overlap */
		item = &split->items[split->nitems++];
		item->off = lp.lp_off;
		item->len = lp.lp_len;
	}
	return split->nitems > 0;
}

/*
 * Where each tuple's posting list is, if it has one, from its t_info and
 * t_tid (restored by now, in the inverse) and the page's special space.
 */
static void
pcs_split_plan(const char *page, int special, PcsSplit *split)
{
	uint16		btflags;
	uint16		cycleid;
	bool		btleaf;

	memcpy(&btflags, page + special + PCS_BT_FLAGS_OFFSET, sizeof(btflags));
	memcpy(&cycleid, page + special + PCS_BT_CYCLEID_OFFSET, sizeof(cycleid));
	btleaf = (btflags & PCS_BTP_LEAF) != 0 && cycleid <= PCS_MAX_BT_CYCLE_ID;

	for (int i = 0; i < split->nitems; i++)
	{
		PcsSplitItem *item = &split->items[i];
		uint16		tid[3];		/* bi_hi, bi_lo, ip_posid */

		item->keyend = item->len;
		item->nposting = 0;
		if (!btleaf || !item->alt)
			continue;
		memcpy(tid, page + item->off, sizeof(tid));
		if ((tid[2] & PCS_BT_IS_POSTING) != 0)
		{
			uint32		postoff = ((uint32) tid[0] << 16) | tid[1];
			uint32		n = tid[2] & PCS_BT_OFFSET_MASK;

			if (postoff >= PCS_SPLIT_HEADER &&
				postoff + n * PCS_SPLIT_TID <= item->len)
			{
				item->keyend = (uint16) postoff;
				item->nposting = (uint16) n;
			}
		}
	}
}

/*
 * Move len bytes between the page at off and the stream at *pos (to the
 * stream, or back with inverse).
 */
static inline void
pcs_split_move(char *page, int off, char *stream, int *pos, int len,
			   bool inverse)
{
	if (inverse)
		memcpy(page + off, stream + *pos, len);
	else
		memcpy(stream + *pos, page + off, len);
	*pos += len;
}

/*
 * Move the n-byte field at field between the page and row k of a stream of
 * rows such fields, transposed: byte j of the field is at stream[j * rows +
 * k].  This is what pcs_transpose() makes of the fields laid end to end.
 */
static inline void
pcs_split_field(char *field, char *stream, int rows, int k, int n,
				bool inverse)
{
	for (int j = 0; j < n; j++)
	{
		if (inverse)
			field[j] = stream[j * rows + k];
		else
			stream[j * rows + k] = field[j];
	}
}

/*
 * Move n heap TIDs at tids between the page and rows k.. of stream C (of
 * rows TIDs): each as its offset number, then its block number less that
 * of the TID before (*block), both least significant byte first, byte j
 * of each in plane j of the stream.
 */
static inline void
pcs_split_tids(char *tids, int n, char *stream, int rows, int k,
			   uint32 *block, bool inverse)
{
	unsigned char *p = (unsigned char *) stream + k;
	uint32		b = *block;

	for (int t = 0; t < n; t++, p++, tids += PCS_SPLIT_TID)
	{
		uint16		hi;			/* the fields of ItemPointerData */
		uint16		lo;
		uint16		posid;

		/* field by field: a wider load of narrower stores would stall */
		if (inverse)
		{
			posid = p[0] | p[rows] << 8;
			b += (uint32) p[2 * rows] | (uint32) p[3 * rows] << 8 |
				(uint32) p[4 * rows] << 16 | (uint32) p[5 * rows] << 24;
			hi = (uint16) (b >> 16);
			lo = (uint16) b;
			memcpy(tids, &hi, sizeof(uint16));
			memcpy(tids + 2, &lo, sizeof(uint16));
			memcpy(tids + 4, &posid, sizeof(uint16));
		}
		else
		{
			uint32		delta;

			memcpy(&hi, tids, sizeof(uint16));
			memcpy(&lo, tids + 2, sizeof(uint16));
			memcpy(&posid, tids + 4, sizeof(uint16));
			delta = (((uint32) hi << 16) | lo) - b;
			b += delta;
			p[0] = (unsigned char) posid;
			p[rows] = (unsigned char) (posid >> 8);
			p[2 * rows] = (unsigned char) delta;
			p[3 * rows] = (unsigned char) (delta >> 8);
			p[4 * rows] = (unsigned char) (delta >> 16);
			p[5 * rows] = (unsigned char) (delta >> 24);
		}
	}
	*block = b;
}

/*
 * The streams of the split (inverse false) or their inverse, for the
 * tuples split describes: from the tuple space of the unsplit page (in) to
 * that of the image (out), or back.  out already holds in, with the line
 * pointers differenced or restored.
 */
static void
pcs_split_streams(const char *in, char *out, bool inverse, int upper,
				  int special, PcsSplit *split)
{
	PGAlignedBlock keys;
	char	   *page = inverse ? out : unconstify(char *, in);
	char	   *image = inverse ? unconstify(char *, in) : out;
	int			nitems = split->nitems;
	int			pos = upper;	/* where the next stream starts in image */
	int			rows;
	int			len;
	int			k;
	int			stride;
	uint32		block = 0;
	uint16		counts[PCS_SHUFFLE_MAX_STRIDE / MAXIMUM_ALIGNOF + 1];
	int			best = 0;

	/* A and B first: pcs_split_plan() reads them from the page */
	rows = 0;
	for (int i = 0; i < nitems; i++)
	{
		PcsSplitItem *item = &split->items[i];
		unsigned char *plane = (unsigned char *) image + pos + i;

		if (inverse)
		{
			item->info = plane[0] | plane[nitems] << 8;
			memcpy(page + item->off + PCS_SPLIT_TID, &item->info,
				   sizeof(uint16));
		}
		else
		{
			memcpy(&item->info, page + item->off + PCS_SPLIT_TID,
				   sizeof(uint16));
			plane[0] = (unsigned char) item->info;
			plane[nitems] = (unsigned char) (item->info >> 8);
		}
		item->alt = (item->info & PCS_ALT_TID_MASK) != 0;
		rows += item->alt;
	}
	pos += nitems * sizeof(uint16);

	k = 0;
	for (int i = 0; i < nitems; i++)
	{
		if (split->items[i].alt)
			pcs_split_field(page + split->items[i].off, image + pos, rows,
							k++, PCS_SPLIT_TID, inverse);
	}
	pos += rows * PCS_SPLIT_TID;

	pcs_split_plan(page, special, split);

	/* C: the heap TIDs */
	rows = 0;
	for (int i = 0; i < nitems; i++)
		rows += (split->items[i].alt ? 0 : 1) + split->items[i].nposting;
	k = 0;
	for (int i = 0; i < nitems; i++)
	{
		PcsSplitItem *item = &split->items[i];
		char	   *tuple = page + item->off;

		if (!item->alt)
			pcs_split_tids(tuple, 1, image + pos, rows, k++, &block, inverse);
		pcs_split_tids(tuple + item->keyend, item->nposting, image + pos, rows,
					   k, &block, inverse);
		k += item->nposting;
	}
	pos += rows * PCS_SPLIT_TID;

	/* D: the keys, laid end to end and transposed by their commonest length */
	memset(counts, 0, sizeof(counts));
	len = 0;
	stride = 0;
	for (int i = 0; i < nitems; i++)
	{
		int			keylen = split->items[i].keyend - PCS_SPLIT_HEADER;

		len += keylen;
		if (keylen > 0 && keylen <= PCS_SHUFFLE_MAX_STRIDE &&
			keylen % MAXIMUM_ALIGNOF == 0)
		{
			int			count = ++counts[keylen / MAXIMUM_ALIGNOF];

			if (count > best || (count == best && keylen < stride))
			{
				best = count;
				stride = keylen;
			}
		}
	}
	if (stride == 0)
		stride = 1;				/* no transposition */
	if (inverse)
		pcs_transpose(image + pos, keys.data, len, stride, true);
	k = 0;
	for (int i = 0; i < nitems; i++)
	{
		int			keylen = split->items[i].keyend - PCS_SPLIT_HEADER;
		int			off = split->items[i].off + PCS_SPLIT_HEADER;

		if (keylen == MAXIMUM_ALIGNOF)	/* the common case, inlined */
			pcs_split_move(page, off, keys.data, &k, MAXIMUM_ALIGNOF, inverse);
		else
			pcs_split_move(page, off, keys.data, &k, keylen, inverse);
	}
	if (!inverse && len > 0)
		pcs_transpose(keys.data, image + pos, len, stride, false);
	pos += len;

	/* E: what follows the posting lists, and F: what no tuple covers */
	for (int i = 0; i < nitems; i++)
	{
		PcsSplitItem *item = &split->items[i];
		int			tail = item->keyend + item->nposting * PCS_SPLIT_TID;

		if (tail < item->len)
			pcs_split_move(page, item->off + tail, image, &pos,
						   item->len - tail, inverse);
	}
	for (int b = upper; b < special;)
	{
		uint64		free = ~split->covered[b / 64] >> (b % 64);
		int			start;

		if (free == 0)
		{
			b += 64 - b % 64;	/* the rest of this word is covered */
			continue;
		}
		start = b + pg_rightmost_one_pos64(free);
		if (start >= special)
			break;
		b = start;
		while (b < special && (split->covered[b / 64] >> (b % 64) & 1) == 0)
			b++;
		pcs_split_move(page, start, image, &pos, b - start, inverse);
	}
	Assert(pos == special);
}

/*
 * The shuffle or the split (how: PCS_ENTRY_SHUFFLED or PCS_ENTRY_SPLIT), or
 * with inverse their inverse, from in to out (BLCKSZ bytes each).  NULL if
 * done, else why not; out is untouched if the page does not have what the
 * forward direction needs.
 */
static const char *
pcs_shuffle(const char *in, char *out, uint8 how, bool inverse)
{
	PcsSplit	split;
	int			nitems;
	int			upper;
	int			special;
	int			stride;
	uint32		prev = 0;

	if (!pcs_page_layout(in, &nitems, &upper, &special) || nitems == 0)
		return "the block image does not have a page layout to shuffle";
	if (how == PCS_ENTRY_SPLIT && !inverse &&
		!pcs_split_items(in, nitems, upper, special, &split))
		return "the page does not hold index tuples to split";

	memcpy(out, in, BLCKSZ);
	for (int i = 0; i < nitems; i++)
	{
		uint32		word = pcs_lp_word(in, i);

		if (inverse)
		{
			prev += word;
			pcs_set_lp_word(out, i, prev);
		}
		else
		{
			pcs_set_lp_word(out, i, word - prev);
			prev = word;
		}
	}

	if (how == PCS_ENTRY_SPLIT)
	{
		/* the tuples are found from the line pointers, restored by now */
		if (inverse && !pcs_split_items(out, nitems, upper, special, &split))
			return "the block image does not hold index tuples to join";
		pcs_split_streams(in, out, inverse, upper, special, &split);
		return NULL;
	}

	/* the stride comes from the unshuffled line pointers, restored by now */
	stride = pcs_shuffle_stride(inverse ? out : in, nitems, NULL);
	if (stride > 0)
		pcs_transpose(in + upper, out + upper, special - upper, stride, inverse);
	return NULL;
}

/*
 * Do the page's line pointers with storage all point into its tuple space?
 * Pages that use the space after the header otherwise, such as GIN posting
 * tree pages, which keep compressed posting lists below pd_lower, are not
 * made of line pointers and tuples, and are better compressed as they are.
 */
static bool
pcs_page_has_tuples(const char *page, int nitems, int upper, int special)
{
	for (int i = 0; i < nitems; i++)
	{
		ItemIdData	lp;

		memcpy(&lp, page + SizeOfPageHeaderData + i * sizeof(ItemIdData),
			   sizeof(lp));
		if (lp.lp_len != 0 &&
			(lp.lp_off < upper || lp.lp_off + lp.lp_len > special))
			return false;
	}
	return true;
}

/*
 * Rearrange a page into out (BLCKSZ bytes) for compression: split it if it
 * holds index tuples of many lengths, else shuffle it.  Returns the entry
 * flag that says which (PCS_ENTRY_SPLIT or PCS_ENTRY_SHUFFLED), or 0, with
 * out untouched, if the page is not made of line pointers and tuples.
 */
uint8
pcs_page_shuffle(const char *page, char *out)
{
	int			nitems;
	int			upper;
	int			special;
	int			rows;

	if (!pcs_page_layout(page, &nitems, &upper, &special) || nitems == 0 ||
		!pcs_page_has_tuples(page, nitems, upper, special))
		return 0;

	/*
	 * Where one length covers nine in ten of the tuples (a unique index, a
	 * page without posting lists), the transposition puts the fields in runs
	 * as well as the split does, and costs less than half as much.
	 */
	if (special == BLCKSZ - PCS_SPLIT_SPECIAL)
	{
		(void) pcs_shuffle_stride(page, nitems, &rows);
		if (rows * 10 < nitems * 9 &&
			pcs_shuffle(page, out, PCS_ENTRY_SPLIT, false) == NULL)
			return PCS_ENTRY_SPLIT;
	}
	if (pcs_shuffle(page, out, PCS_ENTRY_SHUFFLED, false) == NULL)
		return PCS_ENTRY_SHUFFLED;
	return 0;
}

/*
 * Undo pcs_page_shuffle(), which returned how (PCS_ENTRY_SPLIT or
 * PCS_ENTRY_SHUFFLED): from in to page (BLCKSZ bytes each).  NULL if done,
 * else what is wrong with the image.
 */
const char *
pcs_page_unshuffle(const char *in, char *page, uint8 how)
{
	Assert(how == PCS_ENTRY_SPLIT || how == PCS_ENTRY_SHUFFLED);
	return pcs_shuffle(in, page, how, true);
}

/*
 * The incompressibility estimate, for zstd.
 *
 * Pages of values that are compressed already (TOAST values compressed by
 * pglz, lz4 or zstd, compressed or encrypted files in bytea columns) do not
 * compress again, and a zstd attempt on each costs several times what
 * storing it raw does.  So before zstd is asked, a cheaper test looks for
 * what zstd would need to save a unit.  A page is stored compressed only
 * when its image is at least one unit smaller than the page, at most
 * BLCKSZ - PCS_UNIT_SIZE bytes (7680 of 8192, 7.5 bits per byte), and zstd
 * has two ways to get there.
 *
 * Coding bytes with fewer bits (its Huffman-coded literals): a code fixed for
 * the block needs at least the Shannon entropy H of the page's own byte
 * histogram per byte, and H is never below the collision entropy
 * H2 = log2(N^2 / sum c_i^2), for byte counts c_i over N bytes.  So coding
 * the page byte by byte takes at least N * H2 / 8 bytes; what that exceeds
 * the limit by is the page's entropy slack (the logarithm is taken in
 * integers, so that no floating point and no libm enter the frontend
 * programs and the fuzz target).  Random bytes have H2 near 7.95
 * bits (a slack of 460 bytes); a page of zstd-compressed TOAST chunks, with
 * its tuple headers, near 7.7 (200 bytes); a page with a few hundred zeros,
 * or a few dominant byte values, is below 7.5 and has none.
 *
 * Replacing repeated strings by references, which no histogram sees (a
 * random block stored twice has a random histogram): lz4 is the probe.  It
 * finds repeats of four bytes and more, and gives up quickly on bytes
 * without any (1.7 us on an 8 kB page here, against 8 to 19 us for zstd's
 * level 1); with no repeat at all its output is the page plus a few length
 * bytes, and every byte it saves below BLCKSZ is a byte of repeats.  (Trying
 * lz4 before zstd is the "early abort" of other zstd users, OpenZFS's.)
 *
 * The page is skipped when the slack exceeds what lz4 saved: even with every
 * repeat lz4 found for free, and the rest coded at the entropy bound, zstd
 * could not reach the limit.  That zstd finds no repeats that lz4 misses is
 * the one assumption; on bytes this close to random, the repeats there are
 * long ones, which both find.  Pages that compress are sent to zstd after a
 * histogram of a 512-byte sample spread over the page, whose collision entropy
 * is below 7.5 bits for nearly all of them; only pages that look random
 * there pay for the rest.  The test reads nothing but the page, so its
 * answer is the same on every run.  test/unit/pcs_format_test.c checks, on
 * families of pages around its thresholds, that no page it skips would have
 * compressed with zstd at levels 1, 3 or 19 or with lz4.  An lz4 tablespace
 * does not use it: an lz4 attempt costs no more than the test.
 */
#ifdef USE_LZ4

#define PCS_SAMPLE_BLOCKS	16
#define PCS_SAMPLE_BYTES	32

/* sum of c_i^2 over a byte histogram */
static uint64
pcs_histogram_squares(const uint32 *counts)
{
	uint64		s = 0;

	for (int i = 0; i < 256; i++)
		s += (uint64) counts[i] * counts[i];
	return s;
}

/*
 * Is the collision entropy log2(n^2 / s) of n bytes (a power of two) whose
 * counts have squares summing to s at least 7.5 bits per byte?  Exactly
 * when s^2 * 2^15 <= n^4; s <= n^2, so s^2 <= n^4 <= 2^60 for n up to 32 kB.
 */
static inline bool
pcs_entropy_reaches_limit(uint64 s, uint64 n)
{
	return s * s <= (n * n * n * n) >> 15;
}

/*
 * The same for a sample of n bytes taken to judge a whole page: the sum of
 * c_i (c_i - 1) over n (n - 1) estimates the page's sum of p_i^2 without the
 * bias of a small sample (random bytes would show 7.4 bits in 512 of them
 * with the plain sum of squares, and 8 with this).
 */
static inline bool
pcs_sample_entropy_reaches_limit(uint64 s, uint64 n)
{
	uint64		pairs = s - n;
	uint64		all = n * (n - 1);

	return pairs * pairs <= (all * all) >> 15;
}

/*
 * log2(num / den) in units of 2^-16, for 1 <= num / den < 2^16 and num below
 * 2^32, in integers: the integer part from the highest bit of the quotient,
 * the fraction bit by bit by squaring (the quotient is kept with 30
 * fractional bits, so that a square fits in 64 bits).
 */
static uint32
pcs_log2_fixed(uint64 num, uint64 den)
{
	uint64		x = (num << 30) / den;
	uint32		result = 0;

	Assert(num >= den && num < (UINT64CONST(1) << 32));
	while (x >= (UINT64CONST(2) << 30))
	{
		x >>= 1;
		result += 1 << 16;
	}
	for (int bit = 15; bit >= 0; bit--)
	{
		x = (x * x) >> 30;
		if (x >= (UINT64CONST(2) << 30))
		{
			x >>= 1;
			result += 1 << bit;
		}
	}
	return result;
}

#endif							/* USE_LZ4 */

/*
 * Is this page one on which zstd could surely not save a unit?  True means
 * store it raw without trying; see above for the argument.  scratch is
 * BLCKSZ bytes of working space.  Without lz4 in the build, always false.
 */
bool
pcs_page_incompressible(const char *page, char *scratch)
{
#ifdef USE_LZ4
	const unsigned char *p = (const unsigned char *) page;
	uint32		counts[4][256];
	int			step = BLCKSZ / PCS_SAMPLE_BLOCKS;
	uint64		s;
	uint64		bound;
	int			lz4_len;
	int			saved;

	StaticAssertStmt(PCS_SAMPLE_BLOCKS * PCS_SAMPLE_BYTES <= BLCKSZ,
					 "the sample must fit in a page");

	/* a sample of 512 bytes from the middles of the sixteenths of the page */
	memset(counts[0], 0, sizeof(counts[0]));
	for (int b = 0; b < PCS_SAMPLE_BLOCKS; b++)
	{
		const unsigned char *sample = p + b * step + (step - PCS_SAMPLE_BYTES) / 2;

		for (int i = 0; i < PCS_SAMPLE_BYTES; i++)
			counts[0][sample[i]]++;
	}
	if (!pcs_sample_entropy_reaches_limit(pcs_histogram_squares(counts[0]),
										  PCS_SAMPLE_BLOCKS * PCS_SAMPLE_BYTES))
		return false;

	/*
	 * the whole page; four histograms, so that increments do not wait on each
	 * other
	 */
	memset(counts, 0, sizeof(counts));
	for (int i = 0; i < BLCKSZ; i += 4)
	{
		counts[0][p[i]]++;
		counts[1][p[i + 1]]++;
		counts[2][p[i + 2]]++;
		counts[3][p[i + 3]]++;
	}
	for (int i = 0; i < 256; i++)
		counts[0][i] += counts[1][i] + counts[2][i] + counts[3][i];
	s = pcs_histogram_squares(counts[0]);
	if (!pcs_entropy_reaches_limit(s, BLCKSZ))
		return false;

	/* lz4 gives up (returns 0) when its output would not fit below BLCKSZ */
	lz4_len = LZ4_compress_default(page, scratch, BLCKSZ, BLCKSZ - 1);
	saved = lz4_len > 0 ? BLCKSZ - lz4_len : 0;

	/*
	 * Skip when the byte-by-byte bound N * H2 / 8, in bytes, exceeds the
	 * limit by more than lz4 saved; scaled by 8 * 2^16 to stay in integers.
	 */
	bound = (uint64) BLCKSZ * pcs_log2_fixed((uint64) BLCKSZ * BLCKSZ, s);
	return bound > (uint64) 8 * 65536 * (BLCKSZ - PCS_UNIT_SIZE + saved);
#else
	return false;
#endif
}

/*
 * Compress one page into dest (capacity bytes), shuffled first when it has
 * a page layout.  Returns the compressed length and sets *image_flags to
 * the entry flags of the image (PCS_ENTRY_SPLIT, PCS_ENTRY_SHUFFLED or 0,
 * from pcs_page_shuffle()), or returns -1
 * with *image_flags PCS_ENTRY_RAW if the page should be stored raw:
 * compression failed, or did not save at least one unit, or the page looks
 * as if it would not and was not tried (pcs_page_incompressible(), on the
 * bytes that would be compressed).
 */
int
pcs_compress_page(PcsAlgorithm algorithm, int level, const char *page,
				  char *dest, int capacity, uint8 *image_flags)
{
	PGAlignedBlock shuffled;
	const char *src = page;
	uint8		flags = 0;
	int			len = -1;

	*image_flags = PCS_ENTRY_RAW;
	if (algorithm == PCS_ALGO_NONE)
		return -1;
	flags = pcs_page_shuffle(page, shuffled.data);
	if (flags != 0)
		src = shuffled.data;

	/* dest serves as the estimate's scratch space when it is large enough */
	if (algorithm == PCS_ALGO_ZSTD && capacity >= BLCKSZ &&
		pcs_page_incompressible(src, dest))
		return -1;

	switch (algorithm)
	{
		case PCS_ALGO_ZSTD:
#ifdef USE_ZSTD
			{
				size_t		r;

				if (pcs_zstd_cctx == NULL)
				{
					pcs_zstd_cctx = ZSTD_createCCtx();
					if (pcs_zstd_cctx == NULL)
						return -1;
				}

				/*
				 * no frame checksum, content size or dictionary id: our CRC
				 * covers the image
				 */
				ZSTD_CCtx_reset(pcs_zstd_cctx, ZSTD_reset_session_and_parameters);
				ZSTD_CCtx_setParameter(pcs_zstd_cctx, ZSTD_c_compressionLevel, level);
				ZSTD_CCtx_setParameter(pcs_zstd_cctx, ZSTD_c_checksumFlag, 0);
				ZSTD_CCtx_setParameter(pcs_zstd_cctx, ZSTD_c_contentSizeFlag, 0);
				ZSTD_CCtx_setParameter(pcs_zstd_cctx, ZSTD_c_dictIDFlag, 0);
				r = ZSTD_compress2(pcs_zstd_cctx, dest, capacity, src, BLCKSZ);
				if (!ZSTD_isError(r))
					len = (int) r;
			}
#endif
			break;
		case PCS_ALGO_LZ4:
#ifdef USE_LZ4
			len = LZ4_compress_default(src, dest, BLCKSZ, capacity);
			if (len <= 0)
				len = -1;
#endif
			break;
		case PCS_ALGO_NONE:
			break;
	}

	if (len < 0 || pcs_units_for(len) >= PCS_RAW_UNITS)
		return -1;
	*image_flags = flags;
	return len;
}

/*
 * Decompress an image of srclen bytes into page (BLCKSZ bytes).  NULL if it
 * decompressed to exactly one page, else what went wrong.
 */
const char *
pcs_decompress_page(PcsAlgorithm algorithm, const char *src, int srclen,
					char *page)
{
	switch (algorithm)
	{
		case PCS_ALGO_ZSTD:
#ifdef USE_ZSTD
			{
				size_t		r;

				if (pcs_zstd_dctx == NULL)
				{
					pcs_zstd_dctx = ZSTD_createDCtx();
					if (pcs_zstd_dctx == NULL)
						return "out of memory for zstd decompression";
				}
				r = ZSTD_decompressDCtx(pcs_zstd_dctx, page, BLCKSZ, src, srclen);
				if (ZSTD_isError(r))
					return "zstd could not decompress the block image";
				if (r != BLCKSZ)
					return "block image decompressed to the wrong length";
				return NULL;
			}
#else
			return "compressed segment uses zstd, which this build does not support";
#endif
		case PCS_ALGO_LZ4:
#ifdef USE_LZ4
			{
				int			r = LZ4_decompress_safe(src, page, srclen, BLCKSZ);

				if (r < 0)
					return "lz4 could not decompress the block image";
				if (r != BLCKSZ)
					return "block image decompressed to the wrong length";
				return NULL;
			}
#else
			return "compressed segment uses lz4, which this build does not support";
#endif
		case PCS_ALGO_NONE:
			break;
	}
	return "unknown compression algorithm";
}

/*
 * The page a stored image holds, whatever the entry's flags say it is (raw,
 * compressed, or compressed after a shuffle).  NULL if page now holds it,
 * else what went wrong.
 */
const char *
pcs_decode_image(PcsAlgorithm algorithm, uint8 flags, const char *image,
				 int len, char *page)
{
	PGAlignedBlock shuffled;
	const char *problem;

	if (flags & PCS_ENTRY_RAW)
	{
		if (len != BLCKSZ)
			return "raw block image is not a whole block";
		memcpy(page, image, BLCKSZ);
		return NULL;
	}
	if ((flags & (PCS_ENTRY_SHUFFLED | PCS_ENTRY_SPLIT)) == 0)
		return pcs_decompress_page(algorithm, image, len, page);
	if ((flags & PCS_ENTRY_SHUFFLED) && (flags & PCS_ENTRY_SPLIT))
		return "block image is marked as both shuffled and split";

	problem = pcs_decompress_page(algorithm, image, len, shuffled.data);
	if (problem != NULL)
		return problem;
	return pcs_page_unshuffle(shuffled.data, page,
							  flags & (PCS_ENTRY_SHUFFLED | PCS_ENTRY_SPLIT));
}
