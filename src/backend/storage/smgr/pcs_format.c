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
 * Nothing here does I/O or raises errors: every check returns PCS_SOUND
 * when the bytes are sound or a PcsProblem saying what is wrong, which
 * pcs_problem_message() turns into a sentence, and the storage manager into
 * an ERROR with ERRCODE_DATA_CORRUPTED naming the relation, fork and block
 * (frontend programs report it their way).  This keeps the code that parses untrusted
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

#include <unistd.h>

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
 * Fill in a new segment header of the current format version, for segment
 * segno of its fork: the checks of the shared words cover the segment
 * number.
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
	/* only zstd takes dictionaries here */
	header->flags = algorithm == PCS_ALGO_ZSTD ? PCS_HEADER_DICTIONARIES : 0;
	header->blcksz = BLCKSZ;
	header->relseg_size = RELSEG_SIZE;
	header->header_crc = pcs_header_crc(header);
	pcs_identity_copy_set(header);
	/* zero is no generation's word: the first allocation computes both */
	pg_atomic_init_u64(&header->alloc.word, 0);
	pg_atomic_init_u64(&header->alloc.second, 0);
	for (int copy = 0; copy < pcs_header_nblocks_copies(header); copy++)
		pg_atomic_init_u64(pcs_header_nblocks(header, copy),
						   pcs_nblocks_word(header, segno, copy, 0));
}

/* The sentence of each problem, untranslated (gettext_noop) */
static const char *const pcs_problem_messages[] = {
	[PCS_SOUND] = NULL,
	[PCS_HEADER_BAD_MAGIC] = gettext_noop("The segment header does not begin with the magic number of compressed segments."),
	[PCS_HEADER_BAD_CRC] = gettext_noop("The checksum of the segment header does not match."),
	[PCS_HEADER_BAD_VERSION] = gettext_noop("The segment header has an unsupported format version."),
	[PCS_HEADER_BAD_ALGORITHM] = gettext_noop("The segment header names an unknown compression algorithm."),
	[PCS_HEADER_BAD_LEVEL] = gettext_noop("The compression level in the segment header is out of range."),
	[PCS_HEADER_BAD_FLAGS] = gettext_noop("The segment header has unknown flags."),
	[PCS_HEADER_BAD_SIZES] = gettext_noop("The segment was made by a build with another block, segment or unit size."),
	[PCS_NBLOCKS_BAD_CRC] = gettext_noop("The checksum of the block count in the segment header does not match."),
	[PCS_NBLOCKS_OUT_OF_RANGE] = gettext_noop("The block count in the segment header is out of range."),
	[PCS_GENERATION_BAD_CRC] = gettext_noop("The checksum of the generation word in the segment header does not match."),
	[PCS_ENTRY_BAD_CRC] = gettext_noop("The checksum of the block's map entry does not match."),
	[PCS_ENTRY_BAD_FLAGS] = gettext_noop("The block's map entry has invalid flags."),
	[PCS_ENTRY_BAD_LENGTH] = gettext_noop("The block's map entry has an invalid stored length."),
	[PCS_ENTRY_RAW_NOT_BLOCK] = gettext_noop("The block's map entry is marked raw but does not hold a whole block."),
	[PCS_ENTRY_RAW_SHUFFLED] = gettext_noop("The block's map entry is marked both raw and shuffled."),
	[PCS_ENTRY_SHUFFLED_AND_SPLIT] = gettext_noop("The block's map entry is marked both shuffled and split."),
	[PCS_ENTRY_BAD_UNITS] = gettext_noop("The block's map entry has an invalid unit count."),
	[PCS_ENTRY_PAST_DATA] = gettext_noop("The block's map entry points past the allocated data."),
	[PCS_IMAGE_CUT_SHORT] = gettext_noop("The block's image is cut short by the end of the file."),
	[PCS_IMAGE_BAD_CRC] = gettext_noop("The checksum of the block's image does not match."),
	[PCS_IMAGE_NO_MEMORY] = gettext_noop("There was not enough memory to decompress the block's image."),
	[PCS_IMAGE_ZSTD_FAILED] = gettext_noop("The block's image could not be decompressed with zstd."),
	[PCS_IMAGE_LZ4_FAILED] = gettext_noop("The block's image could not be decompressed with lz4."),
	[PCS_IMAGE_WRONG_LENGTH] = gettext_noop("The block's image decompressed to the wrong length."),
	[PCS_IMAGE_NO_ZSTD] = gettext_noop("The segment uses zstd, which this build does not support."),
	[PCS_IMAGE_NO_LZ4] = gettext_noop("The segment uses lz4, which this build does not support."),
	[PCS_IMAGE_UNKNOWN_ALGORITHM] = gettext_noop("The segment names an unknown compression algorithm."),
	[PCS_IMAGE_RAW_NOT_BLOCK] = gettext_noop("The block's raw image is not a whole block."),
	[PCS_IMAGE_SHUFFLED_AND_SPLIT] = gettext_noop("The block's image is marked both shuffled and split."),
	[PCS_IMAGE_NO_LAYOUT] = gettext_noop("The block's image does not have a page layout to restore."),
	[PCS_IMAGE_NO_INDEX_TUPLES] = gettext_noop("The page does not hold index tuples to split."),
	[PCS_IMAGE_CANNOT_JOIN] = gettext_noop("The block's image does not hold index tuples to join."),
	[PCS_IMAGE_NO_DICTIONARY] = gettext_noop("The block's image names a compression dictionary that the segment does not have."),
	[PCS_IMAGE_DICTIONARY_FAILED] = gettext_noop("The compression dictionary the block's image names could not be prepared."),
	[PCS_DICTIONARY_BAD_RECORD] = gettext_noop("The record of the compression dictionary the block's image names is damaged."),
	[PCS_DICTIONARY_BAD_CRC] = gettext_noop("The compression dictionary the block's image names is damaged: its checksum does not match."),
	[PCS_DIRECTORY_BAD_SLOT] = gettext_noop("The checksum of the directory slot of the block's map page does not match."),
	[PCS_DIRECTORY_BAD_UNIT] = gettext_noop("The directory slot of the block's map page points past any data area."),
	[PCS_DIRECTORY_BAD_LOCATION] = gettext_noop("Neither copy of the word that locates the segment's map directory is sound."),
	[PCS_DIRECTORY_SLOT_LOST] = gettext_noop("The directory slot of the block's map page was lost with a damaged map directory, which was made again."),
	[PCS_ENTRY_LOST] = gettext_noop("The block's map entry was lost with a map page that could not be located, which was made again; the block reads again once it is written."),
};

StaticAssertDecl(lengthof(pcs_problem_messages) == PCS_ENTRY_LOST + 1,
				 "every PcsProblem needs its sentence");

/*
 * The sentence that says what a problem is, for an error's detail; the
 * caller translates it (_() in the server).
 */
const char *
pcs_problem_message(PcsProblem problem)
{
	Assert(problem > PCS_SOUND && problem < lengthof(pcs_problem_messages));
	return pcs_problem_messages[problem];
}

/*
 * Check the fixed fields of a header read from disk; PCS_SOUND if they are sound.
 * The two shared words are checked by pcs_nblocks_decode() and
 * pcs_alloc_decode() wherever they are read, since they change while the
 * segment is in use.
 */
PcsProblem
pcs_header_check(const PcsHeader *header)
{
	if (header->magic != PCS_MAGIC)
		return PCS_HEADER_BAD_MAGIC;
	if (header->header_crc != pcs_header_crc(header))
		return PCS_HEADER_BAD_CRC;
	if (!pcs_version_known(header->version))
		return PCS_HEADER_BAD_VERSION;
	if (header->algorithm != PCS_ALGO_ZSTD && header->algorithm != PCS_ALGO_LZ4)
		return PCS_HEADER_BAD_ALGORITHM;
	/* the writer uses the level; the CRC does not vouch for crafted bytes */
	if (header->algorithm == PCS_ALGO_ZSTD &&
		(header->level < PCS_ZSTD_MIN_LEVEL || header->level > PCS_ZSTD_MAX_LEVEL))
		return PCS_HEADER_BAD_LEVEL;

	/*
	 * version 2 defines no flag, only zstd takes dictionaries, and a flag
	 * this build does not know is not ours
	 */
	if ((header->flags & ~PCS_HEADER_KNOWN_FLAGS) != 0 ||
		(header->version == PCS_FORMAT_VERSION_2 && header->flags != 0) ||
		((header->flags & PCS_HEADER_DICTIONARIES) != 0 &&
		 header->algorithm != PCS_ALGO_ZSTD))
		return PCS_HEADER_BAD_FLAGS;
	if (header->unit_shift != (header->version == PCS_FORMAT_VERSION_2 ?
							   PCS_V2_UNIT_SHIFT : PCS_UNIT_SHIFT) ||
		header->blcksz != BLCKSZ || header->relseg_size != RELSEG_SIZE)
		return PCS_HEADER_BAD_SIZES;
	return PCS_SOUND;
}

/* The check of the identity's copy: CRC32C of its fields and of "I" */
static uint32
pcs_identity_copy_crc(const PcsIdentityCopy *copy)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, "I", 1);
	COMP_CRC32C(crc, copy->fields, PCS_IDENTITY_SIZE);
	FIN_CRC32C(crc);
	return crc;
}

/*
 * Does the header hold a sound copy of the identity that a build like this
 * one can read?  Never for version 2, whose header has no dictionary sector.
 */
bool
pcs_identity_copy_sound(const PcsHeader *header)
{
	const PcsIdentityCopy *copy = &header->dictionaries.identity;
	PcsHeader	scratch;

	if (copy->copy_crc != pcs_identity_copy_crc(copy))
		return false;
	memset(&scratch, 0, sizeof(scratch));
	memcpy(&scratch, copy->fields, PCS_IDENTITY_SIZE);
	return scratch.version != PCS_FORMAT_VERSION_2 &&
		pcs_header_check(&scratch) == PCS_SOUND;
}

/*
 * Write the copy of a sound header's identity (versions 3 to 5): at
 * creation, and when a server opens a segment made before the copy existed.
 */
void
pcs_identity_copy_set(PcsHeader *header)
{
	PcsIdentityCopy copy;

	Assert(pcs_header_check(header) == PCS_SOUND);
	if (header->version == PCS_FORMAT_VERSION_2)
		return;
	memcpy(copy.fields, header, PCS_IDENTITY_SIZE);
	copy.copy_crc = pcs_identity_copy_crc(&copy);
	memcpy(&header->dictionaries.identity, &copy, sizeof(copy));
}

/*
 * Restore the identity of a header whose sector 0 failed its check from the
 * copy in its dictionary sector, if that is sound; false if it is not (or
 * the sector is sound but names a format this build does not read, which
 * is not damage).  Only the identity's bytes are written: in versions 3 to
 * 5 nothing else in sector 0 is used.
 */
bool
pcs_identity_restore(PcsHeader *header)
{
	if (pcs_header_other_version(header) != 0 ||
		!pcs_identity_copy_sound(header))
		return false;
	memcpy(header, header->dictionaries.identity.fields, PCS_IDENTITY_SIZE);
	Assert(pcs_header_check(header) == PCS_SOUND);
	return true;
}

/*
 * The format version of an intact header of a version this build cannot
 * read, or 0.  Callers use it to tell a file made by another build, which is
 * refused with a hint, from a damaged one: the version is covered by the
 * header CRC.
 */
uint32
pcs_header_other_version(const PcsHeader *header)
{
	if (header->magic != PCS_MAGIC ||
		header->header_crc != pcs_header_crc(header) ||
		pcs_version_known(header->version))
		return 0;
	return header->version;
}

/*
 * What the check of a shared header word covers; the kind keeps them apart,
 * and the second copy of the block count has a kind of its own.
 */
#define PCS_WORD_NBLOCKS	0x4e	/* 'N' */
#define PCS_WORD_NBLOCKS_2	0x6e	/* 'n' */
#define PCS_WORD_ALLOC		0x41	/* 'A' */
#define PCS_WORD_GENERATION	0x47	/* 'G' */
#define PCS_WORD_DICTIONARY	0x44	/* 'D' */
#define PCS_WORD_DICT_RECORD	0x52	/* 'R' */
#define PCS_WORD_MAP_PAGE	0x4d	/* 'M' */
#define PCS_WORD_DIRECTORY	0x4c	/* 'L' */
#define PCS_WORD_DIRECTORY_2	0x6c	/* 'l' */

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

/* Copy copy of the block count word of segment segno holding nblocks */
uint64
pcs_nblocks_word(const PcsHeader *header, BlockNumber segno, int copy,
				 BlockNumber nblocks)
{
	uint32		check = pcs_word_check(header, segno,
									   copy == 0 ? PCS_WORD_NBLOCKS : PCS_WORD_NBLOCKS_2,
									   0, nblocks);

	Assert(copy == 0 || copy == 1);
	return ((uint64) check << 32) | (uint32) ~nblocks;
}

/*
 * Read the block count of segment segno out of copy copy of its word.
 * PCS_SOUND if the word is sound, else what is wrong with it (and *nblocks
 * is not set).
 */
PcsProblem
pcs_nblocks_decode(const PcsHeader *header, BlockNumber segno, int copy,
				   uint64 word, BlockNumber *nblocks)
{
	BlockNumber n = ~(uint32) word;

	if ((uint32) (word >> 32) !=
		pcs_word_check(header, segno,
					   copy == 0 ? PCS_WORD_NBLOCKS : PCS_WORD_NBLOCKS_2, 0, n))
		return PCS_NBLOCKS_BAD_CRC;
	if (n > RELSEG_SIZE)
		return PCS_NBLOCKS_OUT_OF_RANGE;
	*nblocks = n;
	return PCS_SOUND;
}

/*
 * The block count of a segment from every copy its header keeps: the larger
 * of the sound copies.  Writers store copy 0, then copy 1, each only ever
 * raised while the server runs and lowered only by a truncation, which redo
 * repeats after a crash; so the larger sound copy is a count that one
 * single word could have held at that moment, whether a reader meets a
 * write between the two stores or a crash left one sector older than the
 * other.  *sound_copies says how many copies were sound (callers repair the
 * others).  When none is, the problem of copy 0 is returned.
 */
PcsProblem
pcs_nblocks_read(PcsHeader *header, BlockNumber segno, BlockNumber *nblocks,
				 int *sound_copies)
{
	PcsProblem	first_problem = PCS_SOUND;
	bool		found = false;

	*sound_copies = 0;
	for (int copy = 0; copy < pcs_header_nblocks_copies(header); copy++)
	{
		BlockNumber n;
		PcsProblem	problem;

		problem = pcs_nblocks_decode(header, segno, copy,
									 pg_atomic_read_u64(pcs_header_nblocks(header, copy)),
									 &n);
		if (problem != PCS_SOUND)
		{
			if (copy == 0)
				first_problem = problem;
			continue;
		}
		(*sound_copies)++;
		if (!found || n > *nblocks)
			*nblocks = n;
		found = true;
	}
	return found ? PCS_SOUND : first_problem;
}

/* The generation word of segment segno naming generation */
uint64
pcs_generation_word(const PcsHeader *header, BlockNumber segno,
					uint32 generation)
{
	uint32		check = pcs_word_check(header, segno, PCS_WORD_GENERATION, 0,
									   generation);

	return ((uint64) check << 32) | generation;
}

/*
 * Read the generation out of a generation word: false if the word is not
 * sound (a zero word, as a new segment has, is not).
 */
bool
pcs_generation_decode(const PcsHeader *header, BlockNumber segno,
					  uint64 word, uint32 *generation)
{
	uint32		g = (uint32) word;

	if (word == 0 ||
		(uint32) (word >> 32) !=
		pcs_word_check(header, segno, PCS_WORD_GENERATION, 0, g))
		return false;
	*generation = g;
	return true;
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
 * Directory slot page of segment segno (version 5) locating a map page at
 * unit: the complement of the unit, and a check that covers the unit, the
 * page's number and the segment, so that a slot moved to another place, or
 * copied from another segment, fails it
 */
uint64
pcs_directory_word(const PcsHeader *header, BlockNumber segno, int page,
				   uint32 unit)
{
	uint32		check = pcs_word_check(header, segno, PCS_WORD_MAP_PAGE,
									   (uint32) page, unit);

	Assert(page >= 0 && page < PCS_MAP_PAGES);
	return ((uint64) check << 32) | (uint32) ~unit;
}

/*
 * Read directory slot page of segment segno: PCS_SOUND with *present false
 * for a slot of zeros (no map page), or true and the page's first unit in
 * *unit; a problem if the slot fails its check or locates a page that no
 * data area could hold.
 */
PcsProblem
pcs_directory_decode(const PcsHeader *header, BlockNumber segno, int page,
					 uint64 word, bool *present, uint32 *unit)
{
	uint32		value = ~(uint32) word;

	*present = false;
	*unit = 0;
	if (word == 0)
		return PCS_SOUND;
	if ((uint32) (word >> 32) != pcs_word_check(header, segno,
												PCS_WORD_MAP_PAGE,
												(uint32) page, value))
		return word == PCS_LOST_SLOT ?
			PCS_DIRECTORY_SLOT_LOST : PCS_DIRECTORY_BAD_SLOT;
	/* the header may be unchecked here (pg_checksums, the fuzz target) */
	if ((uint64) value + (PCS_MAP_PAGE_SIZE >> PCS_UNIT_SHIFT) > PG_UINT32_MAX)
		return PCS_DIRECTORY_BAD_UNIT;
	*present = true;
	*unit = value;
	return PCS_SOUND;
}

/*
 * Copy copy of the directory word of segment segno (version 5) locating its
 * directory at unit, in the form of a directory slot
 */
uint64
pcs_directory_location_word(const PcsHeader *header, BlockNumber segno,
							int copy, uint32 unit)
{
	uint32		check = pcs_word_check(header, segno,
									   copy == 0 ? PCS_WORD_DIRECTORY : PCS_WORD_DIRECTORY_2,
									   0, unit);

	Assert(copy == 0 || copy == 1);
	return ((uint64) check << 32) | (uint32) ~unit;
}

/*
 * Read copy copy of the directory word of segment segno: PCS_SOUND with
 * *present false for zeros (no directory yet), or true and the directory's
 * first unit in *unit; a problem if the word fails its check or locates a
 * directory that no data area could hold
 */
PcsProblem
pcs_directory_location_decode(const PcsHeader *header, BlockNumber segno,
							  int copy, uint64 word, bool *present,
							  uint32 *unit)
{
	uint32		value = ~(uint32) word;

	Assert(copy == 0 || copy == 1);
	*present = false;
	*unit = 0;
	if (word == 0)
		return PCS_SOUND;
	if ((uint32) (word >> 32) !=
		pcs_word_check(header, segno,
					   copy == 0 ? PCS_WORD_DIRECTORY : PCS_WORD_DIRECTORY_2,
					   0, value))
		return PCS_DIRECTORY_BAD_LOCATION;
	if ((uint64) value + (PCS_DIRECTORY_SIZE >> PCS_UNIT_SHIFT) > PG_UINT32_MAX)
		return PCS_DIRECTORY_BAD_LOCATION;
	*present = true;
	*unit = value;
	return PCS_SOUND;
}

/*
 * The current word of the dictionary sector of segment segno: dictionary
 * number is ready for new images, or is being installed by generation.  An
 * installation's word is checked against its generation, so that one a
 * crash interrupted is void for every later server (pcs_dict_decode()).
 */
uint64
pcs_dict_word(const PcsHeader *header, BlockNumber segno, PcsDictState state,
			  int number, uint32 generation)
{
	uint32		value;

	Assert(state == PCS_DICT_READY || state == PCS_DICT_INSTALLING);
	Assert(number >= 1 && number <= PCS_MAX_DICTIONARIES);
	value = (uint32) number | (state == PCS_DICT_INSTALLING ? 0x100 : 0);
	return ((uint64) pcs_word_check(header, segno, PCS_WORD_DICTIONARY,
									state == PCS_DICT_INSTALLING ? generation : 0,
									value) << 32) | value;
}

/*
 * What the current word of a dictionary sector says, for a process of
 * generation: PCS_DICT_READY or PCS_DICT_INSTALLING with *number set, or
 * PCS_DICT_NONE for a zero or damaged word and for an installation by an
 * earlier generation, which will never finish.
 */
PcsDictState
pcs_dict_decode(const PcsHeader *header, BlockNumber segno, uint64 word,
				uint32 generation, int *number)
{
	uint32		value = (uint32) word;
	uint32		check = (uint32) (word >> 32);
	int			n = value & 0xFF;

	if (n < 1 || n > PCS_MAX_DICTIONARIES || (value & ~0x1FF) != 0)
		return PCS_DICT_NONE;
	if ((value & 0x100) == 0)
	{
		if (check != pcs_word_check(header, segno, PCS_WORD_DICTIONARY, 0,
									value))
			return PCS_DICT_NONE;
		*number = n;
		return PCS_DICT_READY;
	}
	if (check != pcs_word_check(header, segno, PCS_WORD_DICTIONARY,
								generation, value))
		return PCS_DICT_NONE;
	*number = n;
	return PCS_DICT_INSTALLING;
}

/* CRC32C of a dictionary record's first 12 bytes, its number and segment */
static uint32
pcs_dict_record_crc(const PcsHeader *header, BlockNumber segno, int number,
					const PcsDictRecord *record)
{
	uint32		input[6];
	pg_crc32c	crc;

	input[0] = header->header_crc;
	input[1] = segno;
	input[2] = PCS_WORD_DICT_RECORD;
	input[3] = (uint32) number;
	input[4] = record->first_unit;
	input[5] = record->bytes;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, input, sizeof(input));
	COMP_CRC32C(crc, &record->data_crc, sizeof(record->data_crc));
	FIN_CRC32C(crc);
	return crc;
}

/* Fill in the record of dictionary number of segment segno */
void
pcs_dict_record_set(const PcsHeader *header, BlockNumber segno, int number,
					PcsDictRecord *record, uint32 first_unit, uint32 bytes,
					uint32 data_crc)
{
	Assert(number >= 1 && number <= PCS_MAX_DICTIONARIES);
	Assert(bytes >= PCS_MIN_DICTIONARY_SIZE && bytes <= PCS_MAX_DICTIONARY_SIZE);
	record->first_unit = first_unit;
	record->bytes = bytes;
	record->data_crc = data_crc;
	record->record_crc = pcs_dict_record_crc(header, segno, number, record);
}

/*
 * Check the record of dictionary number of segment segno, in a segment of
 * units of 1 << shift bytes: PCS_SOUND, or PCS_DICTIONARY_BAD_RECORD for a
 * record that is unused, damaged, or describes impossible bytes.
 */
PcsProblem
pcs_dict_record_check(const PcsHeader *header, BlockNumber segno, int number,
					  const PcsDictRecord *record, int shift)
{
	if (number < 1 || number > PCS_MAX_DICTIONARIES ||
		(header->flags & PCS_HEADER_DICTIONARIES) == 0 ||
		record->record_crc != pcs_dict_record_crc(header, segno, number, record) ||
		record->bytes < PCS_MIN_DICTIONARY_SIZE ||
		record->bytes > PCS_MAX_DICTIONARY_SIZE ||
		(uint64) record->first_unit + pcs_units_for(record->bytes, shift) > PG_UINT32_MAX)
		return PCS_DICTIONARY_BAD_RECORD;
	return PCS_SOUND;
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

/*
 * Fill in the entry of block segblock (block number within its segment), in
 * a segment of units of 1 << shift bytes
 */
void
pcs_entry_set(PcsMapEntry *entry, BlockNumber segblock, uint32 first_unit,
			  int stored, int units, uint8 image_flags, uint32 data_crc,
			  int shift)
{
	Assert(stored > 0 && stored <= BLCKSZ);
	Assert(units >= pcs_units_for(stored, shift) &&
		   units <= pcs_raw_units(shift) + pcs_raw_units(shift) / 4);
	Assert((image_flags & ~PCS_ENTRY_DICTIONARY) == 0 ||
		   (image_flags & ~PCS_ENTRY_DICTIONARY) == PCS_ENTRY_SHUFFLED ||
		   (image_flags & ~PCS_ENTRY_DICTIONARY) == PCS_ENTRY_SPLIT ||
		   image_flags == PCS_ENTRY_RAW);

	entry->first_unit = first_unit;
	entry->stored = (uint16) stored;
	entry->units = (uint8) units;
	entry->flags = PCS_ENTRY_ALLOCATED | image_flags;
	entry->data_crc = data_crc;
	entry->entry_crc = pcs_entry_crc(entry, segblock);
}

/*
 * Check the entry of block segblock, in a segment of units of 1 << shift
 * bytes.  unit_limit is the first unit past those handed out in the
 * segment: an image must lie below it.  An empty entry is sound (the block
 * reads as zeros).  PCS_SOUND if sound.
 */
PcsProblem
pcs_entry_check(const PcsMapEntry *entry, BlockNumber segblock,
				uint32 unit_limit, int shift)
{
	if (pcs_entry_is_empty(entry))
		return PCS_SOUND;
	if (entry->entry_crc != pcs_entry_crc(entry, segblock))
	{
		const unsigned char *bytes = (const unsigned char *) entry;

		for (int i = 0; i < sizeof(PcsMapEntry); i++)
		{
			if (bytes[i] != PCS_LOST_BYTE)
				return PCS_ENTRY_BAD_CRC;
		}
		return PCS_ENTRY_LOST;
	}
	if ((entry->flags & ~(PCS_ENTRY_KNOWN_FLAGS | PCS_ENTRY_DICTIONARY)) != 0 ||
		(entry->flags & PCS_ENTRY_ALLOCATED) == 0)
		return PCS_ENTRY_BAD_FLAGS;
	/* a raw image has no dictionary; the decoder checks that one exists */
	if ((entry->flags & PCS_ENTRY_RAW) != 0 &&
		pcs_entry_dictionary(entry->flags) != 0)
		return PCS_ENTRY_BAD_FLAGS;
	if (entry->stored == 0 || entry->stored > BLCKSZ)
		return PCS_ENTRY_BAD_LENGTH;
	if ((entry->flags & PCS_ENTRY_RAW) != 0 && entry->stored != BLCKSZ)
		return PCS_ENTRY_RAW_NOT_BLOCK;
	if ((entry->flags & PCS_ENTRY_RAW) != 0 &&
		(entry->flags & (PCS_ENTRY_SHUFFLED | PCS_ENTRY_SPLIT)) != 0)
		return PCS_ENTRY_RAW_SHUFFLED;
	if ((entry->flags & PCS_ENTRY_SHUFFLED) != 0 &&
		(entry->flags & PCS_ENTRY_SPLIT) != 0)
		return PCS_ENTRY_SHUFFLED_AND_SPLIT;
	if (entry->units < pcs_units_for(entry->stored, shift) ||
		entry->units > pcs_raw_units(shift) + pcs_raw_units(shift) / 4)
		return PCS_ENTRY_BAD_UNITS;
	if ((uint64) entry->first_unit + entry->units > unit_limit)
		return PCS_ENTRY_PAST_DATA;
	return PCS_SOUND;
}

/*
 * Units of 1 << shift bytes to allocate for an image of stored bytes.  A block's first image
 * gets exactly what it needs: most pages are written full (bulk loads, index
 * builds) and never grow.  A block that outgrew its allocation has shown
 * that it grows, so its new one gets a quarter more (at least one unit) to
 * be rewritten in place next time.  A raw image never gets slack: it cannot
 * grow.
 */
int
pcs_units_to_allocate(int stored, bool grown, int shift)
{
	int			units = pcs_units_for(stored, shift);
	int			raw = pcs_raw_units(shift);

	if (stored >= BLCKSZ)
		return raw;
	if (grown)
		units += Max(1, units / 4);
	return Min(units, raw + raw / 4);
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
 * Is the file open as fd, of size bytes, a segment 0 whose creation an
 * operating system crash interrupted after the file was sized to its data
 * area, before its header reached disk?
 *
 * pcs_init_segment_file() writes the header and fsyncs it (builds of
 * versions 2 to 4 also sized the file to their data area); until the fsync
 * the kernel may write the new size back without the header, and a crash
 * then leaves a file of exactly PCS_HEADER_SIZE bytes (PCS_V4_DATA_OFFSET
 * from those builds), all zeros.  Read by its first bytes, that used to be an md fork of 256
 * zero pages and half a page: redo of the fork's creation left it so, and
 * redo and everything after wrote the relation's blocks at md offsets after
 * those pages, so a table created in a compressed tablespace silently
 * became an uncompressed one with 2 MB of empty pages (pcs/022).  Such a
 * file holds nothing, read either way: no header, no map entry, no image,
 * and as an md fork only zero pages; nothing is lost by taking it for an
 * empty fork, whose creation redo then completes and whose next extension
 * starts from an empty file (pcs.c, pcs_forget_blank_file()); pg_checksums
 * skips it.  The whole file is checked, not only the header: md never
 * leaves a file of this size (it is not a multiple of BLCKSZ) except after
 * a torn extension, and an md fork of this size whose first page happens to
 * be zeros must not be mistaken for an empty one; for the same reason a
 * file of PCS_HEADER_SIZE bytes is taken for one only where that is not a
 * whole number of blocks.  Only the parts of the
 * file that hold data are read (SEEK_DATA): such a file is usually all a
 * hole.
 */
bool
pcs_segment0_is_blank(int fd, off_t size)
{
	PGAlignedBlock buf;
	off_t		pos = 0;

	if (size != PCS_V4_DATA_OFFSET &&
		(size != PCS_HEADER_SIZE || PCS_HEADER_SIZE % BLCKSZ == 0))
		return false;
	while (pos < size)
	{
		off_t		data;
		off_t		hole;

		if (!pcs_next_data_range(fd, pos, size, &data, &hole))
			break;
		for (pos = data; pos < hole;)
		{
			int			len = (int) Min((off_t) BLCKSZ, hole - pos);
			int			nread = pg_pread(fd, buf.data, len, pos);

			if (nread <= 0)
				return false;	/* let the reader report it */
			for (int i = 0; i < nread; i++)
			{
				if (buf.data[i] != 0)
					return false;
			}
			pos += nread;
		}
	}
	return true;
}
