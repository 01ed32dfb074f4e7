/*-------------------------------------------------------------------------
 *
 * pcs_format_test.c
 *	  Unit tests of the page-compressed storage format layer (pcs_format.c
 *	  and its siblings): header and map-entry validation, the layout of
 *	  each format version and format 5's map directory, what copies may
 *	  leave sparse, the page codec, allocation sizes, the
 *	  incompressibility estimate.
 *
 * Built and run by test/pcs/001_pcs_format_unit.pl against the installed
 * server headers; prints TAP.  The format layer does no I/O and raises no
 * errors, so it can be exercised outside a server.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/unit/pcs_format_test.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef USE_LZ4
#include <lz4.h>
#endif
#ifdef USE_ZSTD
#include <zstd.h>
#endif

#include "port/pg_crc32c.h"
#include "port/simd.h"
#include "storage/bufpage.h"
#include "storage/pcs_format.h"

static int	ntests = 0;
static int	nfailed = 0;

/* Report one TAP result */
static void
check(bool ok, const char *what)
{
	ntests++;
	if (!ok)
		nfailed++;
	printf("%sok %d - %s\n", ok ? "" : "not ", ntests, what);
}

/* Fill a page with text-like rows, as a heap page of sysbench data looks */
static void
make_text_page(char *page, unsigned seed)
{
	const char *words[] = {"alpha", "bravo", "charlie", "delta", "echo",
	"foxtrot", "golf", "hotel", "india", "juliet"};
	int			off = 0;

	memset(page, 0, BLCKSZ);
	while (off < BLCKSZ - 16)
	{
		const char *w = words[(seed = seed * 1103515245 + 12345) >> 16 & 7];
		int			n = strlen(w);

		if (off + n + 1 >= BLCKSZ)
			break;
		memcpy(page + off, w, n);
		off += n;
		page[off++] = ' ';
	}
}

/* The next pseudo-random number of a test's private sequence */
static unsigned
next_rand(unsigned *seed)
{
	*seed = *seed * 1103515245 + 12345;
	return *seed >> 16;
}

/* Fill a page with pseudo-random bytes, which do not compress */
static void
make_random_page(char *page, unsigned seed)
{
	for (int i = 0; i < BLCKSZ; i++)
	{
		seed = seed * 1103515245 + 12345;
		page[i] = (char) (seed >> 16);
	}
}

/* Every problem has a sentence: capitalized, ending in a period */
static void
test_problem_messages(void)
{
	bool		ok = true;

	for (int p = PCS_SOUND + 1; p <= PCS_DIRECTORY_BAD_LOCATION; p++)
	{
		const char *m = pcs_problem_message((PcsProblem) p);

		if (m == NULL || m[0] < 'A' || m[0] > 'Z' || m[strlen(m) - 1] != '.')
			ok = false;
	}
	check(ok, "every problem of the format layer has a sentence to report");
}

/* Header: a fresh header passes, any change to a fixed field is caught */
static void
test_header(void)
{
	PcsHeader	h;
	bool		all_caught = true;

	pcs_header_init(&h, PCS_ALGO_ZSTD, 1, 0);
	check(pcs_header_check(&h) == PCS_SOUND, "a new header passes its check");
	check(pcs_header_other_version(&h) == 0, "a new header is of this version");

	for (size_t i = 0; i < offsetof(PcsHeader, header_crc) + sizeof(uint32); i++)
	{
		PcsHeader	bad = h;

		((unsigned char *) &bad)[i] ^= 0x10;
		if (pcs_header_check(&bad) == PCS_SOUND)
			all_caught = false;
	}
	check(all_caught, "a flipped bit in any fixed header byte is caught");

	check(memcmp(&h, "PCS1\377\377\377\177", 8) == 0,
		  "the file starts with the documented magic bytes");
}

/* An intact header of the previous format version is recognised as such */
static void
test_other_version(void)
{
	PcsHeader	h;
	pg_crc32c	crc;

	pcs_header_init(&h, PCS_ALGO_LZ4, 0, 0);
	h.version = 1;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, &h, offsetof(PcsHeader, header_crc));
	FIN_CRC32C(crc);
	h.header_crc = crc;
	check(pcs_header_check(&h) != PCS_SOUND, "a header of format version 1 is refused");
	check(pcs_header_other_version(&h) == 1,
		  "and recognised as an intact header of version 1");
	h.level ^= 1;
	check(pcs_header_other_version(&h) == 0,
		  "a damaged header is not taken for another version");
}

/* Does every change of one byte of the word at offset, to any value, fail? */
static bool
every_byte_change_caught(const PcsHeader *h, size_t offset,
						 bool (*sound) (const PcsHeader *))
{
	for (size_t i = offset; i < offset + sizeof(uint64); i++)
	{
		for (int v = 1; v < 256; v++)
		{
			PcsHeader	bad = *h;

			((unsigned char *) &bad)[i] ^= v;
			if (sound(&bad))
				return false;
		}
	}
	return true;
}

/* Is copy 0 of the block count word of h sound, as segment 5? */
static bool
nblocks_sound(const PcsHeader *h)
{
	BlockNumber n;

	return pcs_nblocks_decode(h, 5, 0, pg_atomic_read_u64(unconstify(pg_atomic_uint64 *, &h->nblocks[0].word)),
							  &n) == PCS_SOUND;
}

/* Set the fixed fields' CRC of a header whose fields a test changed */
static void
reseal_header(PcsHeader *h)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, h, offsetof(PcsHeader, header_crc));
	FIN_CRC32C(crc);
	h->header_crc = crc;
}

/* The block count word: round trip, and every kind of damage is caught */
static void
test_nblocks_word(void)
{
	PcsHeader	h;
	PcsHeader	other;
	BlockNumber n = 12345;
	bool		round_trips = true;
	uint64		word;

	pcs_header_init(&h, PCS_ALGO_ZSTD, 1, 5);
	check(pcs_nblocks_decode(&h, 5, 0, pg_atomic_read_u64(&h.nblocks[0].word), &n) == PCS_SOUND &&
		  n == 0 &&
		  pcs_nblocks_decode(&h, 5, 1, pg_atomic_read_u64(&h.nblocks[1].word), &n) == PCS_SOUND &&
		  n == 0, "a new segment has two sound block counts of 0");

	for (BlockNumber b = 0; b <= RELSEG_SIZE; b += 997)
	{
		BlockNumber got = InvalidBlockNumber;

		for (int copy = 0; copy < 2; copy++)
		{
			if (pcs_nblocks_decode(&h, 5, copy, pcs_nblocks_word(&h, 5, copy, b),
								   &got) != PCS_SOUND || got != b)
				round_trips = false;
		}
	}
	if (pcs_nblocks_decode(&h, 5, 0, pcs_nblocks_word(&h, 5, 0, RELSEG_SIZE), &n) != PCS_SOUND ||
		n != RELSEG_SIZE)
		round_trips = false;
	check(round_trips, "block counts up to RELSEG_SIZE round-trip through the word");

	pg_atomic_write_u64(&h.nblocks[0].word, pcs_nblocks_word(&h, 5, 0, 4242));
	check(every_byte_change_caught(&h, offsetof(PcsHeader, nblocks), nblocks_sound),
		  "every change of one byte of the block count word is caught");
	check(pcs_nblocks_decode(&h, 5, 0, 0, &n) != PCS_SOUND, "a zeroed block count word is caught");
	check(pcs_nblocks_decode(&h, 6, 0, pg_atomic_read_u64(&h.nblocks[0].word), &n) != PCS_SOUND,
		  "the word of another segment of the fork is caught");
	check(pcs_nblocks_decode(&h, 5, 1, pg_atomic_read_u64(&h.nblocks[0].word), &n) != PCS_SOUND,
		  "the first copy in the place of the second is caught");
	pcs_header_init(&other, PCS_ALGO_LZ4, 0, 5);
	check(pcs_nblocks_decode(&other, 5, 0, pg_atomic_read_u64(&h.nblocks[0].word), &n) != PCS_SOUND,
		  "the word of a segment with other settings is caught");
	check(pcs_nblocks_decode(&h, 5, 0, pcs_alloc_word(&h, 5, 0, ~(uint32) 4242), &n) != PCS_SOUND,
		  "an allocation word in the block count's place is caught");
	word = pcs_nblocks_word(&h, 5, 0, RELSEG_SIZE + 1);
	check(pcs_nblocks_decode(&h, 5, 0, word, &n) != PCS_SOUND,
		  "a block count past RELSEG_SIZE is caught, even with a matching check");
}

/* The two copies of the block count: one damaged copy costs nothing */
static void
test_nblocks_copies(void)
{
	PcsHeader	h;
	BlockNumber n = 0;
	int			sound = 0;

	pcs_header_init(&h, PCS_ALGO_ZSTD, 3, 5);
	check(pcs_header_nblocks_copies(&h) == 2 &&
		  offsetof(PcsHeader, alloc) / PCS_SECTOR_SIZE == 1 &&
		  offsetof(PcsHeader, nblocks[0]) / PCS_SECTOR_SIZE == 2 &&
		  offsetof(PcsHeader, nblocks[1]) / PCS_SECTOR_SIZE == 3,
		  "each shared word of a new header has a sector of its own");
	pg_atomic_write_u64(&h.nblocks[0].word, pcs_nblocks_word(&h, 5, 0, 900));
	pg_atomic_write_u64(&h.nblocks[1].word, pcs_nblocks_word(&h, 5, 1, 900));
	check(pcs_nblocks_read(&h, 5, &n, &sound) == PCS_SOUND && n == 900 && sound == 2,
		  "two equal copies give the count");
	pg_atomic_write_u64(&h.nblocks[1].word, pg_atomic_read_u64(&h.nblocks[1].word) ^ 0x100);
	check(pcs_nblocks_read(&h, 5, &n, &sound) == PCS_SOUND && n == 900 && sound == 1,
		  "a damaged second copy leaves the first, and says so");
	pg_atomic_write_u64(&h.nblocks[1].word, pcs_nblocks_word(&h, 5, 1, 900));
	pg_atomic_write_u64(&h.nblocks[0].word, 0);
	check(pcs_nblocks_read(&h, 5, &n, &sound) == PCS_SOUND && n == 900 && sound == 1,
		  "a zeroed first copy leaves the second");
	pg_atomic_write_u64(&h.nblocks[0].word, pcs_nblocks_word(&h, 5, 0, 901));
	check(pcs_nblocks_read(&h, 5, &n, &sound) == PCS_SOUND && n == 901 && sound == 2,
		  "of two sound copies that differ, the larger counts (a raise in progress)");
	pg_atomic_write_u64(&h.nblocks[1].word, 0);
	pg_atomic_write_u64(&h.nblocks[0].word, 1);
	check(pcs_nblocks_read(&h, 5, &n, &sound) == PCS_NBLOCKS_BAD_CRC && sound == 0,
		  "two damaged copies are a problem");
}

/* The generation word: round trip, damage and a zero word fail */
static void
test_generation_word(void)
{
	PcsHeader	h;
	uint32		g = 0;
	uint64		word;

	pcs_header_init(&h, PCS_ALGO_ZSTD, 1, 5);
	check(!pcs_generation_decode(&h, 5, pg_atomic_read_u64(&h.alloc.second), &g),
		  "a new segment's generation word names no generation");
	word = pcs_generation_word(&h, 5, 0x12345678);
	check(pcs_generation_decode(&h, 5, word, &g) && g == 0x12345678,
		  "a generation round-trips through its word");
	check(!pcs_generation_decode(&h, 5, word ^ 0x10000, &g) &&
		  !pcs_generation_decode(&h, 5, word ^ 1, &g) &&
		  !pcs_generation_decode(&h, 4, word, &g),
		  "a damaged generation word, or another segment's, fails the check");
}

/* Format 2 segments stay readable: their layout, their units */
static void
test_version_2(void)
{
	PcsHeader	h;
	BlockNumber n = 0;
	int			sound = 0;
	uint32		next = 0;
	PcsMapEntry e;

	pcs_header_init(&h, PCS_ALGO_ZSTD, 1, 0);
	memset(&h.alloc, 0, sizeof(h.alloc));
	memset(&h.nblocks, 0, sizeof(h.nblocks));
	h.version = PCS_FORMAT_VERSION_2;
	h.unit_shift = PCS_V2_UNIT_SHIFT;
	reseal_header(&h);
	check(pcs_header_check(&h) == PCS_HEADER_BAD_FLAGS,
		  "a format 2 header with a flag is refused (format 2 defines none)");
	h.flags = 0;
	reseal_header(&h);
	check(pcs_header_check(&h) == PCS_SOUND && pcs_header_other_version(&h) == 0,
		  "a format 2 header with 512-byte units is read");
	check(pcs_header_nblocks_copies(&h) == 1 &&
		  pcs_header_nblocks(&h, 0) == &h.v2_nblocks &&
		  pcs_header_alloc(&h) == &h.v2_alloc,
		  "its shared words are found in its first sector");
	pg_atomic_write_u64(&h.v2_nblocks, pcs_nblocks_word(&h, 0, 0, 77));
	pg_atomic_write_u64(&h.v2_alloc, pcs_alloc_word(&h, 0, 9, 400));
	check(pcs_nblocks_read(&h, 0, &n, &sound) == PCS_SOUND && n == 77 && sound == 1 &&
		  pcs_alloc_decode(&h, 0, 9, pg_atomic_read_u64(pcs_header_alloc(&h)), &next) &&
		  next == 400,
		  "its block count and allocation word are read");
	pcs_entry_set(&e, 3, 10, 1500, 3, 0, 1, PCS_V2_UNIT_SHIFT);
	check(pcs_entry_check(&e, 3, 13, PCS_V2_UNIT_SHIFT) == PCS_SOUND &&
		  pcs_entry_check(&e, 3, 13, PCS_UNIT_SHIFT) == PCS_ENTRY_BAD_UNITS,
		  "an entry is judged by the units of its segment");

	h.unit_shift = PCS_UNIT_SHIFT;
	reseal_header(&h);
	check(pcs_header_check(&h) == PCS_HEADER_BAD_SIZES,
		  "a format 2 header with format 3's units is refused");
	h.version = PCS_FORMAT_VERSION;
	h.unit_shift = PCS_V2_UNIT_SHIFT;
	reseal_header(&h);
	check(pcs_header_check(&h) == PCS_HEADER_BAD_SIZES,
		  "a format 3 header with format 2's units is refused");
	h.version = PCS_FORMAT_VERSION + 1;
	h.unit_shift = PCS_UNIT_SHIFT;
	reseal_header(&h);
	check(pcs_header_check(&h) == PCS_HEADER_BAD_VERSION &&
		  pcs_header_other_version(&h) == PCS_FORMAT_VERSION + 1,
		  "an intact header of a later version is refused as such");
}

/*
 * Where entries lie: in the header's sectors 5 to 7 for a segment's first
 * blocks from version 4 on; the others in map pages found through the
 * directory in version 5, in the map at its fixed place in versions 2 to 4
 */
static void
test_entry_place(void)
{
	PcsHeader	h;

	pcs_header_init(&h, PCS_ALGO_ZSTD, 1, 0);
	check(h.version == PCS_FORMAT_VERSION && PCS_FORMAT_VERSION == 5 &&
		  pcs_header_check(&h) == PCS_SOUND,
		  "new headers are of version 5");
	check(pcs_header_entries(&h) == 96 && PCS_HEADER_ENTRIES == 96 &&
		  pcs_header_has_directory(&h),
		  "version 5 keeps the entries of 96 blocks in its header, the rest through its directory");
	check(pcs_entry_offset(&h, 0) == 5 * PCS_SECTOR_SIZE &&
		  pcs_entry_offset(&h, 95) + PCS_ENTRY_SIZE == PCS_HEADER_SIZE,
		  "version 5: block 0 to 95 in sectors 5 to 7");
	{
		bool		empty = true;

		for (int i = 0; i < PCS_HEADER_ENTRIES; i++)
			empty &= pcs_entry_is_empty(&h.entries[i]);
		check(empty, "a new header's entries are empty");
	}

	h.version = PCS_FORMAT_VERSION_4;
	reseal_header(&h);
	check(pcs_header_check(&h) == PCS_SOUND && pcs_header_other_version(&h) == 0 &&
		  pcs_header_entries(&h) == 96 && !pcs_header_has_directory(&h),
		  "a version 4 header is read, with the entries of 96 blocks in it and no directory");
	check(pcs_entry_offset(&h, 0) == 5 * PCS_SECTOR_SIZE &&
		  pcs_entry_offset(&h, 95) + PCS_ENTRY_SIZE == PCS_HEADER_SIZE &&
		  pcs_entry_offset(&h, 96) == PCS_V4_MAP_OFFSET + 96 * PCS_ENTRY_SIZE &&
		  pcs_entry_offset(&h, RELSEG_SIZE - 1) + PCS_ENTRY_SIZE == PCS_V4_DATA_OFFSET,
		  "version 4: block 0 to 95 in sectors 5 to 7, block 96 on in the map, in place");
	check((char *) pcs_entry_slot(&h, 0) - (char *) &h == pcs_entry_offset(&h, 0) &&
		  (char *) pcs_entry_slot(&h, 95) - (char *) &h == pcs_entry_offset(&h, 95) &&
		  (char *) pcs_entry_slot(&h, 96) - (char *) &h == pcs_entry_offset(&h, 96),
		  "version 4: an entry's slot in a mapping lies at its file offset");

	h.version = PCS_FORMAT_VERSION_3;
	reseal_header(&h);
	check(pcs_header_check(&h) == PCS_SOUND && pcs_header_other_version(&h) == 0 &&
		  pcs_header_entries(&h) == 0 && !pcs_header_has_directory(&h) &&
		  pcs_entry_offset(&h, 0) == PCS_V4_MAP_OFFSET &&
		  pcs_entry_offset(&h, 95) == PCS_V4_MAP_OFFSET + 95 * PCS_ENTRY_SIZE,
		  "a version 3 header is read, with every entry in the map");
	h.version = PCS_FORMAT_VERSION_2;
	h.unit_shift = PCS_V2_UNIT_SHIFT;
	h.flags = 0;
	reseal_header(&h);
	check(pcs_header_check(&h) == PCS_SOUND && pcs_header_entries(&h) == 0 &&
		  !pcs_header_has_directory(&h),
		  "so is a version 2 header");
}

/*
 * The file's layout in each version: where the data area, a unit and a map
 * page's entries lie
 */
static void
test_layout(void)
{
	PcsHeader	h5;
	PcsHeader	h;

	check(PCS_V5_DATA_OFFSET == PCS_HEADER_SIZE && PCS_V5_DATA_OFFSET == 4096,
		  "version 5's data area follows the header at once, at 4 kB");
	check(PCS_DIRECTORY_SIZE % 4096 == 0 &&
		  PCS_DIRECTORY_SIZE >= PCS_MAP_PAGES * sizeof(uint64) &&
		  sizeof(PcsDirectory) == PCS_DIRECTORY_SIZE &&
		  pcs_directory_units(PCS_UNIT_SHIFT) * PCS_UNIT_SIZE ==
		  PCS_DIRECTORY_SIZE,
		  "version 5's directory takes whole 4 kB pages of units of the data area");
	check(PCS_MAP_PAGE_ENTRIES == 256 &&
		  (int64) PCS_MAP_PAGES * PCS_MAP_PAGE_ENTRIES >= RELSEG_SIZE &&
		  (int64) (PCS_MAP_PAGES - 1) * PCS_MAP_PAGE_ENTRIES < RELSEG_SIZE,
		  "a map page holds 256 entries, and there are just enough for a segment");
	if (RELSEG_SIZE == 131072 && BLCKSZ == 8192)
		check(PCS_MAP_PAGES == 512 && PCS_DIRECTORY_SIZE == 4096 &&
			  pcs_directory_units(PCS_UNIT_SHIFT) == 32 &&
			  PCS_V4_DATA_OFFSET == 4096 + 2 * 1024 * 1024,
			  "segments of 1 GB: a directory of 512 slots in 32 units, version 4's data at 4 kB + 2 MB");
	check(pcs_map_page_of(0) == 0 && pcs_map_page_of(95) == 0 &&
		  pcs_map_page_of(255) == 0 && pcs_map_page_of(256) == 1 &&
		  pcs_map_page_of(RELSEG_SIZE - 1) == PCS_MAP_PAGES - 1,
		  "the map page of a block");
	check(pcs_map_page_units(PCS_UNIT_SHIFT) == 32 &&
		  pcs_map_page_units(PCS_V2_UNIT_SHIFT) == 8,
		  "a map page takes 32 units of 128 bytes (8 of 512)");

	pcs_header_init(&h5, PCS_ALGO_ZSTD, 1, 0);
	h = h5;
	check((char *) pcs_header_directory(&h5, 0) - (char *) &h5 == 1032 &&
		  (char *) pcs_header_directory(&h5, 1) - (char *) &h5 == 1544 &&
		  pg_atomic_read_u64(pcs_header_directory(&h5, 0)) == 0 &&
		  pg_atomic_read_u64(pcs_header_directory(&h5, 1)) == 0,
		  "version 5: the directory words are the second words of the block count's sectors, zeros in a new header");
	check(pcs_data_offset(&h5) == PCS_V5_DATA_OFFSET &&
		  pcs_unit_offset(&h5, 0) == PCS_V5_DATA_OFFSET &&
		  pcs_unit_offset(&h5, 3) == PCS_V5_DATA_OFFSET + 3 * 128 &&
		  pcs_unit_offset(&h5, PG_UINT32_MAX) ==
		  PCS_V5_DATA_OFFSET + ((off_t) PG_UINT32_MAX << PCS_UNIT_SHIFT),
		  "version 5: the data area at PCS_V5_DATA_OFFSET, units of 128 bytes, no overflow");
	check(pcs_map_page_entry_offset(&h5, 10, 96) ==
		  pcs_unit_offset(&h5, 10) + 96 * PCS_ENTRY_SIZE &&
		  pcs_map_page_entry_offset(&h5, 10, 256 + 7) ==
		  pcs_unit_offset(&h5, 10) + 7 * PCS_ENTRY_SIZE &&
		  pcs_map_page_entry_offset(&h5, 10, 511) + PCS_ENTRY_SIZE ==
		  pcs_unit_offset(&h5, 10 + pcs_map_page_units(PCS_UNIT_SHIFT)),
		  "version 5: a block's entry lies in its map page at its place in the page");

	h.version = PCS_FORMAT_VERSION_4;
	reseal_header(&h);
	check(pcs_data_offset(&h) == PCS_V4_DATA_OFFSET &&
		  pcs_unit_offset(&h, 3) == PCS_V4_DATA_OFFSET + 3 * 128,
		  "version 4: the data area after the map");
	h.version = PCS_FORMAT_VERSION_3;
	reseal_header(&h);
	check(pcs_data_offset(&h) == PCS_V4_DATA_OFFSET,
		  "version 3: the data area after the map");
	h.version = PCS_FORMAT_VERSION_2;
	h.unit_shift = PCS_V2_UNIT_SHIFT;
	h.flags = 0;
	reseal_header(&h);
	check(pcs_header_check(&h) == PCS_SOUND &&
		  pcs_data_offset(&h) == PCS_V4_DATA_OFFSET &&
		  pcs_unit_offset(&h, 3) == PCS_V4_DATA_OFFSET + 3 * 512,
		  "version 2: the data area after the map, units of 512 bytes");
}

/* Format 5's directory slots: round trip, absence, every kind of damage */
static void
test_directory_word(void)
{
	PcsHeader	h;
	PcsHeader	other;
	const int	pages[] = {0, 1, 17, PCS_MAP_PAGES - 1};
	const uint32 units[] = {0, 1, 32, 123456, PG_UINT32_MAX - 32};
	bool		round_trip = true;
	bool		moved_caught = true;
	bool		flips_caught = true;
	bool		present = true;
	uint32		unit = 1;
	uint64		word;

	pcs_header_init(&h, PCS_ALGO_ZSTD, 1, 7);
	pcs_header_init(&other, PCS_ALGO_LZ4, 0, 7);

	for (int i = 0; i < lengthof(pages); i++)
	{
		for (int j = 0; j < lengthof(units); j++)
		{
			int			k = pages[i];

			word = pcs_directory_word(&h, 7, k, units[j]);
			if (word == 0 ||
				pcs_directory_decode(&h, 7, k, word, &present,
									 &unit) != PCS_SOUND ||
				!present || unit != units[j])
				round_trip = false;

			/* another page's slot, another segment's, another file's */
			if (pcs_directory_decode(&h, 7, (k + 1) % PCS_MAP_PAGES, word,
									 &present, &unit) != PCS_DIRECTORY_BAD_SLOT ||
				pcs_directory_decode(&h, 8, k, word, &present,
									 &unit) != PCS_DIRECTORY_BAD_SLOT ||
				pcs_directory_decode(&other, 7, k, word, &present,
									 &unit) != PCS_DIRECTORY_BAD_SLOT)
				moved_caught = false;

			for (int bit = 0; bit < 64; bit++)
			{
				uint64		flipped = word ^ (UINT64CONST(1) << bit);

				if (pcs_directory_decode(&h, 7, k, flipped, &present,
										 &unit) == PCS_SOUND)
					flips_caught = false;
			}
		}
	}
	check(round_trip, "a directory slot is never zero and gives its unit back, unit 0 too");
	check(moved_caught, "a slot of another page, segment or file fails its check");
	check(flips_caught, "any one flipped bit of a slot fails its check");

	check(pcs_directory_decode(&h, 7, 3, 0, &present, &unit) == PCS_SOUND &&
		  !present && unit == 0,
		  "a slot of zeros is sound: the map page does not exist");
	check((uint32) pcs_directory_word(&h, 7, 3, 0) == PG_UINT32_MAX,
		  "a slot holds the complement of the page's unit in its low half");

	word = pcs_directory_word(&h, 7, 3, PG_UINT32_MAX - 31);
	check(pcs_directory_decode(&h, 7, 3, word, &present,
							   &unit) == PCS_DIRECTORY_BAD_UNIT && !present,
		  "a slot whose page would end past the last unit is refused");
	word = pcs_directory_word(&h, 7, 3, PG_UINT32_MAX - 32);
	check(pcs_directory_decode(&h, 7, 3, word, &present, &unit) == PCS_SOUND &&
		  present && unit == PG_UINT32_MAX - 32,
		  "a page ending at the last unit is taken");
}

/*
 * Format 5's directory words, the header's two copies of where the
 * directory lies: round trip for each copy, absence, every kind of damage
 */
static void
test_directory_location_word(void)
{
	PcsHeader	h;
	PcsHeader	other;
	const uint32 units[] = {0, 1, 32, 123456, PG_UINT32_MAX - 32};
	bool		round_trip = true;
	bool		moved_caught = true;
	bool		flips_caught = true;
	bool		slots_caught = true;
	bool		present = true;
	uint32		unit = 1;
	uint64		word;

	pcs_header_init(&h, PCS_ALGO_ZSTD, 1, 7);
	pcs_header_init(&other, PCS_ALGO_LZ4, 0, 7);

	for (int copy = 0; copy < 2; copy++)
	{
		for (int j = 0; j < lengthof(units); j++)
		{
			word = pcs_directory_location_word(&h, 7, copy, units[j]);
			if (word == 0 ||
				pcs_directory_location_decode(&h, 7, copy, word, &present,
											  &unit) != PCS_SOUND ||
				!present || unit != units[j])
				round_trip = false;

			/* the other copy's word, another segment's, another file's */
			if (pcs_directory_location_decode(&h, 7, 1 - copy, word,
											  &present, &unit) !=
				PCS_DIRECTORY_BAD_LOCATION || present ||
				pcs_directory_location_decode(&h, 8, copy, word,
											  &present, &unit) !=
				PCS_DIRECTORY_BAD_LOCATION ||
				pcs_directory_location_decode(&other, 7, copy, word,
											  &present, &unit) !=
				PCS_DIRECTORY_BAD_LOCATION)
				moved_caught = false;

			for (int bit = 0; bit < 64; bit++)
			{
				uint64		flipped = word ^ (UINT64CONST(1) << bit);

				if (pcs_directory_location_decode(&h, 7, copy, flipped,
												  &present,
												  &unit) != PCS_DIRECTORY_BAD_LOCATION)
					flips_caught = false;
			}

			/* a directory slot naming the same unit is not a location */
			for (int page = 0; page < PCS_MAP_PAGES; page += 97)
			{
				if (pcs_directory_location_decode(&h, 7, copy,
												  pcs_directory_word(&h, 7, page, units[j]),
												  &present, &unit) == PCS_SOUND)
					slots_caught = false;
			}
		}
	}
	check(round_trip, "a directory word of either copy is never zero and gives its unit back, unit 0 too");
	check(moved_caught, "a directory word of the other copy, another segment or file fails its check");
	check(flips_caught, "any one flipped bit of a directory word fails its check");
	check(slots_caught, "a directory slot is never taken for a directory word");

	check(pcs_directory_location_decode(&h, 7, 0, 0, &present,
										&unit) == PCS_SOUND &&
		  !present && unit == 0 &&
		  pcs_directory_location_decode(&h, 7, 1, 0, &present,
										&unit) == PCS_SOUND &&
		  !present && unit == 0,
		  "a directory word of zeros is sound: the segment has no directory");
	check((uint32) pcs_directory_location_word(&h, 7, 1, 0) == PG_UINT32_MAX,
		  "a directory word holds the complement of the directory's unit in its low half");

	word = pcs_directory_location_word(&h, 7, 0,
									   PG_UINT32_MAX -
									   pcs_directory_units(PCS_UNIT_SHIFT) + 1);
	check(pcs_directory_location_decode(&h, 7, 0, word, &present,
										&unit) == PCS_DIRECTORY_BAD_LOCATION &&
		  !present,
		  "a directory word whose directory would end past the last unit is refused");
	word = pcs_directory_location_word(&h, 7, 1,
									   PG_UINT32_MAX -
									   pcs_directory_units(PCS_UNIT_SHIFT));
	check(pcs_directory_location_decode(&h, 7, 1, word, &present,
										&unit) == PCS_SOUND && present &&
		  unit == PG_UINT32_MAX - pcs_directory_units(PCS_UNIT_SHIFT),
		  "a directory ending at the last unit is taken");
}

/* A run of bytes pcs_copy_sparse() asked to write */
typedef struct CopyRuns
{
	char	   *copy;			/* the copy, of the original's length */
	int			nruns;
	off_t		start[16];
	int			len[16];
} CopyRuns;

static void
copy_run(void *arg, const char *data, int len, off_t offset)
{
	CopyRuns   *runs = (CopyRuns *) arg;

	memcpy(runs->copy + offset, data, len);
	if (runs->nruns < lengthof(runs->start))
	{
		runs->start[runs->nruns] = offset;
		runs->len[runs->nruns] = len;
	}
	runs->nruns++;
}

/*
 * What a copy of a segment may leave as holes: only zeros between the header
 * and the data area of the segment's version (pcs_copy_sparse_end()), which
 * in version 5 follows the header: nothing there
 */
static void
test_copy_sparse(void)
{
	PGAlignedBlock hbuf;
	PcsHeader  *h = (PcsHeader *) hbuf.data;
	char	   *zeros = calloc(1, PCS_HEADER_SIZE);
	char	   *file;
	CopyRuns	runs;
	off_t		end5;
	off_t		end4;
	bool		never;
	int			len;

	pcs_header_init(h, PCS_ALGO_ZSTD, 1, 0);
	end5 = pcs_copy_sparse_end(hbuf.data, PCS_HEADER_SIZE);
	h->version = PCS_FORMAT_VERSION_4;
	end4 = pcs_copy_sparse_end(hbuf.data, PCS_HEADER_SIZE);
	check(end5 == PCS_HEADER_SIZE && end5 == PCS_V5_DATA_OFFSET &&
		  end4 == PCS_V4_DATA_OFFSET,
		  "copies leave nothing of version 5 sparse, version 4's map up to its data area");
	h->version = PCS_FORMAT_VERSION_3;
	end4 = pcs_copy_sparse_end(hbuf.data, 12);
	h->version = PCS_FORMAT_VERSION_2;
	check(end4 == PCS_V4_DATA_OFFSET &&
		  pcs_copy_sparse_end(hbuf.data, 12) == PCS_V4_DATA_OFFSET,
		  "and to version 4's for versions 2 and 3, judged by 12 first bytes");
	check(pcs_copy_sparse_end(hbuf.data, 11) == PCS_HEADER_SIZE &&
		  pcs_copy_sparse_end(hbuf.data, 8) == PCS_HEADER_SIZE &&
		  pcs_copy_sparse_end(hbuf.data, 0) == PCS_HEADER_SIZE,
		  "first bytes too few to hold the version leave nothing sparse");
	h->version = PCS_FORMAT_VERSION + 1;
	end5 = pcs_copy_sparse_end(hbuf.data, PCS_HEADER_SIZE);
	h->version = 1;
	check(end5 == PCS_HEADER_SIZE &&
		  pcs_copy_sparse_end(hbuf.data, PCS_HEADER_SIZE) == PCS_HEADER_SIZE,
		  "nor does a version this build does not know");

	check(!pcs_copy_can_skip(zeros, 0, PCS_HEADER_SIZE, PCS_V5_DATA_OFFSET) &&
		  !pcs_copy_can_skip(zeros, 0, PCS_HEADER_SIZE, PCS_V4_DATA_OFFSET),
		  "the header is never skipped, even as zeros");
	check(pcs_copy_can_skip(zeros, PCS_V4_DATA_OFFSET - PCS_HEADER_SIZE,
							PCS_HEADER_SIZE, PCS_V4_DATA_OFFSET) &&
		  pcs_copy_can_skip(zeros, PCS_HEADER_SIZE, PCS_HEADER_SIZE,
							PCS_V4_DATA_OFFSET),
		  "zeros of version 4's map are skipped");
	zeros[100] = 1;
	check(!pcs_copy_can_skip(zeros, PCS_HEADER_SIZE, PCS_HEADER_SIZE,
							 PCS_V4_DATA_OFFSET),
		  "a page of version 4's map that is not all zeros is kept");
	zeros[100] = 0;
	never = true;
	for (off_t off = PCS_HEADER_SIZE;
		 off < PCS_V4_DATA_OFFSET + 4 * PCS_HEADER_SIZE;
		 off += PCS_HEADER_SIZE / 2)
	{
		if (pcs_copy_can_skip(zeros, off, PCS_HEADER_SIZE / 2, end5) ||
			pcs_copy_can_skip(zeros, off, 1, end5) ||
			pcs_copy_can_skip(zeros, off, PCS_HEADER_SIZE, end5))
			never = false;
	}
	check(never,
		  "no byte of a version 5 file is skipped, its directory's and map pages' zeros included, not even where version 4's map lay");
	check(!pcs_copy_can_skip(zeros, PCS_V4_DATA_OFFSET, PCS_HEADER_SIZE,
							 PCS_V4_DATA_OFFSET),
		  "nor of version 4's data area");

	/*
	 * A version 5 file of header, a zeroed directory and a zeroed map page
	 * (where the server makes them, after the header): copied whole
	 */
	len = PCS_HEADER_SIZE + PCS_DIRECTORY_SIZE + PCS_MAP_PAGE_SIZE;
	file = calloc(1, len);
	pcs_header_init(h, PCS_ALGO_ZSTD, 1, 0);
	pg_atomic_write_u64(pcs_header_directory(h, 0),
						pcs_directory_location_word(h, 0, 0, 0));
	pg_atomic_write_u64(pcs_header_directory(h, 1),
						pcs_directory_location_word(h, 0, 1, 0));
	memcpy(file, hbuf.data, PCS_HEADER_SIZE);
	memset(&runs, 0, sizeof(runs));
	runs.copy = calloc(1, len);
	pcs_copy_sparse(file, len, 0, pcs_copy_sparse_end(file, len), copy_run,
					&runs);
	check(runs.nruns == 1 && runs.start[0] == 0 && runs.len[0] == len &&
		  memcmp(runs.copy, file, len) == 0,
		  "a version 5 copy writes every byte, the zeroed directory and map page too");
	free(runs.copy);

	/* the same bytes as version 4: its map's zeros are left out */
	((PcsHeader *) file)->version = PCS_FORMAT_VERSION_4;
	memset(&runs, 0, sizeof(runs));
	runs.copy = calloc(1, len);
	pcs_copy_sparse(file, len, 0, pcs_copy_sparse_end(file, len), copy_run,
					&runs);
	check(runs.nruns == 1 && runs.start[0] == 0 &&
		  runs.len[0] == PCS_HEADER_SIZE &&
		  memcmp(runs.copy, file, len) == 0,
		  "a version 4 copy writes the header, not the zeroed map");
	free(runs.copy);
	free(file);
	free(zeros);
}

/* Is the allocation word of h sound for segment 5 and generation 77? */
static bool
alloc_sound(const PcsHeader *h)
{
	uint32		next;

	return pcs_alloc_decode(h, 5, 77, pg_atomic_read_u64(unconstify(pg_atomic_uint64 *, &h->alloc.word)),
							&next);
}

/* The allocation word: round trip, stale generations and damage fail */
static void
test_alloc_word(void)
{
	PcsHeader	h;
	uint32		next = 0;

	pcs_header_init(&h, PCS_ALGO_ZSTD, 1, 5);
	check(!alloc_sound(&h),
		  "a new segment's allocation word belongs to no generation");
	pg_atomic_write_u64(&h.alloc.word, pcs_alloc_word(&h, 5, 77, 123456));
	check(pcs_alloc_decode(&h, 5, 77, pg_atomic_read_u64(&h.alloc.word), &next) &&
		  next == 123456, "the next free unit round-trips through the word");
	check((uint32) pg_atomic_read_u64(&h.alloc.word) == 123456,
		  "the next free unit is the low half of the word, as tools read it");
	check(!pcs_alloc_decode(&h, 5, 78, pg_atomic_read_u64(&h.alloc.word), &next),
		  "the word of an earlier generation fails the check");
	check(!pcs_alloc_decode(&h, 4, 77, pg_atomic_read_u64(&h.alloc.word), &next),
		  "the word of another segment fails the check");
	check(every_byte_change_caught(&h, offsetof(PcsHeader, alloc.word), alloc_sound),
		  "every change of one byte of the allocation word is caught");
}

/* Recompute an entry's CRC after its fields were changed by hand */
static void
reseal_entry(PcsMapEntry *e, BlockNumber segblock)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, e, offsetof(PcsMapEntry, entry_crc));
	COMP_CRC32C(crc, &segblock, sizeof(segblock));
	FIN_CRC32C(crc);
	e->entry_crc = crc;
}

/* Map entries: round trip, and every kind of damage is caught */
static void
test_entry(void)
{
	PcsMapEntry e;
	PcsMapEntry empty;
	bool		all_caught = true;

	memset(&empty, 0, sizeof(empty));
	check(pcs_entry_is_empty(&empty) && pcs_entry_check(&empty, 7, 0, PCS_UNIT_SHIFT) == PCS_SOUND,
		  "an all-zero entry is an empty block");

	pcs_entry_set(&e, 7, 100, 1000, pcs_units_to_allocate(1000, true, PCS_UNIT_SHIFT), 0,
				  0xdeadbeef, PCS_UNIT_SHIFT);
	check(pcs_entry_check(&e, 7, 200, PCS_UNIT_SHIFT) == PCS_SOUND, "a new entry passes its check");
	check(pcs_entry_check(&e, 8, 200, PCS_UNIT_SHIFT) != PCS_SOUND, "an entry in the wrong slot is caught");
	check(pcs_entry_check(&e, 7, 101, PCS_UNIT_SHIFT) != PCS_SOUND,
		  "an entry pointing past the allocated units is caught");

	for (size_t i = 0; i < sizeof(e); i++)
	{
		for (int bit = 0; bit < 8; bit++)
		{
			PcsMapEntry bad = e;

			((unsigned char *) &bad)[i] ^= 1 << bit;
			if (pcs_entry_check(&bad, 7, 200, PCS_UNIT_SHIFT) == PCS_SOUND)
				all_caught = false;
		}
	}
	check(all_caught, "every single-bit flip of an entry is caught");

	pcs_entry_set(&e, 3, 0, BLCKSZ, PCS_RAW_UNITS, PCS_ENTRY_RAW, 1, PCS_UNIT_SHIFT);
	check(pcs_entry_check(&e, 3, PCS_RAW_UNITS, PCS_UNIT_SHIFT) == PCS_SOUND, "a raw entry passes its check");

	pcs_entry_set(&e, 3, 0, 1000, 8, PCS_ENTRY_SHUFFLED, 1, PCS_UNIT_SHIFT);
	check(pcs_entry_check(&e, 3, 8, PCS_UNIT_SHIFT) == PCS_SOUND, "a shuffled entry passes its check");

	/* a dictionary number, which no build writes yet, with a matching CRC */
	e.flags |= 0x10;
	reseal_entry(&e, 3);
	check(pcs_entry_check(&e, 3, 8, PCS_UNIT_SHIFT) == PCS_SOUND &&
		  pcs_entry_dictionary(e.flags) == 1,
		  "an entry of a compressed image may name a dictionary");

	/* a raw entry naming a dictionary, with a matching CRC */
	pcs_entry_set(&e, 3, 0, BLCKSZ, PCS_RAW_UNITS, PCS_ENTRY_RAW, 1, PCS_UNIT_SHIFT);
	e.flags |= 0x20;
	reseal_entry(&e, 3);
	check(pcs_entry_check(&e, 3, PCS_RAW_UNITS, PCS_UNIT_SHIFT) == PCS_ENTRY_BAD_FLAGS,
		  "a raw entry naming a dictionary is refused");

	/* a raw entry marked as shuffled, with an entry CRC that matches */
	pcs_entry_set(&e, 3, 0, BLCKSZ, PCS_RAW_UNITS, PCS_ENTRY_RAW, 1, PCS_UNIT_SHIFT);
	e.flags |= PCS_ENTRY_SHUFFLED;
	reseal_entry(&e, 3);
	check(pcs_entry_check(&e, 3, PCS_RAW_UNITS, PCS_UNIT_SHIFT) == PCS_ENTRY_RAW_SHUFFLED,
		  "a raw entry marked as shuffled is refused");
}

/*
 * Dictionaries: the header flag, the current word, the records, and images
 * compressed with one (which decode only with it)
 */
static void
test_dictionary(void)
{
	PcsHeader	h;
	PcsHeader	lz4;
	PcsDictRecord r;
	uint64		word;
	int			n = 0;
	bool		all_caught = true;

	pcs_header_init(&h, PCS_ALGO_ZSTD, 1, 5);
	pcs_header_init(&lz4, PCS_ALGO_LZ4, 0, 5);
	check(h.flags == PCS_HEADER_DICTIONARIES && lz4.flags == 0,
		  "dictionary: new zstd segments may hold dictionaries, lz4 ones not");
	h.flags |= 0x02;
	reseal_header(&h);
	check(pcs_header_check(&h) == PCS_HEADER_BAD_FLAGS,
		  "dictionary: a header flag this build does not know is refused");
	lz4.flags = PCS_HEADER_DICTIONARIES;
	reseal_header(&lz4);
	check(pcs_header_check(&lz4) == PCS_HEADER_BAD_FLAGS,
		  "dictionary: an lz4 header with the dictionaries flag is refused");
	pcs_header_init(&lz4, PCS_ALGO_LZ4, 0, 5);
	pcs_header_init(&h, PCS_ALGO_ZSTD, 1, 5);

	/* the current word */
	check(pcs_dict_decode(&h, 5, 0, 7, &n) == PCS_DICT_NONE,
		  "dictionary: a zero current word names none");
	word = pcs_dict_word(&h, 5, PCS_DICT_READY, 3, 7);
	check(pcs_dict_decode(&h, 5, word, 7, &n) == PCS_DICT_READY && n == 3 &&
		  pcs_dict_decode(&h, 5, word, 8, &n) == PCS_DICT_READY,
		  "dictionary: a ready word round-trips, in any generation");
	check(pcs_dict_decode(&h, 6, word, 7, &n) == PCS_DICT_NONE,
		  "dictionary: a word of another segment is not taken");
	word = pcs_dict_word(&h, 5, PCS_DICT_INSTALLING, 4, 7);
	check(pcs_dict_decode(&h, 5, word, 7, &n) == PCS_DICT_INSTALLING && n == 4,
		  "dictionary: an installation is seen by its own generation");
	check(pcs_dict_decode(&h, 5, word, 8, &n) == PCS_DICT_NONE,
		  "dictionary: an installation of an earlier generation is void");
	for (int bit = 0; bit < 64; bit++)
	{
		uint64		ready = pcs_dict_word(&h, 5, PCS_DICT_READY, 3, 7);

		if (pcs_dict_decode(&h, 5, ready ^ ((uint64) 1 << bit), 7, &n) != PCS_DICT_NONE)
			all_caught = false;
	}
	check(all_caught, "dictionary: every single-bit flip of the current word is caught");

	/* records */
	memset(&r, 0, sizeof(r));
	check(pcs_dict_record_is_unused(&r) &&
		  pcs_dict_record_check(&h, 5, 1, &r, PCS_UNIT_SHIFT) == PCS_DICTIONARY_BAD_RECORD,
		  "dictionary: an unused record describes no dictionary");
	pcs_dict_record_set(&h, 5, 2, &r, 1000, 4096, 0xabcd);
	check(pcs_dict_record_check(&h, 5, 2, &r, PCS_UNIT_SHIFT) == PCS_SOUND,
		  "dictionary: a new record passes its check");
	check(pcs_dict_record_check(&h, 5, 3, &r, PCS_UNIT_SHIFT) != PCS_SOUND &&
		  pcs_dict_record_check(&h, 4, 2, &r, PCS_UNIT_SHIFT) != PCS_SOUND &&
		  pcs_dict_record_check(&lz4, 5, 2, &r, PCS_UNIT_SHIFT) != PCS_SOUND,
		  "dictionary: a record of another number, segment or header is not taken");
	all_caught = true;
	for (size_t i = 0; i < sizeof(r); i++)
	{
		for (int bit = 0; bit < 8; bit++)
		{
			PcsDictRecord bad = r;

			((unsigned char *) &bad)[i] ^= 1 << bit;
			if (pcs_dict_record_check(&h, 5, 2, &bad, PCS_UNIT_SHIFT) == PCS_SOUND)
				all_caught = false;
		}
	}
	check(all_caught, "dictionary: every single-bit flip of a record is caught");

#ifdef USE_ZSTD
	{
		char	   *pages = malloc((size_t) 128 * BLCKSZ);
		char		dictbytes[16 * 1024];
		char		comp[BLCKSZ];
		char		back[BLCKSZ];
		PcsDict    *dict;
		int			dlen;
		int			plain = 0;
		int			with = 0;
		bool		round_trips = true;
		uint8		flags;

		for (int i = 0; i < 128; i++)
			make_text_page(pages + (size_t) i * BLCKSZ, 1000 + i);
		dlen = pcs_dict_train(pages, 128, dictbytes, sizeof(dictbytes));
		check(dlen >= PCS_MIN_DICTIONARY_SIZE && dlen <= (int) sizeof(dictbytes),
			  "dictionary: training on 128 text pages makes one");
		dict = pcs_dict_prepare(PCS_ALGO_ZSTD, 1, dictbytes, dlen);
		check(dict != NULL, "dictionary: it can be prepared");
		check(pcs_dict_prepare(PCS_ALGO_LZ4, 1, dictbytes, dlen) == NULL,
			  "dictionary: lz4 takes none");

		/* pages it was not trained on */
		for (int i = 0; i < 32 && dict != NULL; i++)
		{
			char		page[BLCKSZ];
			int			len;

			make_text_page(page, 5000 + i);
			len = pcs_compress_page(PCS_ALGO_ZSTD, 1, page, comp, sizeof(comp),
									&flags, NULL, NULL, 0);
			plain += len < 0 ? BLCKSZ : len;
			len = pcs_compress_page(PCS_ALGO_ZSTD, 1, page, comp, sizeof(comp),
									&flags, NULL, dict, 7);
			with += len < 0 ? BLCKSZ : len;
			if (len < 0 || pcs_entry_dictionary(flags) != 7 ||
				pcs_decode_image(PCS_ALGO_ZSTD, flags, comp, len, back, dict) != PCS_SOUND ||
				memcmp(back, page, BLCKSZ) != 0)
				round_trips = false;
			if (len > 0 &&
				pcs_decode_image(PCS_ALGO_ZSTD, flags, comp, len, back, NULL) != PCS_IMAGE_NO_DICTIONARY)
				round_trips = false;
		}
		check(round_trips,
			  "dictionary: images name it, decode with it, and not without it");
		check(with < plain,
			  "dictionary: it makes images of similar pages smaller");

		pcs_dict_free(dict);
		free(pages);
	}
#endif
}

/* Allocation sizes: exact for first images, slack for grown ones */
static void
test_allocation(void)
{
	bool		exact = true;
	bool		slack = true;

	for (int len = 1; len < BLCKSZ; len++)
	{
		int			first = pcs_units_to_allocate(len, false, PCS_UNIT_SHIFT);
		int			grown = pcs_units_to_allocate(len, true, PCS_UNIT_SHIFT);

		if (first != pcs_units_for(len, PCS_UNIT_SHIFT))
			exact = false;
		if (grown < pcs_units_for(len, PCS_UNIT_SHIFT) + 1 || grown > PCS_MAX_UNITS)
			slack = false;
	}
	check(exact, "a block's first image gets exactly the units it needs");
	check(slack, "a grown image gets at least one unit of slack, within bounds");
	check(pcs_units_to_allocate(BLCKSZ, true, PCS_UNIT_SHIFT) == PCS_RAW_UNITS &&
		  pcs_units_to_allocate(BLCKSZ, false, PCS_UNIT_SHIFT) == PCS_RAW_UNITS,
		  "raw images get no slack");
}

/* The codec for one algorithm: round trips, raw fallback, damaged images */
static void
test_codec(PcsAlgorithm algo)
{
	char		page[BLCKSZ];
	char		back[BLCKSZ];
	char		comp[BLCKSZ];
	char		msg[128];
	int			len;
	uint8		flags;
	bool		all_caught;
	const char *name = pcs_algorithm_name(algo);

	memset(page, 0, BLCKSZ);
	len = pcs_compress_page(algo, 1, page, comp, sizeof(comp), &flags, NULL, NULL, 0);
	snprintf(msg, sizeof(msg), "%s: a zero page compresses to one unit, unshuffled", name);
	check(len > 0 && pcs_units_for(len, PCS_UNIT_SHIFT) == 1 && flags == 0, msg);

	make_text_page(page, 42);
	len = pcs_compress_page(algo, 1, page, comp, sizeof(comp), &flags, NULL, NULL, 0);
	snprintf(msg, sizeof(msg), "%s: a text page compresses and saves units", name);
	check(len > 0 && pcs_units_for(len, PCS_UNIT_SHIFT) < PCS_RAW_UNITS, msg);
	snprintf(msg, sizeof(msg), "%s: it decompresses to the same page", name);
	check(len > 0 && pcs_decode_image(algo, flags, comp, len, back, NULL) == PCS_SOUND &&
		  memcmp(page, back, BLCKSZ) == 0, msg);

	snprintf(msg, sizeof(msg), "%s: a truncated image is an error", name);
	check(len > 1 && pcs_decompress_page(algo, comp, len - 1, back) != PCS_SOUND, msg);

	/*
	 * A garbled image must not crash the decoder, whatever it returns; the
	 * data CRC in the map entry is what catches it before decoding.
	 */
	all_caught = true;
	for (int i = 0; i < len; i++)
	{
		char		bad[BLCKSZ];

		memcpy(bad, comp, len);
		bad[i] ^= 0x5a;
		(void) pcs_decode_image(algo, PCS_ENTRY_SHUFFLED, bad, len, back, NULL);
		if (pcs_data_crc(bad, len) == pcs_data_crc(comp, len))
			all_caught = false;
	}
	snprintf(msg, sizeof(msg), "%s: every garbled image is caught by the data CRC, and the decoder survives it", name);
	check(all_caught, msg);

	make_random_page(page, 7);
	snprintf(msg, sizeof(msg), "%s: a random page is stored raw", name);
	check(pcs_compress_page(algo, 1, page, comp, sizeof(comp), &flags, NULL, NULL, 0) == -1 &&
		  flags == PCS_ENTRY_RAW, msg);
}

/* Set the layout fields of a page header */
static void
set_layout(char *page, int lower, int upper, int special)
{
	PageHeader	ph = (PageHeader) page;

	ph->pd_lower = lower;
	ph->pd_upper = upper;
	ph->pd_special = special;
}

/*
 * A B-tree leaf page of a primary key on a serial column: items of 16 bytes
 * (a heap TID in heap order, t_info, an ascending int4 key, padding) placed
 * downwards from the special space, line pointers in key order
 */
static void
make_btree_page(char *page, unsigned seed)
{
	int			n = 400;
	int			special = BLCKSZ - 16;
	int			upper = special - n * 16;

	memset(page, 0, BLCKSZ);
	set_layout(page, SizeOfPageHeaderData + n * sizeof(ItemIdData), upper, special);
	for (int i = 0; i < n; i++)
	{
		ItemIdData	lp;
		char	   *tup = page + special - (i + 1) * 16;
		uint16		block = seed + i / 37;
		uint16		posid = 1 + i % 37;
		int32		key = seed * 1000 + i;

		lp.lp_off = special - (i + 1) * 16;
		lp.lp_flags = LP_NORMAL;
		lp.lp_len = 16;
		memcpy(page + SizeOfPageHeaderData + i * sizeof(ItemIdData), &lp, sizeof(lp));
		memcpy(tup + 2, &block, 2);
		memcpy(tup + 4, &posid, 2);
		tup[6] = 16;
		memcpy(tup + 8, &key, 4);
	}
	memset(page + special, 0x42, 16);
}

/*
 * A heap page of rows of varying length, as decision-support tables have: a
 * key, a date-like integer, a short code and a comment of words, each row
 * MAXALIGNed and placed downwards from the end, with line pointers.  The
 * shuffle transposes it by its most common length, which scatters every
 * field.
 */
static void
make_varying_heap_page(char *page, unsigned seed)
{
	const char *words[] = {"furiously", "quickly", "carefully", "ironic",
		"final", "pending", "regular", "express", "deposits", "requests",
	"accounts", "packages", "foxes", "sleep", "haggle", "among"};
	int			upper = BLCKSZ;
	int			n = 0;

	memset(page, 0, BLCKSZ);
	for (;;)
	{
		char		row[128];
		int			len = 0;
		int			clen = 10 + next_rand(&seed) % 34;
		int32		key = 4 * (seed % 100000 + n);
		int32		day = 8000 + next_rand(&seed) % 2400;
		ItemIdData	lp;

		memset(row, 0, sizeof(row));
		row[len++] = 0x02;		/* a tuple header's flavour of bytes */
		row[len++] = (char) n;
		len = 24;
		memcpy(row + len, &key, 4);
		len += 4;
		memcpy(row + len, &day, 4);
		len += 4;
		memcpy(row + len, "R|F", 3);
		len += 3;
		row[len++] = (char) (clen << 1 | 1);	/* a short varlena header */
		while (clen > 0)
		{
			const char *w = words[next_rand(&seed) % 16];
			int			k = Min((int) strlen(w), clen);

			memcpy(row + len, w, k);
			len += k;
			clen -= k;
			if (clen > 0)
			{
				row[len++] = ' ';
				clen--;
			}
		}
		if (upper - MAXALIGN(len) < SizeOfPageHeaderData + (n + 1) * (int) sizeof(ItemIdData))
			break;
		upper -= MAXALIGN(len);
		memcpy(page + upper, row, len);
		lp.lp_off = upper;
		lp.lp_flags = LP_NORMAL;
		lp.lp_len = len;
		memcpy(page + SizeOfPageHeaderData + n * sizeof(ItemIdData), &lp, sizeof(lp));
		n++;
	}
	set_layout(page, SizeOfPageHeaderData + n * sizeof(ItemIdData), upper, BLCKSZ);
}

/*
 * The choice of pcs_compress_page(): a transform is used where it makes the
 * image smaller, never where plain compression does better, and what it
 * gains on the pages tried both ways decides for those between.
 */
static void
test_choice(void)
{
#ifdef USE_ZSTD
	char		page[BLCKSZ];
	char		shuffled[BLCKSZ];
	char		comp[2 * BLCKSZ];
	char		back[BLCKSZ];
	uint8		flags;
	int			len;
	size_t		plain;
	size_t		after;
	bool		never_worse = true;
	bool		shuffle_hurts = true;
	PcsCodecState state;
	int			transformed = 0;

	/* rows of varying length: the shuffle hurts, the codec does not use it */
	for (unsigned seed = 1; seed <= 20; seed++)
	{
		make_varying_heap_page(page, seed);
		if (pcs_page_shuffle(page, shuffled) != PCS_ENTRY_SHUFFLED)
			shuffle_hurts = false;
		plain = ZSTD_compress(comp, sizeof(comp), page, BLCKSZ, 1);
		after = ZSTD_compress(comp, sizeof(comp), shuffled, BLCKSZ, 1);
		if (ZSTD_isError(plain) || ZSTD_isError(after) ||
			pcs_units_for((int) after, PCS_UNIT_SHIFT) <= pcs_units_for((int) plain, PCS_UNIT_SHIFT))
			shuffle_hurts = false;
		len = pcs_compress_page(PCS_ALGO_ZSTD, 1, page, comp, sizeof(comp),
								&flags, NULL, NULL, 0);
		if (len < 0 || pcs_units_for(len, PCS_UNIT_SHIFT) > pcs_units_for((int) plain, PCS_UNIT_SHIFT) ||
			flags != 0 ||
			pcs_decode_image(PCS_ALGO_ZSTD, flags, comp, len, back, NULL) != PCS_SOUND ||
			memcmp(back, page, BLCKSZ) != 0)
			never_worse = false;
	}
	check(shuffle_hurts,
		  "rows of varying length have a shuffle, and it takes more units than plain zstd");
	check(never_worse,
		  "on them the codec stores plain zstd images, no larger, and they decode");

	/* what a segment's state learns: plain here, so no transform between */
	memset(&state, 0, sizeof(state));
	for (unsigned seed = 1; seed <= 64; seed++)
	{
		make_varying_heap_page(page, seed);
		len = pcs_compress_page(PCS_ALGO_ZSTD, 1, page, comp, sizeof(comp),
								&flags, &state, NULL, 0);
		if (len < 0 || flags != 0)
			transformed++;
	}
	check(transformed == 0 && state.gain < 0,
		  "a segment of such pages learns that the shuffle does not pay");

	/* fixed-length index tuples: the shuffle pays, and is used throughout */
	memset(&state, 0, sizeof(state));
	transformed = 0;
	for (unsigned seed = 1; seed <= 64; seed++)
	{
		make_btree_page(page, seed);
		len = pcs_compress_page(PCS_ALGO_ZSTD, 1, page, comp, sizeof(comp),
								&flags, &state, NULL, 0);
		if (len >= 0 && flags == PCS_ENTRY_SHUFFLED &&
			pcs_decode_image(PCS_ALGO_ZSTD, flags, comp, len, back, NULL) == PCS_SOUND &&
			memcmp(back, page, BLCKSZ) == 0)
			transformed++;
	}
	check(transformed == 64 && state.gain > 0,
		  "a segment of fixed-length tuples shuffles every page, tried both ways or not");
#endif
}

/* The shuffle of pcs_compress_page(): reversible for any bytes, and useful */
static void
test_shuffle(void)
{
	char		page[BLCKSZ];
	char		shuffled[BLCKSZ];
	char		back[BLCKSZ];
	unsigned	seed = 1;
	bool		exact = true;
	int			shuffled_count = 0;
	uint8		how;
	const struct
	{
		int			lower,
					upper,
					special;
	}			bad[] = {
		{0, 100, 200},			/* lower before the line pointers */
		{SizeOfPageHeaderData + 80, 100, 200},	/* lower after upper */
		{SizeOfPageHeaderData + 8, 300, 200},	/* upper after special */
		{SizeOfPageHeaderData + 8, 300, BLCKSZ + 8},	/* special past the page */
		{SizeOfPageHeaderData + 6, 300, 400},	/* part of a line pointer */
		{SizeOfPageHeaderData, 300, 400},	/* no line pointers */
	};
	bool		refused = true;

	make_btree_page(page, 5);
	check(pcs_page_shuffle(page, shuffled) == PCS_ENTRY_SHUFFLED &&
		  memcmp(page, shuffled, BLCKSZ) != 0,
		  "a B-tree page of tuples of one length is shuffled, not split");
	check(pcs_page_unshuffle(shuffled, back, PCS_ENTRY_SHUFFLED) == PCS_SOUND &&
		  memcmp(page, back, BLCKSZ) == 0,
		  "it unshuffles to the same page");
	{
		/* 400 items of 16 bytes from BLCKSZ - 16 down: the columns, in order */
		int			rows = 400;
		int			base = BLCKSZ - 16 - rows * 16;
		bool		columns = true;

		for (int r = 0; r < rows; r++)
			for (int c = 0; c < 16; c++)
				if (shuffled[base + c * rows + r] != page[base + r * 16 + c])
					columns = false;
		check(columns, "its tuple space is written column by column");
	}
#ifdef USE_ZSTD
	{
		char		out[2 * BLCKSZ];
		size_t		plain = ZSTD_compress(out, sizeof(out), page, BLCKSZ, 1);
		size_t		after = ZSTD_compress(out, sizeof(out), shuffled, BLCKSZ, 1);

		check(!ZSTD_isError(plain) && !ZSTD_isError(after) &&
			  pcs_units_for((int) after, PCS_UNIT_SHIFT) * 2 <= pcs_units_for((int) plain, PCS_UNIT_SHIFT),
			  "shuffled, it takes at most half the units zstd needs for it as it is");
	}
#endif

	/* pages whose header is not a layout are left alone, and refused back */
	for (int i = 0; i < lengthof(bad); i++)
	{
		make_btree_page(page, 5);
		set_layout(page, bad[i].lower, bad[i].upper, bad[i].special);
		memset(shuffled, 0x77, BLCKSZ);
		if (pcs_page_shuffle(page, shuffled) || shuffled[100] != 0x77 ||
			pcs_page_unshuffle(page, back, PCS_ENTRY_SHUFFLED) == PCS_SOUND ||
			pcs_page_unshuffle(page, back, PCS_ENTRY_SPLIT) == PCS_SOUND)
			refused = false;
	}
	check(refused, "pages without a standard layout are neither shuffled nor unshuffled");

	/*
	 * Random bytes under random layouts, line pointers of every kind, with
	 * storage anywhere in the tuple space (strides up to and beyond the
	 * limit): each one that is shuffled comes back exactly.
	 */
	for (int i = 0; i < 20000; i++)
	{
		int			special = BLCKSZ - (int) (next_rand(&seed) % 64) * 8;
		int			upper = SizeOfPageHeaderData + next_rand(&seed) % (special - SizeOfPageHeaderData + 1);
		int			nitems = next_rand(&seed) % ((upper - SizeOfPageHeaderData) / sizeof(ItemIdData) + 1);
		int			stride = 8 * (1 + next_rand(&seed) % 140);

		make_random_page(page, next_rand(&seed));
		set_layout(page, SizeOfPageHeaderData + nitems * sizeof(ItemIdData), upper, special);
		/* most items of one length, so that a stride is found */
		for (int j = 0; j < nitems; j++)
		{
			ItemIdData	lp;
			int			len = stride - next_rand(&seed) % 8;

			memcpy(&lp, page + SizeOfPageHeaderData + j * sizeof(ItemIdData), sizeof(lp));
			lp.lp_len = 0;		/* without storage, of any kind */
			if (next_rand(&seed) % 4 != 0 && len <= special - upper)
			{
				/* somewhere in the tuple space, overlapping others or not */
				lp.lp_flags = LP_NORMAL;
				lp.lp_len = len;
				lp.lp_off = upper + next_rand(&seed) % (special - upper - len + 1);
			}
			memcpy(page + SizeOfPageHeaderData + j * sizeof(ItemIdData), &lp, sizeof(lp));
		}
		how = pcs_page_shuffle(page, shuffled);
		if (how == 0)
			continue;
		shuffled_count++;
		if (pcs_page_unshuffle(shuffled, back, how) != PCS_SOUND || memcmp(page, back, BLCKSZ) != 0)
			exact = false;
	}
	check(shuffled_count > 15000 && exact,
		  "random pages under random layouts all unshuffle to themselves");

	/*
	 * The stored layout, whichever way the machine moves the bytes (SSE2
	 * blocks of 16 rows, 64-bit blocks of 8, byte by byte): for every stride
	 * and many tuple-space lengths, random bytes, one item setting the
	 * stride; the first (length mod stride) bytes stay, then each column of
	 * the rows in turn.
	 */
	exact = true;
	shuffled_count = 0;
	for (int stride = 8; stride <= 1024; stride += 8)
	{
		for (int i = 0; i < 12; i++)
		{
			int			special = BLCKSZ - 16;
			int			lower = SizeOfPageHeaderData + sizeof(ItemIdData);
			int			upper = special - stride -
				next_rand(&seed) % (special - stride - lower + 1);
			int			len = special - upper;
			int			rows = len / stride;
			int			lead = len % stride;
			ItemIdData	lp;

			make_random_page(page, next_rand(&seed));
			set_layout(page, lower, upper, special);
			lp.lp_flags = LP_NORMAL;
			lp.lp_len = stride;
			lp.lp_off = special - stride;
			memcpy(page + SizeOfPageHeaderData, &lp, sizeof(lp));
			if (pcs_page_shuffle(page, shuffled) != PCS_ENTRY_SHUFFLED)
			{
				exact = false;
				continue;
			}
			shuffled_count++;
			if (memcmp(shuffled + upper, page + upper, lead) != 0)
				exact = false;
			for (int r = 0; r < rows; r++)
				for (int c = 0; c < stride; c++)
					if (shuffled[upper + lead + c * rows + r] !=
						page[upper + lead + r * stride + c])
						exact = false;
			if (pcs_page_unshuffle(shuffled, back, PCS_ENTRY_SHUFFLED) != PCS_SOUND ||
				memcmp(page, back, BLCKSZ) != 0)
				exact = false;
		}
	}
	check(shuffled_count == 128 * 12 && exact,
		  "every stride and length is shuffled column by column, and back");
}


/* Put a heap TID (block, offset) at p */
static void
put_tid(char *p, uint32 block, uint16 posid)
{
	uint16		hi = block >> 16;
	uint16		lo = (uint16) block;

	memcpy(p, &hi, 2);
	memcpy(p + 2, &lo, 2);
	memcpy(p + 4, &posid, 2);
}

/*
 * A B-tree leaf page of a non-unique index on an int4 column with
 * deduplication, as sysbench's k_1 looks: a high key, then in key order
 * tuples that are either one heap TID or a posting list of 2 to 150
 * ascending heap TIDs spread over 4,000 blocks.  Tuples are placed
 * downwards from the special space, but not in key order.
 */
static void
make_posting_page(char *page, unsigned seed)
{
	int			special = BLCKSZ - 16;
	int			upper = special;
	int			n = 0;
	int			order[40];
	uint16		flags = PCS_BTP_LEAF;

	memset(page, 0, BLCKSZ);
	for (int i = 0; i < 40; i++)
		order[i] = i;
	for (int i = 39; i > 0; i--)
	{
		int			j = next_rand(&seed) % (i + 1);
		int			t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < 40; i++)
	{
		char		tup[BLCKSZ];
		int			len;
		int			lpno = order[i];
		int32		key = 1000 + lpno * 3;
		uint16		info;
		ItemIdData	lp;

		memset(tup, 0, sizeof(tup));
		memcpy(tup + 8, &key, 4);
		if (lpno == 0)
		{
			/* the high key: a pivot tuple, t_tid holding no heap TID */
			len = 16;
			put_tid(tup, 0, 1);
			info = len | PCS_ALT_TID_MASK;
		}
		else if (lpno % 3 == 1)
		{
			len = 16;
			put_tid(tup, next_rand(&seed) % 4000, 1 + next_rand(&seed) % 60);
			info = len;
		}
		else
		{
			int			ntids = 2 + next_rand(&seed) % 149;
			uint32		block = next_rand(&seed) % 40;

			len = MAXALIGN(16 + ntids * 6);
			put_tid(tup, 16, ntids | PCS_BT_IS_POSTING);
			info = len | PCS_ALT_TID_MASK;
			for (int t = 0; t < ntids; t++)
			{
				block += 1 + next_rand(&seed) % 25;
				put_tid(tup + 16 + t * 6, block, 1 + next_rand(&seed) % 60);
			}
		}
		memcpy(tup + 6, &info, 2);
		if (upper - len < (int) (SizeOfPageHeaderData + 40 * sizeof(ItemIdData)))
			break;
		upper -= len;
		memcpy(page + upper, tup, len);
		lp.lp_off = upper;
		lp.lp_flags = LP_NORMAL;
		lp.lp_len = len;
		memcpy(page + SizeOfPageHeaderData + lpno * sizeof(ItemIdData), &lp, sizeof(lp));
		n = Max(n, lpno + 1);
	}
	/* line pointers left unset by a full page have no storage */
	set_layout(page, SizeOfPageHeaderData + n * sizeof(ItemIdData), upper, special);
	memcpy(page + special + 12, &flags, 2);
}

/*
 * Call f on each heap TID of a split page made by make_posting_page(), in
 * the order of stream C (tuples in line pointer order, the t_tid of a plain
 * tuple, the list of a posting one); returns how many
 */
static int
for_each_heap_tid(char *page, void (*f) (char *tid, int k, void *arg),
				  void *arg)
{
	PageHeader	ph = (PageHeader) page;
	int			nitems = (ph->pd_lower - SizeOfPageHeaderData) / sizeof(ItemIdData);
	int			k = 0;

	for (int i = 0; i < nitems; i++)
	{
		ItemIdData	lp;
		uint16		info;
		uint16		posid;
		char	   *tup;

		memcpy(&lp, page + SizeOfPageHeaderData + i * sizeof(ItemIdData), sizeof(lp));
		if (lp.lp_len == 0)
			continue;
		tup = page + lp.lp_off;
		memcpy(&info, tup + 6, 2);
		memcpy(&posid, tup + 4, 2);
		if (!(info & PCS_ALT_TID_MASK))
			f(tup, k++, arg);
		else if (posid & PCS_BT_IS_POSTING)
		{
			for (int t = 0; t < (posid & PCS_BT_OFFSET_MASK); t++)
				f(tup + 16 + t * 6, k++, arg);
		}
	}
	return k;
}

/* A TID's block number and offset number */
static void
get_tid(const char *p, uint32 *block, uint16 *posid)
{
	uint16		hi,
				lo;

	memcpy(&hi, p, 2);
	memcpy(&lo, p + 2, 2);
	memcpy(posid, p + 4, 2);
	*block = ((uint32) hi << 16) | lo;
}

/* for_each_heap_tid(): multiply the block number by *arg */
static void
scale_tid(char *tid, int k, void *arg)
{
	uint32		block;
	uint16		posid;

	get_tid(tid, &block, &posid);
	put_tid(tid, block * *(uint32 *) arg, posid);
}

/* Multiply the block numbers of a split page's heap TIDs by mult */
static void
scale_tid_blocks(char *page, uint32 mult)
{
	for_each_heap_tid(page, scale_tid, &mult);
}

/* for_each_heap_tid(): nothing, to count them */
static void
count_tid(char *tid, int k, void *arg)
{
}

/* What check_planned_tid() compares a page's heap TIDs with */
typedef struct PlannedTids
{
	const unsigned char *c;		/* stream C of the page's image */
	int			ntids;			/* rows of stream C */
	uint32		prev;			/* block number of the TID before */
	bool		ok;
} PlannedTids;

/* for_each_heap_tid(): is TID k in all six planes of stream C? */
static void
check_planned_tid(char *tid, int k, void *arg)
{
	PlannedTids *pt = arg;
	uint32		block;
	uint16		posid;
	uint32		delta;

	get_tid(tid, &block, &posid);
	delta = block - pt->prev;
	pt->prev = block;
	for (int j = 0; j < 6; j++)
	{
		unsigned	want = j < 2 ? (posid >> (8 * j)) & 0xFF : (delta >> (8 * (j - 2))) & 0xFF;

		if (pt->c[j * pt->ntids + k] != want)
			pt->ok = false;
	}
}

/*
 * Does the split image of a page made by make_posting_page() hold stream C
 * as the split's comment says?  It follows A (2 bytes a tuple) and B (6
 * bytes a tuple with an alternative t_tid): each heap TID's offset number,
 * then the difference of its block number from the one before, each as
 * bytes least significant first, byte j of every TID in plane j.
 */
static bool
split_tids_as_planned(char *page, const char *image)
{
	PageHeader	ph = (PageHeader) page;
	int			nitems = (ph->pd_lower - SizeOfPageHeaderData) / sizeof(ItemIdData);
	int			nstored = 0;
	int			nalt = 0;
	PlannedTids pt = {0};

	for (int i = 0; i < nitems; i++)
	{
		ItemIdData	lp;
		uint16		info;

		memcpy(&lp, page + SizeOfPageHeaderData + i * sizeof(ItemIdData), sizeof(lp));
		if (lp.lp_len == 0)
			continue;
		nstored++;
		memcpy(&info, page + lp.lp_off + 6, 2);
		if (info & PCS_ALT_TID_MASK)
			nalt++;
	}
	pt.c = (const unsigned char *) image + ph->pd_upper + 2 * nstored + 6 * nalt;
	pt.ntids = for_each_heap_tid(page, count_tid, NULL);
	pt.ok = true;
	(void) for_each_heap_tid(page, check_planned_tid, &pt);
	return pt.ok && pt.ntids > 16;
}

/*
 * The index split of pcs_compress_page(): B-tree pages with posting lists
 * are split into streams, reversibly for any bytes, and it pays.
 */
static void
test_split(void)
{
	char		page[BLCKSZ];
	char		image[BLCKSZ];
	char		back[BLCKSZ];
	unsigned	seed = 3;
	bool		exact = true;
	int			split_count = 0;

	make_posting_page(page, 11);
	check(pcs_page_shuffle(page, image) == PCS_ENTRY_SPLIT,
		  "a B-tree leaf page with posting lists is split");
	check(pcs_page_unshuffle(image, back, PCS_ENTRY_SPLIT) == PCS_SOUND &&
		  memcmp(page, back, BLCKSZ) == 0,
		  "it joins back to the same page");
	check(pcs_page_unshuffle(image, back, PCS_ENTRY_SHUFFLED) != PCS_SOUND ||
		  memcmp(page, back, BLCKSZ) != 0,
		  "read as shuffled instead, it does not give the page");
	check(split_tids_as_planned(page, image),
		  "its heap TIDs are stored as offsets and block differences, plane by plane");
	{
		/*
		 * Block numbers of every size, rising and falling: the upper planes
		 * of the differences, which the page above leaves zero or all ones
		 */
		bool		planned = true;

		for (unsigned mult = 1; mult < 4000000000U / 4000; mult = mult * 7 + 3)
		{
			make_posting_page(page, 11 + mult);
			scale_tid_blocks(page, mult);
			planned &= pcs_page_shuffle(page, image) == PCS_ENTRY_SPLIT &&
				split_tids_as_planned(page, image) &&
				pcs_page_unshuffle(image, back, PCS_ENTRY_SPLIT) == PCS_SOUND &&
				memcmp(page, back, BLCKSZ) == 0;
		}
		check(planned,
			  "heap TIDs on blocks of any number are stored plane by plane and come back");
	}
	make_posting_page(page, 11);
	(void) pcs_page_shuffle(page, image);
#ifdef USE_ZSTD
	{
		char		out[2 * BLCKSZ];
		size_t		plain = ZSTD_compress(out, sizeof(out), page, BLCKSZ, 1);
		size_t		after = ZSTD_compress(out, sizeof(out), image, BLCKSZ, 1);

		check(!ZSTD_isError(plain) && !ZSTD_isError(after) &&
			  pcs_units_for((int) after, PCS_UNIT_SHIFT) * 3 <= pcs_units_for((int) plain, PCS_UNIT_SHIFT) * 2,
			  "split, it takes at most two thirds of the units zstd needs for it as it is");
	}
#endif

	/* a page whose line pointers point outside its tuple space is left as is */
	make_posting_page(page, 11);
	((PageHeader) page)->pd_upper = ((PageHeader) page)->pd_special;
	memset(image, 0x77, BLCKSZ);
	check(pcs_page_shuffle(page, image) == 0 && image[100] == 0x77,
		  "a page with line pointers outside its tuple space (GIN posting trees) is left alone");

	/*
	 * Random variations: tuples overlapping or not, line pointers of every
	 * kind, posting list offsets and counts in and out of bounds, leaf or
	 * not, garbage everywhere else.  Each page split comes back exactly.
	 */
	for (int i = 0; i < 20000; i++)
	{
		ItemIdData	lp;
		PageHeader	ph = (PageHeader) page;
		int			nitems;
		int			j;
		uint8		how;

		make_posting_page(page, next_rand(&seed));
		nitems = (ph->pd_lower - SizeOfPageHeaderData) / sizeof(ItemIdData);
		switch (next_rand(&seed) % 8)
		{
			case 0:				/* a byte of a tuple or the hole changed */
				page[ph->pd_lower + next_rand(&seed) % (BLCKSZ - ph->pd_lower)] ^= 1 << (next_rand(&seed) % 8);
				break;
			case 1:				/* a line pointer moved, maybe onto another */
				j = next_rand(&seed) % nitems;
				memcpy(&lp, page + SizeOfPageHeaderData + j * sizeof(ItemIdData), sizeof(lp));
				lp.lp_off += (int) (next_rand(&seed) % 64) - 32;
				memcpy(page + SizeOfPageHeaderData + j * sizeof(ItemIdData), &lp, sizeof(lp));
				break;
			case 2:				/* a posting count out of bounds */
				j = next_rand(&seed) % nitems;
				memcpy(&lp, page + SizeOfPageHeaderData + j * sizeof(ItemIdData), sizeof(lp));
				if (lp.lp_len != 0)
					page[lp.lp_off + 4] = (char) next_rand(&seed);
				break;
			case 3:				/* not a leaf page */
				page[BLCKSZ - 4] = 0;
				break;
			case 4:				/* not a B-tree page */
				page[BLCKSZ - 1] = (char) 0xFF;
				page[BLCKSZ - 2] = (char) 0x80 + next_rand(&seed) % 3;
				break;
			case 5:				/* line pointers of every kind and length */
				j = next_rand(&seed) % nitems;
				memcpy(&lp, page + SizeOfPageHeaderData + j * sizeof(ItemIdData), sizeof(lp));
				lp.lp_flags = next_rand(&seed) % 4;
				lp.lp_len = next_rand(&seed) % 64;
				memcpy(page + SizeOfPageHeaderData + j * sizeof(ItemIdData), &lp, sizeof(lp));
				break;
			case 6:				/* garbage in a tuple's t_info and t_tid */
				j = next_rand(&seed) % nitems;
				memcpy(&lp, page + SizeOfPageHeaderData + j * sizeof(ItemIdData), sizeof(lp));
				if (lp.lp_len != 0)
					for (int b = 0; b < 8; b++)
						page[lp.lp_off + b] = (char) next_rand(&seed);
				break;
			default:			/* as made */
				break;
		}
		how = pcs_page_shuffle(page, image);
		if (how == PCS_ENTRY_SPLIT)
			split_count++;
		if (how != 0 && (pcs_page_unshuffle(image, back, how) != PCS_SOUND ||
						 memcmp(page, back, BLCKSZ) != 0))
			exact = false;

		/* a damaged image is refused or gives some page; a crash ends the run */
		if (how == PCS_ENTRY_SPLIT)
		{
			for (int b = 0; b < 4; b++)
				image[next_rand(&seed) % BLCKSZ] ^= (char) (1 + next_rand(&seed) % 255);
			(void) pcs_page_unshuffle(image, back, PCS_ENTRY_SPLIT);
		}
	}
	check(split_count > 12000 && exact,
		  "random variations of posting list pages all join back to themselves");

	/* the entry flags: split excludes raw and shuffled */
	{
		PcsMapEntry e;

		const uint8 both[] = {PCS_ENTRY_RAW, PCS_ENTRY_SHUFFLED};
		bool		refused = true;

		pcs_entry_set(&e, 3, 0, 1000, 8, PCS_ENTRY_SPLIT, 1, PCS_UNIT_SHIFT);
		check(pcs_entry_check(&e, 3, 8, PCS_UNIT_SHIFT) == PCS_SOUND, "a split entry passes its check");
		for (int i = 0; i < lengthof(both); i++)
		{
			if (both[i] == PCS_ENTRY_RAW)
				pcs_entry_set(&e, 3, 0, BLCKSZ, PCS_RAW_UNITS, PCS_ENTRY_RAW, 1, PCS_UNIT_SHIFT);
			else
				pcs_entry_set(&e, 3, 0, 1000, 8, PCS_ENTRY_SHUFFLED, 1, PCS_UNIT_SHIFT);
			e.flags |= PCS_ENTRY_SPLIT;
			reseal_entry(&e, 3);
			if (pcs_entry_check(&e, 3, PCS_RAW_UNITS, PCS_UNIT_SHIFT) == PCS_SOUND)
				refused = false;
		}
		check(refused, "entries marked split and raw, or split and shuffled, are refused");
		check(pcs_decode_image(PCS_ALGO_ZSTD, PCS_ENTRY_SPLIT | PCS_ENTRY_SHUFFLED,
							   image, 100, back, NULL) != PCS_SOUND,
			  "an image marked split and shuffled is not decoded");
	}
}

/*
 * The estimate is built only with lz4 (its probe), and matters only for
 * zstd tablespaces.
 */
#if defined(USE_LZ4) && defined(USE_ZSTD)

/*
 * Could any compressor a tablespace may use store this page in fewer units
 * than raw?  Asked of libzstd and liblz4 directly, not of
 * pcs_compress_page(), which consults the estimate under test.
 */
static bool
page_compresses(const char *page, bool thorough)
{
	char		out[2 * BLCKSZ];
	const int	limit = BLCKSZ - PCS_MIN_SAVING;

	{
		const int	levels[] = {1, 3, 19};

		for (int i = 0; i < lengthof(levels); i++)
		{
			size_t		r;

			if (levels[i] > 3 && !thorough)
				continue;
			r = ZSTD_compress(out, sizeof(out), page, BLCKSZ, levels[i]);
			if (!ZSTD_isError(r) && (int) r <= limit)
				return true;
		}
	}
	{
		int			r = LZ4_compress_default(page, out, BLCKSZ, sizeof(out));

		if (r > 0 && r <= limit)
			return true;
	}
	return false;
}

/*
 * A page of TOAST chunks of a value compressed already, as the TOAST
 * relation of a zstd column holds: a page header, four line pointers and
 * four tuples of a heap header, chunk id, sequence number, varlena header
 * and 1996 bytes of zstd output of text.  False if zstd gave too few bytes.
 */
static bool
make_toast_page(char *page, unsigned seed)
{
	static char text[64 * 1024];
	static char packed[64 * 1024 + 1024];
	const char *words[] = {"select", "from", "where", "table", "index",
		"the", "a", "of", "value", "page", "compressed", "tablespace",
	"storage", "row", "column", "and"};
	size_t		packed_len;
	int			off = 0;
	int			upper = BLCKSZ;

	while (off < (int) sizeof(text) - 16)
	{
		const char *w = words[next_rand(&seed) & 15];

		memcpy(text +off, w, strlen(w));
		off += strlen(w);
		text[		off++] = (next_rand(&seed) & 7) == 0 ? '\n' : ' ';
	}
	packed_len = ZSTD_compress(packed, sizeof(packed), text, off, 3);
	if (ZSTD_isError(packed_len) || packed_len < 4 * 1996)
		return false;

	memset(page, 0, BLCKSZ);
	for (int t = 0; t < 4; t++)
	{
		uint32		xmin = 7777;
		uint32		chunk_id = 16400 + seed % 100;
		uint32		len = 24 + 12 + 1996;
		uint32		lp;
		int32		seq = t;
		uint32		vl = (1996 + 4) << 2;

		upper -= MAXALIGN(len);
		memcpy(page + upper, &xmin, 4);
		page[upper + 16] = (char) (t + 1);	/* ctid offset */
		page[upper + 18] = 3;	/* natts */
		page[upper + 21] = 0x08;	/* infomask */
		page[upper + 22] = 24;	/* hoff */
		memcpy(page + upper + 24, &chunk_id, 4);
		memcpy(page + upper + 28, &seq, 4);
		memcpy(page + upper + 32, &vl, 4);
		memcpy(page + upper + 36, packed + t * 1996, 1996);
		lp = (uint32) upper | (1U << 15) | (len << 17);
		memcpy(page + 24 + 4 * t, &lp, 4);
	}
	page[12] = 24 + 16;			/* pd_lower */
	memcpy(page + 14, &upper, 2);	/* pd_upper */
	return true;
}

/*
 * One family of pages around a threshold of the estimate.  Every page the
 * estimate skips must be one that no compressor could store in fewer units;
 * the family must hold compressible pages, or it tests nothing.
 */
static void
check_family(const char *name, void (*make) (char *page, int i), int n)
{
	char		page[BLCKSZ];
	char		scratch[BLCKSZ];
	char		msg[200];
	int			skipped = 0;
	int			compressible = 0;
	int			wrong = -1;

	for (int i = 0; i < n; i++)
	{
		bool		skip;

		make(page, i);
		skip = pcs_page_incompressible(page, scratch);
		skipped += skip;
		if (page_compresses(page, skip))
		{
			compressible++;
			if (skip && wrong < 0)
				wrong = i;
		}
	}
	snprintf(msg, sizeof(msg),
			 "estimate, %s: no compressible page skipped (%d of %d pages compressible, %d skipped%s)",
			 name, compressible, n, skipped, wrong >= 0 ? ", a compressible one among them" : "");
	check(wrong < 0 && compressible > 0, msg);
}

/* random bytes with a run of i * 32 zeros in the middle */
static void
family_zero_run(char *page, int i)
{
	make_random_page(page, 100 + i);
	memset(page + 1000, 0, i * 32);
}

/* random bytes drawn from 96 + 4 * i byte values: entropy near 7.5 bits */
static void
family_alphabet(char *page, int i)
{
	unsigned	seed = 200 + i;
	int			k = 96 + 4 * i;

	for (int j = 0; j < BLCKSZ; j++)
		page[j] = (char) (next_rand(&seed) % k);
}

/* random bytes, a stretch of i * 16 of them repeated further on */
static void
family_repeat(char *page, int i)
{
	make_random_page(page, 300 + i);
	memcpy(page + 4000, page + 1234, i * 16);
}

/*
 * random bytes, and every 24-byte row from 1 + i * 4 % 64 in every 64
 * taken from a small dictionary: many short repeats, none long
 */
static void
family_short_repeats(char *page, int i)
{
	unsigned	seed = 400 + i;
	char		dict[8][24];

	make_random_page(page, 500 + i);
	for (int d = 0; d < 8; d++)
		for (int j = 0; j < 24; j++)
			dict[d][j] = (char) next_rand(&seed);
	for (int row = 0; row + 24 <= BLCKSZ; row += 24)
		if (next_rand(&seed) % 64 < 1 + i * 4 % 64)
			memcpy(page + row, dict[next_rand(&seed) & 7], 24);
}

/*
 * random bytes where the estimate's first sample looks (the middle 32 bytes
 * of every sixteenth of the page), text-like bytes of an alphabet of
 * 8 + 8 * i letters everywhere else
 */
static void
family_between_samples(char *page, int i)
{
	unsigned	seed = 600 + i;
	int			step = BLCKSZ / 16;

	for (int j = 0; j < BLCKSZ; j++)
	{
		int			in_block = j % step;

		if (in_block >= (step - 32) / 2 && in_block < (step + 32) / 2)
			page[j] = (char) next_rand(&seed);
		else
			page[j] = (char) ('a' + next_rand(&seed) % (8 + 8 * i));
	}
}

/*
 * random bytes where the first sample looks and in every fourth byte
 * elsewhere, letters of an alphabet of 8 + 8 * i in the other bytes: a test
 * that counted only some of the page's bytes would see random bytes
 */
static void
family_strided(char *page, int i)
{
	unsigned	seed = 700 + i;
	int			step = BLCKSZ / 16;

	for (int j = 0; j < BLCKSZ; j++)
	{
		int			in_block = j % step;

		if ((in_block >= (step - 32) / 2 && in_block < (step + 32) / 2) || j % 4 == 0)
			page[j] = (char) next_rand(&seed);
		else
			page[j] = (char) ('a' + next_rand(&seed) % (8 + 8 * i));
	}
}

/*
 * The incompressibility estimate: it must skip random bytes and pages of
 * compressed TOAST chunks, and never a page a compressor could shrink by a
 * unit.
 */
static void
test_estimate(void)
{
	char		page[BLCKSZ];
	char		scratch[BLCKSZ];
	bool		all;

	all = true;
	for (int i = 0; i < 20; i++)
	{
		make_random_page(page, 1000 + i);
		all &= pcs_page_incompressible(page, scratch);
	}
	check(all, "estimate: pages of random bytes are skipped");

	all = true;
	for (int i = 0; i < 20; i++)
	{
		all &= make_toast_page(page, 2000 + i) &&
			pcs_page_incompressible(page, scratch) && !page_compresses(page, false);
	}
	check(all, "estimate: pages of zstd-compressed TOAST chunks are skipped (and do not compress)");

	memset(page, 0, BLCKSZ);
	check(!pcs_page_incompressible(page, scratch), "estimate: a zero page is not skipped");
	make_text_page(page, 3);
	check(!pcs_page_incompressible(page, scratch), "estimate: a text page is not skipped");

	check_family("random with a zero run", family_zero_run, 40);
	check_family("random over fewer byte values", family_alphabet, 41);
	check_family("random with a repeated stretch", family_repeat, 64);
	check_family("random with short repeated rows", family_short_repeats, 32);
	check_family("random only where the sample looks", family_between_samples, 8);
	check_family("random where the sample looks and in every fourth byte", family_strided, 8);
}
#endif							/* USE_LZ4 && USE_ZSTD */

int
main(void)
{
	test_problem_messages();
	test_header();
	test_other_version();
	test_entry_place();
	test_layout();
	test_directory_word();
	test_directory_location_word();
	test_copy_sparse();
	test_nblocks_word();
	test_nblocks_copies();
	test_generation_word();
	test_version_2();
	test_alloc_word();
	test_entry();
	test_dictionary();
	test_allocation();
	test_shuffle();
	test_choice();
	test_split();
#if defined(USE_LZ4) && defined(USE_ZSTD)
	test_estimate();
#endif
#ifdef USE_ZSTD
	test_codec(PCS_ALGO_ZSTD);
#endif
#ifdef USE_LZ4
	test_codec(PCS_ALGO_LZ4);
#endif
	printf("1..%d\n", ntests);
	/* the build's transposition: pcs_transform.c decides it the same way */
#if defined(USE_SSE2) && !defined(PCS_PORTABLE_TRANSFORMS)
	printf("# transposition: SSE2\n");
#else
	printf("# transposition: portable\n");
#endif
	return nfailed == 0 ? 0 : 1;
}
