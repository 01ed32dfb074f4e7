/*-------------------------------------------------------------------------
 *
 * pcs_format.h
 *	  On-disk format of page-compressed storage (pcs) segments.
 *
 * A compressed segment is one file: a header block, a map with one entry per
 * logical block, and a data area of fixed-size units holding compressed page
 * images.  See src/backend/storage/smgr/README.pcs for the design and the
 * crash-safety argument.
 *
 * Everything here is free of backend dependencies (no ereport, no memory
 * contexts), so the same code serves the storage manager, frontend tools and
 * the fuzz target.  Functions report problems by returning a message, which
 * the caller turns into an error naming the relation, fork and block.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/storage/pcs_format.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PCS_FORMAT_H
#define PCS_FORMAT_H

#include <unistd.h>

#ifndef FRONTEND
#include "port/atomics.h"
#else

/*
 * Frontend programs (pg_checksums, pg_rewind) read the segments of a stopped
 * server and cannot use atomics.h: for them the two shared words of the
 * header are plain integers of the same size and alignment, read and set
 * through the few accessors the format code uses.
 */
typedef struct pg_atomic_uint64
{
	volatile uint64 value pg_attribute_aligned(8);
} pg_atomic_uint64;

#define pg_atomic_init_u64(ptr, val)	((ptr)->value = (val))
#define pg_atomic_read_u64(ptr)			((ptr)->value)
#define pg_atomic_write_u64(ptr, val)	((ptr)->value = (val))
#endif							/* FRONTEND */

#include "storage/block.h"

/*
 * Read as an md page header, these first 8 bytes would be a pd_lsn whose
 * high half is 0x7FFFFFxx, a WAL position beyond 2^62 bytes: no md file can
 * start with them.  Stored little-endian, the file begins "PCS1" 0xff 0xff
 * 0xff 0x7f.
 */
#define PCS_MAGIC			UINT64CONST(0x7FFFFFFF31534350)

/*
 * Version 2 made the two shared words of the header self-checking.  Version
 * 3 gave them sectors of their own, away from the fields that identify the
 * file, kept the block count twice, added the generation word, and made
 * units 128 bytes.  Version 4 keeps the map entries of a segment's first
 * PCS_HEADER_ENTRIES blocks in the header's last sectors, so that a small
 * fork needs no page of the map (PcsHeader).  Version 5 drops the 2 MB map
 * that versions 2 to 4 keep between the header and the data area: its pages
 * are allocated in the data area when their first entry is stored, and
 * found through a directory in the file's second 4 kB block, so that a
 * file's size, holes or not, follows its data (README.pcs, "The map
 * directory").  Segments of versions 2 to 4 stay readable and writable,
 * each with its own layout; new segments are made in version 5.  A build
 * that reads only versions 2 to 4 refuses a segment of version 5 with an
 * error naming the version (not as damage).  Files of version 1 were only
 * ever made by development builds; they are refused with a hint, not
 * converted.  What comments here and in the storage manager say of version
 * 3 holds for versions 4 and 5 too, except where the map lies.
 */
#define PCS_FORMAT_VERSION	5
#define PCS_FORMAT_VERSION_4	4
#define PCS_FORMAT_VERSION_3	3
#define PCS_FORMAT_VERSION_2	2

/* Can this build read and write segments of this format version? */
static inline bool
pcs_version_known(uint32 version)
{
	return version >= PCS_FORMAT_VERSION_2 && version <= PCS_FORMAT_VERSION;
}

/*
 * In a compressed tablespace's version directory: its settings, which new
 * relation forks take (README.pcs).  Frontend programs skip it.
 */
#define PCS_MARKER_FILE		"pgstrata_compression"

/*
 * Space held back for writing back pages of compressed relations when the
 * file system is full (pcs_reserve.c): a file of this name in the
 * tablespace's temporary-files directory (pgsql_tmp in its version
 * directory, which PostgreSQL makes there for temporary files too), so that
 * every backup tool leaves it out as it leaves out temporary files
 * (pg_basebackup, pg_rewind, pgBackRest, WAL-G), and pg_checksums skips
 * it.  Server start keeps it (patch 0031: it is not a temporary file).  The
 * checkpointer makes it again wherever it is missing.  Builds before
 * December 2026 kept it in the version directory itself, under the same
 * name; the checkpointer removes that one when it makes the new one.
 */
#define PCS_RESERVE_DIR		"pgsql_tmp"
#define PCS_RESERVE_FILE	"pgstrata_reserve"

/*
 * Is a file of a tablespace's version directory (or of its temporary-files
 * directory) one of the two above?
 */
static inline bool
pcs_is_tablespace_file(const char *name)
{
	return strcmp(name, PCS_MARKER_FILE) == 0 ||
		strcmp(name, PCS_RESERVE_FILE) == 0;
}

/*
 * In the data directory: this cluster may hold compressed forks, so the
 * server WAL-logs hint-bit changes and keeps full_page_writes on (README.pcs,
 * "Hint bits and full-page images").  Written before the first compressed
 * fork; nothing removes it.
 */
#define PCS_IN_USE_FILE		"pgstrata_compressed_storage"

/*
 * Layout of a segment file.  Every version begins with the header block.
 * Versions 2 to 4 follow it with the map, one entry per block of the
 * segment (a sparse 2 MB), and then the data area.  Version 5 follows it
 * with the data area at once, which holds the map's pages among the
 * images, and a directory that locates them, itself located by a word of
 * the header (PcsDirectory).
 */
#define PCS_HEADER_SIZE		4096
#define PCS_ENTRY_SIZE		16
#define PCS_V4_MAP_OFFSET	PCS_HEADER_SIZE
#define PCS_V4_MAP_SIZE		((off_t) RELSEG_SIZE * PCS_ENTRY_SIZE)
#define PCS_V4_DATA_OFFSET	(PCS_V4_MAP_OFFSET + PCS_V4_MAP_SIZE)
#define PCS_V5_DATA_OFFSET	PCS_HEADER_SIZE

/*
 * Version 5's map: pages of PCS_MAP_PAGE_ENTRIES entries, page k holding
 * the entries of blocks k * PCS_MAP_PAGE_ENTRIES on (page 0 leaves the
 * entries kept in the header unused), each PCS_MAP_PAGE_SIZE bytes of the
 * data area, located by slot k of the directory (PcsDirectory), which takes
 * PCS_DIRECTORY_SIZE bytes of the data area: 4 kB for segments of 1 GB.
 */
#define PCS_MAP_PAGE_SIZE	4096
#define PCS_MAP_PAGE_ENTRIES	(PCS_MAP_PAGE_SIZE / PCS_ENTRY_SIZE)
#define PCS_MAP_PAGES		((int) ((RELSEG_SIZE + PCS_MAP_PAGE_ENTRIES - 1) / \
									PCS_MAP_PAGE_ENTRIES))
#define PCS_DIRECTORY_SIZE	TYPEALIGN(PCS_MAP_PAGE_SIZE, PCS_MAP_PAGES * sizeof(uint64))

/*
 * Allocation units of the data area: 128 bytes in version 3, 512 in version
 * 2.  Code that works on a segment takes the unit size from its header
 * (unit_shift); the codec and new segments use PCS_UNIT_SHIFT.
 */
#define PCS_UNIT_SHIFT		7
#define PCS_V2_UNIT_SHIFT	9
#define PCS_UNIT_SIZE		(1 << PCS_UNIT_SHIFT)
#define PCS_RAW_UNITS		(BLCKSZ >> PCS_UNIT_SHIFT)
/* a block never holds more units than raw plus the largest slack */
#define PCS_MAX_UNITS		(PCS_RAW_UNITS + PCS_RAW_UNITS / 4)

/*
 * A page is stored compressed only if that saves at least this many bytes:
 * below it (6% of a page) the space gained does not pay for the
 * decompression every read of the page then costs, and pages of data that
 * is compressed already (TOAST chunks of zstd or lz4 values) save about a
 * hundred bytes of tuple headers.  pcs_page_incompressible() skips, untried,
 * the pages that surely cannot save it.  It is the unit size of version 2,
 * so pages that were stored raw there are stored raw in version 3 too.
 */
#define PCS_MIN_SAVING		512

/* The header's sectors: each shared word has one to itself (version 3) */
#define PCS_SECTOR_SIZE		512

/*
 * Version 4 keeps the map entries of a segment's first this many blocks in
 * the header's sectors 5 to 7, the rest of the header block
 */
#define PCS_HEADER_ENTRIES	((PCS_HEADER_SIZE - 5 * PCS_SECTOR_SIZE) / PCS_ENTRY_SIZE)

/* Compression algorithms; the values are stored on disk */
typedef enum PcsAlgorithm
{
	PCS_ALGO_NONE = 0,
	PCS_ALGO_ZSTD = 1,
	PCS_ALGO_LZ4 = 2,
} PcsAlgorithm;

#define PCS_ZSTD_MIN_LEVEL		1
#define PCS_ZSTD_MAX_LEVEL		19
#define PCS_ZSTD_DEFAULT_LEVEL	1

/*
 * Header flags (version 3).  PCS_HEADER_DICTIONARIES: images of the segment
 * may be compressed with a dictionary the segment keeps (the entry's high
 * flag bits name it).  Set when the segment is made; builds that do not
 * know a flag refuse the segment, so no build misreads such an image.
 */
#define PCS_HEADER_DICTIONARIES	0x01
#define PCS_HEADER_KNOWN_FLAGS	PCS_HEADER_DICTIONARIES

/*
 * Compression dictionaries of a segment (version 3 with
 * PCS_HEADER_DICTIONARIES).  Up to 15, numbered 1 to 15 (the number is
 * stored in the four high bits of an entry's flags; 0 is "none").  Each is
 * written once, into units of the data area, and never changed: a new one
 * takes the next number, and the old ones stay for the images that use them.
 */
#define PCS_MAX_DICTIONARIES	15
#define PCS_DICTIONARY_SHIFT	4
/* smallest and largest dictionary the segment takes, in bytes */
#define PCS_MIN_DICTIONARY_SIZE	256
#define PCS_MAX_DICTIONARY_SIZE	(64 * 1024)
/* smallest dictionary training makes (pcs_dict_capacity()) */
#define PCS_MIN_TRAINED_SIZE	(4 * 1024)

/*
 * One map entry per logical block; 32 fit in a 512-byte sector, so no entry
 * ever straddles one.  All zeros means the block has no storage and reads as
 * a zero page.
 */
typedef struct PcsMapEntry
{
	uint32		first_unit;		/* first unit of the image in the data area */
	uint16		stored;			/* bytes of the image (BLCKSZ when raw) */
	uint8		units;			/* units allocated, >= units stored */
	uint8		flags;			/* PCS_ENTRY_*, dictionary in the high bits */
	uint32		data_crc;		/* CRC32C of the stored bytes */
	uint32		entry_crc;		/* CRC32C of the above and the block number */
} PcsMapEntry;

StaticAssertDecl(sizeof(PcsMapEntry) == PCS_ENTRY_SIZE,
				 "a map entry must be PCS_ENTRY_SIZE bytes");

/*
 * Where dictionary n lies: written once, before the first image that uses
 * it and only after its bytes are durable, so a sound record always
 * describes bytes that are on disk.  All zeros while unused.
 */
typedef struct PcsDictRecord
{
	uint32		first_unit;		/* its first unit in the data area */
	uint32		bytes;			/* its length */
	uint32		data_crc;		/* CRC32C of its bytes */
	uint32		record_crc;		/* CRC32C of the above, its number and the
								 * segment */
} PcsDictRecord;

/* A shared 64-bit header word alone in its 512-byte sector */
typedef struct PcsSectorWord
{
	pg_atomic_uint64 word;
	pg_atomic_uint64 second;	/* used by the allocation sector only */
	char		pad[PCS_SECTOR_SIZE - 2 * sizeof(pg_atomic_uint64)];
} PcsSectorWord;

/*
 * The fields that identify a segment (PcsHeader up to and including
 * header_crc) take this many bytes at the start of sector 0
 */
#define PCS_IDENTITY_SIZE	28

/*
 * A second copy of those fields, with a check of its own, in the dictionary
 * sector (versions 3 and 4; README.pcs, "The identity's copy").  Sector 0
 * never changes after the segment is made, and a single damaged byte there
 * made the whole segment unreadable, in redo too; a sound copy restores it.
 * All zeros in segments made before the copy existed, until a server opens
 * them.
 */
typedef struct PcsIdentityCopy
{
	char		fields[PCS_IDENTITY_SIZE];
	uint32		copy_crc;		/* CRC32C of the fields and of "I" */
} PcsIdentityCopy;

/*
 * The dictionary sector (sector 4).  current names the dictionary new
 * images use and whether it is ready, or that a server generation is
 * installing the next one (pcs_dict_word(); pcs_dict.c, "Dictionaries").
 * It also holds the copy of the identity: the sector changes only when a
 * dictionary is installed, and its bytes never in the same store.
 */
typedef struct PcsDictSector
{
	pg_atomic_uint64 current;
	uint64		reserved;
	PcsDictRecord records[PCS_MAX_DICTIONARIES];	/* number n at n - 1 */
	PcsIdentityCopy identity;
	char		pad[PCS_SECTOR_SIZE - 16 -
					PCS_MAX_DICTIONARIES * sizeof(PcsDictRecord) -
					sizeof(PcsIdentityCopy)];
} PcsDictSector;

/*
 * The segment header.  The fields up to header_crc never change after the
 * segment is created and are covered by header_crc.  The shared words are
 * shared, in the file, by every process using the segment, and change by
 * single 8-byte writes under a lock (pcs_meta.c); each carries its
 * own check in its high half, so that a damaged word is recognised wherever
 * it is read (README.pcs, "The shared words"):
 *
 * alloc:	next free unit (low 32 bits) and CRC32C of it, of the server
 *			generation that handed it out and of the segment (high 32 bits).
 *			A word that fails its check for the current generation was
 *			written by an earlier server or is damaged; either way the next
 *			free unit is recomputed from the file (pcs_segment.c, pcs_allocate()).
 *
 * generation (version 3): the server generation that last recomputed the
 *			allocation word (low 32 bits) and its check (high 32 bits).  It
 *			tells a new server, whose free space must be found again from
 *			the map, from a damaged allocation word in a running one.
 *
 * nblocks:	complement of the segment's logical block count (low 32 bits)
 *			and CRC32C of the count, of the copy and of the segment (high 32
 *			bits).  Version 3 keeps two copies in two sectors, written one
 *			after the other; a reader takes the larger sound one, so one
 *			damaged copy costs nothing.  The complement makes a zeroed word
 *			invalid.
 *
 * Version 2 keeps alloc and one nblocks word at offsets 32 and 40, in the
 * sector that identifies the file; version 3 leaves those bytes zero and
 * gives each word a sector of its own, so that the words that change at
 * every allocation never share a sector with the identity of the file.
 * pcs_header_alloc() and pcs_header_nblocks() find them.  Every store to a
 * word is one 64-bit store, so whatever the kernel writes back, and
 * whatever a sector write leaves after a crash, holds a value and its own
 * check.
 */
typedef struct PcsHeader
{
	uint64		magic;
	uint32		version;
	uint8		algorithm;		/* PcsAlgorithm */
	int8		level;			/* zstd level */
	uint8		unit_shift;		/* log2 of the unit size */
	uint8		flags;			/* PCS_HEADER_* (version 3) */
	uint32		blcksz;			/* BLCKSZ of the build that made it */
	uint32		relseg_size;	/* RELSEG_SIZE likewise */
	uint32		header_crc;		/* CRC32C of the fields above */
	uint32		pad;
	pg_atomic_uint64 v2_alloc;	/* version 2's allocation word */
	pg_atomic_uint64 v2_nblocks;	/* version 2's block count word */
	char		pad_identity[PCS_SECTOR_SIZE - 48];
	PcsSectorWord alloc;		/* sector 1: allocation and generation */
	PcsSectorWord nblocks[2];	/* sectors 2 and 3: the block count */
	PcsDictSector dictionaries; /* sector 4 (PCS_HEADER_DICTIONARIES) */
	/* sectors 5 to 7: entries of blocks 0 to 95 (version 4), else zeros */
	PcsMapEntry entries[PCS_HEADER_ENTRIES];
} PcsHeader;

/* Copies of the block count a segment of this header keeps */
static inline int
pcs_header_nblocks_copies(const PcsHeader *header)
{
	return header->version == PCS_FORMAT_VERSION_2 ? 1 : 2;
}

/* The allocation word of a segment */
static inline pg_atomic_uint64 *
pcs_header_alloc(PcsHeader *header)
{
	return header->version == PCS_FORMAT_VERSION_2 ?
		&header->v2_alloc : &header->alloc.word;
}

/* Copy copy of the block count word of a segment */
static inline pg_atomic_uint64 *
pcs_header_nblocks(PcsHeader *header, int copy)
{
	Assert(copy >= 0 && copy < pcs_header_nblocks_copies(header));
	return header->version == PCS_FORMAT_VERSION_2 ?
		&header->v2_nblocks : &header->nblocks[copy].word;
}

/*
 * How many of a segment's first blocks have their map entries in its header:
 * none before version 4
 */
static inline BlockNumber
pcs_header_entries(const PcsHeader *header)
{
	return header->version >= PCS_FORMAT_VERSION_4 ? PCS_HEADER_ENTRIES : 0;
}

/* Does the map of a segment lie in pages found through its directory? */
static inline bool
pcs_header_has_directory(const PcsHeader *header)
{
	return header->version >= PCS_FORMAT_VERSION;
}

/* The file offset of a segment's data area */
static inline off_t
pcs_data_offset(const PcsHeader *header)
{
	return pcs_header_has_directory(header) ?
		PCS_V5_DATA_OFFSET : PCS_V4_DATA_OFFSET;
}

/*
 * The map entry of block segblock of a segment of version 2 to 4, in a copy
 * of its header and map that starts at the file's first byte.  Every access
 * to an entry goes through this, pcs_entry_offset() or
 * pcs_map_page_entry_offset(): where an entry lies depends on the segment's
 * format version.
 */
static inline PcsMapEntry *
pcs_entry_slot(PcsHeader *header, BlockNumber segblock)
{
	Assert(!pcs_header_has_directory(header));
	if (segblock < pcs_header_entries(header))
		return &header->entries[segblock];
	return (PcsMapEntry *) ((char *) header + PCS_V4_MAP_OFFSET) + segblock;
}

/*
 * The file offset of the map entry of block segblock of a segment, for the
 * blocks whose entries lie at a place fixed by the format: those in the
 * header, and in versions 2 to 4 every block's.  Version 5 finds the others
 * through its directory (pcs_map_page_entry_offset()).
 */
static inline off_t
pcs_entry_offset(const PcsHeader *header, BlockNumber segblock)
{
	if (segblock < pcs_header_entries(header))
		return (off_t) offsetof(PcsHeader, entries) +
			(off_t) segblock * PCS_ENTRY_SIZE;
	Assert(!pcs_header_has_directory(header));
	return PCS_V4_MAP_OFFSET + (off_t) segblock * PCS_ENTRY_SIZE;
}

/* The map page of version 5 that holds the entry of block segblock */
static inline int
pcs_map_page_of(BlockNumber segblock)
{
	return (int) (segblock / PCS_MAP_PAGE_ENTRIES);
}

/*
 * The directory of a version 5 segment: slot k locates map page k.  A slot
 * is one 64-bit word, stored by a single write: all zeros while the page
 * does not exist (its entries are all empty), else the complement of the
 * page's first unit (low 32 bits; the complement makes a zeroed word
 * invalid where unit 0 is meant) and a CRC32C of the unit, the page's
 * number and the segment (high 32 bits, pcs_directory_word()), so that a
 * damaged or torn slot is recognised, never followed.  The directory itself
 * lies in the data area, made with the first map page; the header's two
 * directory words (pcs_header_directory(), in the sectors of the block
 * count's two copies) locate it, in the same form.  Slots and directory
 * words change only from zeros to a place in this build: map pages and the
 * directory are never moved or freed (README.pcs, "The map directory", says
 * what a build that moves them must do).
 */
typedef struct PcsDirectory
{
	uint64		slots[PCS_DIRECTORY_SIZE / sizeof(uint64)];
} PcsDirectory;

/*
 * Copy copy of a version 5 segment's directory word: the second word of
 * the sector of the block count's copy copy, which only the allocation
 * sector used before (zeros in versions 2 to 4)
 */
static inline pg_atomic_uint64 *
pcs_header_directory(PcsHeader *header, int copy)
{
	Assert(copy == 0 || copy == 1);
	Assert(header->version >= PCS_FORMAT_VERSION);
	return &header->nblocks[copy].second;
}

/*
 * What a map page or a directory made again in place of one that could not
 * be located is filled with (pcs_map_page_make()): entries and slots of all
 * ones, which fail their checks and say why, so that the blocks whose
 * entries were lost read as damaged, never as zero pages, until each is
 * written again.  (A sound entry or slot of these bytes is told apart by its
 * check, which the callers look at first.)
 */
#define PCS_LOST_BYTE		0xFF
#define PCS_LOST_SLOT		(~UINT64CONST(0))

/* Units of the data area the directory takes, in a segment with units of 1 << shift */
static inline int
pcs_directory_units(int shift)
{
	return PCS_DIRECTORY_SIZE >> shift;
}

/* Units of the data area a map page takes, in a segment with units of 1 << shift */
static inline int
pcs_map_page_units(int shift)
{
	return PCS_MAP_PAGE_SIZE >> shift;
}

/* Byte offset of a unit of a segment's data area in the file */
static inline off_t
pcs_unit_offset(const PcsHeader *header, uint32 unit)
{
	return pcs_data_offset(header) + ((off_t) unit << header->unit_shift);
}

/*
 * The file offset of the entry of block segblock in version 5's map page
 * that starts at unit page_unit
 */
static inline off_t
pcs_map_page_entry_offset(const PcsHeader *header, uint32 page_unit,
						  BlockNumber segblock)
{
	Assert(pcs_header_has_directory(header));
	return pcs_unit_offset(header, page_unit) +
		(off_t) (segblock % PCS_MAP_PAGE_ENTRIES) * PCS_ENTRY_SIZE;
}

/* Map entry flags */
#define PCS_ENTRY_ALLOCATED		0x01	/* the block has units */
#define PCS_ENTRY_RAW			0x02	/* stored uncompressed */
#define PCS_ENTRY_SHUFFLED		0x04	/* compressed after the page shuffle */
#define PCS_ENTRY_SPLIT			0x08	/* compressed after the index split */
#define PCS_ENTRY_KNOWN_FLAGS	(PCS_ENTRY_ALLOCATED | PCS_ENTRY_RAW | \
								 PCS_ENTRY_SHUFFLED | PCS_ENTRY_SPLIT)
/*
 * The high four bits of the flags byte hold the number of the compression
 * dictionary of a compressed image (0: none), in segments whose header has
 * PCS_HEADER_DICTIONARIES; anywhere else they are damage.
 */
#define PCS_ENTRY_DICTIONARY	0xF0

/* Is a dictionary record unused (all zeros)? */
static inline bool
pcs_dict_record_is_unused(const PcsDictRecord *record)
{
	return record->first_unit == 0 && record->bytes == 0 &&
		record->data_crc == 0 && record->record_crc == 0;
}

/* The dictionary number of an entry's flags */
static inline int
pcs_entry_dictionary(uint8 flags)
{
	return (flags & PCS_ENTRY_DICTIONARY) >> PCS_DICTIONARY_SHIFT;
}

StaticAssertDecl(offsetof(PcsHeader, v2_alloc) == 32 &&
				 offsetof(PcsHeader, v2_nblocks) == 40 &&
				 offsetof(PcsHeader, alloc) == PCS_SECTOR_SIZE &&
				 offsetof(PcsHeader, nblocks) == 2 * PCS_SECTOR_SIZE &&
				 offsetof(PcsHeader, dictionaries) == 4 * PCS_SECTOR_SIZE &&
				 offsetof(PcsHeader, entries) == 5 * PCS_SECTOR_SIZE &&
				 offsetof(PcsHeader, pad) == PCS_IDENTITY_SIZE &&
				 offsetof(PcsHeader, dictionaries.identity) == 2304 &&
				 sizeof(PcsHeader) == PCS_HEADER_SIZE,
				 "frontend and backend must agree on the header layout");
StaticAssertDecl(sizeof(PcsHeader) <= PCS_HEADER_SIZE,
				 "the header must fit in its block");
StaticAssertDecl(PCS_MAX_UNITS <= PG_UINT8_MAX,
				 "units allocated must fit in the entry");
StaticAssertDecl(PCS_UNIT_SHIFT < PCS_V2_UNIT_SHIFT,
				 "version 3 units are the smaller ones");

/* Is the entry empty (a block without storage)? */
static inline bool
pcs_entry_is_empty(const PcsMapEntry *entry)
{
	return entry->flags == 0 && entry->first_unit == 0 &&
		entry->stored == 0 && entry->units == 0 &&
		entry->data_crc == 0 && entry->entry_crc == 0;
}

/* Units of 1 << shift bytes needed to hold len bytes */
static inline int
pcs_units_for(int len, int shift)
{
	return (len + (1 << shift) - 1) >> shift;
}

/* Units of 1 << shift bytes a raw block takes */
static inline int
pcs_raw_units(int shift)
{
	return BLCKSZ >> shift;
}

/*
 * Do these first bytes of a file start a compressed segment?  Only the magic
 * is compared: callers that then read the segment check its header.
 */
static inline bool
pcs_is_segment_start(const void *bytes, size_t len)
{
	uint64		magic;

	if (len < sizeof(magic))
		return false;
	memcpy(&magic, bytes, sizeof(magic));
	return magic == PCS_MAGIC;
}

/*
 * Where the part of a compressed segment that a copy may leave sparse ends,
 * judged by the file's first len bytes: versions 2 to 4 keep a sparse map
 * of 2 MB below their data area; version 5 has nothing sparse (its data
 * area follows the header).  First bytes too few to tell give version 5's
 * end, the smaller: a copy then keeps bytes it could have left out, never
 * the other way round.
 */
static inline off_t
pcs_copy_sparse_end(const char *bytes, size_t len)
{
	uint32		version;

	if (len < offsetof(PcsHeader, version) + sizeof(uint32))
		return PCS_HEADER_SIZE;
	memcpy(&version, bytes + offsetof(PcsHeader, version), sizeof(uint32));
	return version >= PCS_FORMAT_VERSION_2 && version <= PCS_FORMAT_VERSION_4 ?
		PCS_V4_DATA_OFFSET : PCS_HEADER_SIZE;
}

/*
 * May a copy of a compressed segment leave these len bytes at offset as a
 * hole?  Only zeros between the header and sparse_end
 * (pcs_copy_sparse_end()): the storage manager leaves the map of versions 2
 * to 4 sparse (its pages get storage as they are written), and a copy that
 * fills it takes 2 MB per segment.  The data area is allocated ahead on
 * purpose, so copies keep it.
 */
static inline bool
pcs_copy_can_skip(const char *buf, off_t offset, size_t len, off_t sparse_end)
{
	if (offset < PCS_HEADER_SIZE || offset + (off_t) len > sparse_end)
		return false;
	for (size_t i = 0; i < len; i++)
	{
		if (buf[i] != 0)
			return false;
	}
	return true;
}

/* Writes len bytes of data at offset of a copy, for pcs_copy_sparse() */
typedef void (*PcsWriteAt) (void *arg, const char *data, int len,
							off_t offset);

/*
 * Write the len bytes of a compressed segment that lie at offset into its
 * copy at the same offset, through write_at, one call for each run of bytes
 * to keep: the 4 kB pages of zeros below sparse_end (pcs_copy_can_skip())
 * are left out, so that they stay holes.  The backend's copies and the
 * frontend programs' share it, each with its own way to write and fail.
 * (Inline: frontend programs link none of the format layer.)
 */
static inline void
pcs_copy_sparse(const char *data, int len, off_t offset, off_t sparse_end,
				PcsWriteAt write_at, void *arg)
{
	int			run = 0;		/* start of the bytes still to write */
	int			done = 0;

	while (done < len)
	{
		off_t		pos = offset + done;
		int			piece = Min(len - done,
								PCS_HEADER_SIZE - (int) (pos % PCS_HEADER_SIZE));

		if (pcs_copy_can_skip(data + done, pos, piece, sparse_end))
		{
			if (done > run)
				write_at(arg, data + run, done - run, offset + run);
			run = done + piece;
		}
		done += piece;
	}
	if (len > run)
		write_at(arg, data + run, len - run, offset + run);
}

/*
 * What is wrong with bytes read from a compressed segment, as the checks of
 * the format layer say; pcs_problem_message() gives the sentence.
 */
typedef enum PcsProblem
{
	PCS_SOUND = 0,				/* nothing is wrong */
	PCS_HEADER_BAD_MAGIC,
	PCS_HEADER_BAD_CRC,
	PCS_HEADER_BAD_VERSION,
	PCS_HEADER_BAD_ALGORITHM,
	PCS_HEADER_BAD_LEVEL,
	PCS_HEADER_BAD_FLAGS,
	PCS_HEADER_BAD_SIZES,
	PCS_NBLOCKS_BAD_CRC,
	PCS_NBLOCKS_OUT_OF_RANGE,
	PCS_GENERATION_BAD_CRC,
	PCS_ENTRY_BAD_CRC,
	PCS_ENTRY_BAD_FLAGS,
	PCS_ENTRY_BAD_LENGTH,
	PCS_ENTRY_RAW_NOT_BLOCK,
	PCS_ENTRY_RAW_SHUFFLED,
	PCS_ENTRY_SHUFFLED_AND_SPLIT,
	PCS_ENTRY_BAD_UNITS,
	PCS_ENTRY_PAST_DATA,
	PCS_IMAGE_CUT_SHORT,
	PCS_IMAGE_BAD_CRC,
	PCS_IMAGE_NO_MEMORY,
	PCS_IMAGE_ZSTD_FAILED,
	PCS_IMAGE_LZ4_FAILED,
	PCS_IMAGE_WRONG_LENGTH,
	PCS_IMAGE_NO_ZSTD,
	PCS_IMAGE_NO_LZ4,
	PCS_IMAGE_UNKNOWN_ALGORITHM,
	PCS_IMAGE_RAW_NOT_BLOCK,
	PCS_IMAGE_SHUFFLED_AND_SPLIT,
	PCS_IMAGE_NO_LAYOUT,
	PCS_IMAGE_NO_INDEX_TUPLES,
	PCS_IMAGE_CANNOT_JOIN,
	PCS_IMAGE_NO_DICTIONARY,
	PCS_IMAGE_DICTIONARY_FAILED,
	PCS_DICTIONARY_BAD_RECORD,
	PCS_DICTIONARY_BAD_CRC,
	PCS_DIRECTORY_BAD_SLOT,
	PCS_DIRECTORY_BAD_UNIT,
	PCS_DIRECTORY_BAD_LOCATION,
	PCS_DIRECTORY_SLOT_LOST,
	PCS_ENTRY_LOST,
} PcsProblem;

extern const char *pcs_algorithm_name(PcsAlgorithm algorithm);
extern const char *pcs_problem_message(PcsProblem problem);
extern bool pcs_algorithm_from_name(const char *name, PcsAlgorithm *algorithm);

extern void pcs_header_init(PcsHeader *header, PcsAlgorithm algorithm,
							int level, BlockNumber segno);
extern PcsProblem pcs_header_check(const PcsHeader *header);
extern bool pcs_identity_copy_sound(const PcsHeader *header);
extern void pcs_identity_copy_set(PcsHeader *header);
extern bool pcs_identity_restore(PcsHeader *header);
extern uint32 pcs_header_other_version(const PcsHeader *header);

extern uint64 pcs_nblocks_word(const PcsHeader *header, BlockNumber segno,
							   int copy, BlockNumber nblocks);
extern PcsProblem pcs_nblocks_decode(const PcsHeader *header,
									 BlockNumber segno, int copy, uint64 word,
									 BlockNumber *nblocks);
extern PcsProblem pcs_nblocks_read(PcsHeader *header, BlockNumber segno,
								   BlockNumber *nblocks, int *sound_copies);
extern uint64 pcs_generation_word(const PcsHeader *header, BlockNumber segno,
								  uint32 generation);
extern bool pcs_generation_decode(const PcsHeader *header, BlockNumber segno,
								  uint64 word, uint32 *generation);
extern uint64 pcs_alloc_word(const PcsHeader *header, BlockNumber segno,
							 uint32 generation, uint32 next_unit);
extern bool pcs_alloc_decode(const PcsHeader *header, BlockNumber segno,
							 uint32 generation, uint64 word,
							 uint32 *next_unit);

extern void pcs_entry_set(PcsMapEntry *entry, BlockNumber segblock,
						  uint32 first_unit, int stored, int units,
						  uint8 image_flags, uint32 data_crc, int shift);
extern PcsProblem pcs_entry_check(const PcsMapEntry *entry,
								  BlockNumber segblock, uint32 unit_limit,
								  int shift);

/* the state of the dictionary sector's current word */
typedef enum PcsDictState
{
	PCS_DICT_NONE,				/* the word is zero, damaged, or a void
								 * installation: no dictionary for new images */
	PCS_DICT_READY,				/* dictionary *number serves new images */
	PCS_DICT_INSTALLING,		/* this generation installs *number */
} PcsDictState;

extern uint64 pcs_dict_word(const PcsHeader *header, BlockNumber segno,
							PcsDictState state, int number,
							uint32 generation);
extern PcsDictState pcs_dict_decode(const PcsHeader *header,
									BlockNumber segno, uint64 word,
									uint32 generation, int *number);
extern void pcs_dict_record_set(const PcsHeader *header, BlockNumber segno,
								int number, PcsDictRecord *record,
								uint32 first_unit, uint32 bytes,
								uint32 data_crc);
extern PcsProblem pcs_dict_record_check(const PcsHeader *header,
										BlockNumber segno, int number,
										const PcsDictRecord *record,
										int shift);
extern int	pcs_units_to_allocate(int stored, bool grown, int shift);
extern uint64 pcs_directory_word(const PcsHeader *header, BlockNumber segno,
								 int page, uint32 unit);
extern uint64 pcs_directory_location_word(const PcsHeader *header,
										  BlockNumber segno, int copy,
										  uint32 unit);
extern PcsProblem pcs_directory_location_decode(const PcsHeader *header,
												BlockNumber segno, int copy,
												uint64 word, bool *present,
												uint32 *unit);
extern PcsProblem pcs_directory_decode(const PcsHeader *header,
									   BlockNumber segno, int page,
									   uint64 word, bool *present,
									   uint32 *unit);

/*
 * What the codec has learnt about the pages of one segment, in one process:
 * whether the transform of pcs_page_shuffle() pays on them
 * (pcs_compress_page()).  Zeroed to begin with.
 */
typedef struct PcsCodecState
{
	uint32		pages;			/* pages compressed with this state */
	int32		gain;			/* bytes of units the transform saved on pages
								 * tried both ways, decayed (PCS_GAIN_DECAY) */
} PcsCodecState;

/*
 * The layout of index pages that the index split relies on
 * (pcs_transform.c): values of access/itup.h and access/nbtree.h, fixed
 * here because split images depend on them, and checked against those
 * headers by static assertions in the backend build.
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

/*
 * A compression dictionary prepared for use (pcs_codec.c): made from its
 * bytes once per process and segment, not once per page.
 */
typedef struct PcsDict PcsDict;

/*
 * Where a prepared dictionary's memory comes from, when not from malloc
 * (the backend's: a memory context, pcs_dict.c); as zstd's custom
 * allocator, alloc returns NULL when memory runs out
 */
typedef struct PcsDictMemory
{
	void	   *(*alloc) (void *opaque, size_t size);
	void		(*release) (void *opaque, void *address);
	void	   *opaque;
} PcsDictMemory;

/* the page transforms (pcs_transform.c) and the estimate (pcs_estimate.c) */
extern bool pcs_page_incompressible(const char *page, char *scratch);
extern uint8 pcs_page_shuffle(const char *page, char *out);
extern PcsProblem pcs_page_unshuffle(const char *in, char *page, uint8 how);
extern int	pcs_compress_page(PcsAlgorithm algorithm, int level,
							  const char *page, char *dest, int capacity,
							  uint8 *image_flags, PcsCodecState *state,
							  const PcsDict *dict, int dict_number);
extern PcsProblem pcs_decompress_page(PcsAlgorithm algorithm,
									  const char *src, int srclen,
									  char *page);
extern PcsProblem pcs_decode_image(PcsAlgorithm algorithm, uint8 flags,
								   const char *image, int len, char *page,
								   const PcsDict *dict);
extern PcsDict *pcs_dict_prepare(PcsAlgorithm algorithm, int level,
								 const char *bytes, int len);
extern PcsDict *pcs_dict_prepare_for(PcsAlgorithm algorithm, int level,
									 const char *bytes, int len,
									 bool encode, bool decode,
									 const PcsDictMemory *mem);
extern void pcs_dict_free(PcsDict *dict);
extern size_t pcs_dict_place_size(void);
extern PcsDict *pcs_dict_place(PcsAlgorithm algorithm, const char *bytes,
							   int len, void *space, size_t size);
extern int	pcs_dict_train(const char *pages, int npages, char *dict,
						   int capacity);
extern int	pcs_dict_capacity(int npages);
extern int64 pcs_stored_bytes(PcsAlgorithm algorithm, int level, int shift,
							  const char *pages, int npages,
							  const PcsDict *dict);
extern uint32 pcs_data_crc(const char *data, int len);
extern bool pcs_segment0_is_blank(int fd, off_t size);

/*
 * The next range [*data, *hole) of the file open as fd, at or after pos and
 * below end, that may hold data; false if there is none.  Holes are found
 * with SEEK_DATA and SEEK_HOLE, so that the holes of a sparse file (a small
 * segment's map) are not read; where those are not supported, the rest of
 * the file is one range.  (Inline: frontend programs that copy segments
 * link none of the format layer.)
 */
static inline bool
pcs_next_data_range(int fd, off_t pos, off_t end, off_t *data, off_t *hole)
{
	*data = pos;
	*hole = end;
#if defined(SEEK_DATA) && defined(SEEK_HOLE)
	{
		off_t		d = lseek(fd, pos, SEEK_DATA);

		if (d < 0 && errno == ENXIO)
			return false;		/* nothing but holes up to the end of file */
		if (d >= 0)
		{
			off_t		h = lseek(fd, d, SEEK_HOLE);

			*data = d;
			*hole = (h < 0 || h > end) ? end : h;
		}
	}
#endif
	return *data < end;
}

#endif							/* PCS_FORMAT_H */
