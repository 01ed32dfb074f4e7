/*-------------------------------------------------------------------------
 *
 * pcs_format.c
 *	  Encoding and validation of page-compressed storage (pcs) segments:
 *	  the header, its shared words and the map entries.
 *
 * The rest of the format layer: pcs_transform.c (the page shuffle and the
 * index split), pcs_estimate.c (which pages are not worth compressing) and
 * pcs_codec.c (compressing and decoding page images).
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

#include "port/pg_crc32c.h"
#include "storage/pcs_format.h"

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

