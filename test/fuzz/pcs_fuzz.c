/*-------------------------------------------------------------------------
 *
 * pcs_fuzz.c
 *	  Fuzz target of the page-compressed storage format layer: drives its
 *	  header and map-entry checks and its page decompressors with arbitrary
 *	  bytes, the way the storage manager's read path does; and, through
 *	  toast_fuzz.c, the header checks of zstd TOAST values.
 *
 * One input is one operation, chosen by its first byte (the low three bits;
 * bit 0x80 asks the harness to recompute the checksums the input carries,
 * so that mutations get past them and reach the code behind them):
 *
 *	 0 header	   a segment header (512 bytes, below): pcs_header_check(),
 *				   pcs_header_other_version(), pcs_nblocks_decode(); then,
 *				   if the input goes on, a format 5 directory slot (8
 *				   bytes) and a map page number (2): pcs_directory_decode();
 *				   then, if it goes on, the header's two directory words
 *				   (8 each): pcs_directory_location_decode()
 *	 1 entry	   segblock (4 bytes), unit limit (4), a map entry (16):
 *				   pcs_entry_check(), with format 3's units, or with
 *				   format 2's if bit 0x40 of the first byte is set
 *	 2 decompress  algorithm (1 byte), then an image: pcs_decompress_page()
 *	 3 segment	   a segment with its map cut to the blocks it has: header
 *				   (512 bytes, below), its block count's entries, data area;
 *				   every block is
 *				   read as pcs_read_block() in pcs.c reads it (entry check
 *				   against the data area's size, image read, data CRC,
 *				   decompression).  The seeds are real segment files.
 *	 4 roundtrip   algorithm (1), capacity (2), a page: pcs_compress_page()
 *				   then pcs_decompress_page() must give the page back
 *	 5 toast value a zstd TOAST value from va_tcinfo on (toast_fuzz.c)
 *	 6 toast external
 *				   a TOAST pointer's sizes and the value's chunks
 *				   (toast_fuzz.c; bit 0x80 makes the pointer agree)
 *	 7 dictionary  header (512 bytes), the dictionary sector's current word
 *				   (8), a dictionary number (1) and its record (16), the
 *				   dictionary's length (2) and bytes, then an image: the
 *				   word and record checks, the dictionary prepared as pcs_dict.c
 *				   prepares it once its CRC matches, the image decoded with
 *				   it, and a page made of the image's bytes compressed with
 *				   it and given back (and refused without it)
 *
 * A header in an input is 512 bytes: the first 48 are those of a segment's
 * first sector (the fixed fields, and format 2's shared words), and the
 * next 32 hold format 3's shared words (allocation, generation, the two
 * block count copies), which a segment keeps in sectors 1 to 3; the
 * harness puts them there (load_header()).  So inputs stay small, and the
 * seeds made from format 2 files remain format 2 headers.
 *
 * Every buffer handed to the format layer has exactly the size the read path
 * gives it (heap blocks of that size, so AddressSanitizer sees a byte read
 * or written past them), and what a check accepts is checked again here:
 * an accepted header or entry that the read path could not use safely is a
 * bug too, reported with abort().
 *
 * Built with clang -fsanitize=fuzzer,address,undefined by `make fuzz`, and
 * with gcc and a small main() (replay_main.c) that feeds the committed
 * corpus by test/pcs/002_pcs_fuzz_replay.pl, so `make check` needs no clang.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/fuzz/pcs_fuzz.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/pg_crc32c.h"
#include "storage/pcs_format.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the zstd TOAST operations, in toast_fuzz.c */
extern void toast_fuzz_value(const uint8_t *data, size_t size);
extern void toast_fuzz_external(const uint8_t *data, size_t size, bool fixup);

#define FUZZ_OP_HEADER		0
#define FUZZ_OP_ENTRY		1
#define FUZZ_OP_DECOMPRESS	2
#define FUZZ_OP_SEGMENT		3
#define FUZZ_OP_ROUNDTRIP	4
#define FUZZ_OP_TOAST		5
#define FUZZ_OP_TOAST_EXTERNAL	6
#define FUZZ_OP_DICTIONARY	7
#define FUZZ_FIXUP			0x80

/* Size of the header as a segment file holds it in the harness's input */
#define FUZZ_HEADER_BYTES	512

/* Report a property the format layer broke, and stop */
static void
fuzz_fail(const char *what)
{
	fprintf(stderr, "pcs_fuzz: %s\n", what);
	abort();
}

/* Read a little-endian uint32 from unaligned input */
static uint32
get_u32(const uint8_t *p)
{
	return (uint32) p[0] | ((uint32) p[1] << 8) | ((uint32) p[2] << 16) |
		((uint32) p[3] << 24);
}

/* CRC32C of len bytes, as pcs_format.c computes its checksums */
static uint32
crc_of(const void *p, size_t len, const void *extra, size_t extralen)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, p, len);
	if (extra != NULL)
		COMP_CRC32C(crc, extra, extralen);
	FIN_CRC32C(crc);
	return crc;
}

/* A segment header from the 512 bytes of an input (see above) */
static PcsHeader *
load_header(const uint8_t *data, size_t size)
{
	PcsHeader  *h = calloc(1, sizeof(PcsHeader));
	uint8_t		in[FUZZ_HEADER_BYTES] = {0};
	uint64		w[4];

	memcpy(in, data, Min(size, FUZZ_HEADER_BYTES));
	memcpy(h, in, offsetof(PcsHeader, pad_identity));
	memcpy(w, in + offsetof(PcsHeader, pad_identity), sizeof(w));
	pg_atomic_write_u64(&h->alloc.word, w[0]);
	pg_atomic_write_u64(&h->alloc.second, w[1]);
	pg_atomic_write_u64(&h->nblocks[0].word, w[2]);
	pg_atomic_write_u64(&h->nblocks[1].word, w[3]);
	return h;
}

/*
 * Make a header's checksum match its fields (README.pcs: CRC32C of them),
 * then the checks of its block count copies match the count each holds,
 * capped at max_blocks, as segment 0.
 */
static void
fixup_header(PcsHeader *header, uint32 max_blocks)
{
	header->header_crc = crc_of(header, offsetof(PcsHeader, header_crc),
								NULL, 0);
	if (!pcs_version_known(header->version))
		return;
	for (int copy = 0; copy < pcs_header_nblocks_copies(header); copy++)
	{
		pg_atomic_uint64 *word = pcs_header_nblocks(header, copy);
		uint32		count = ~(uint32) pg_atomic_read_u64(word);

		pg_atomic_write_u64(word, pcs_nblocks_word(header, 0, copy,
												   Min(count, max_blocks)));
	}
}

/* Make an entry's checksum match its fields and its slot */
static void
fixup_entry(PcsMapEntry *entry, BlockNumber segblock)
{
	if (pcs_entry_is_empty(entry))
		return;
	entry->entry_crc = crc_of(entry, offsetof(PcsMapEntry, entry_crc),
							  &segblock, sizeof(segblock));
}

/* A header that passed pcs_header_check() must be one pcs.c can use */
static void
verify_accepted_header(const PcsHeader *h)
{
	if (h->magic != PCS_MAGIC || !pcs_version_known(h->version))
		fuzz_fail("accepted a header with a foreign magic or version");
	if (h->algorithm != PCS_ALGO_ZSTD && h->algorithm != PCS_ALGO_LZ4)
		fuzz_fail("accepted a header with an unknown algorithm");
	if (h->unit_shift != (h->version == PCS_FORMAT_VERSION_2 ?
						  PCS_V2_UNIT_SHIFT : PCS_UNIT_SHIFT) ||
		h->blcksz != BLCKSZ ||
		h->relseg_size != RELSEG_SIZE)
		fuzz_fail("accepted a header of another build");
	if (h->algorithm == PCS_ALGO_ZSTD &&
		(h->level < PCS_ZSTD_MIN_LEVEL || h->level > PCS_ZSTD_MAX_LEVEL))
		fuzz_fail("accepted a header with a zstd level out of range");
	if ((h->flags & ~PCS_HEADER_KNOWN_FLAGS) != 0 ||
		(h->version == PCS_FORMAT_VERSION_2 && h->flags != 0) ||
		((h->flags & PCS_HEADER_DICTIONARIES) && h->algorithm != PCS_ALGO_ZSTD))
		fuzz_fail("accepted a header with unknown flags");
}

/* A non-empty entry that passed pcs_entry_check() must be readable */
static void
verify_accepted_entry(const PcsMapEntry *e, uint32 unit_limit, int shift)
{
	if (pcs_entry_is_empty(e))
		return;
	if (e->stored == 0 || e->stored > BLCKSZ)
		fuzz_fail("accepted an entry whose image does not fit a block");
	if ((e->flags & PCS_ENTRY_RAW) && e->stored != BLCKSZ)
		fuzz_fail("accepted a raw entry that is not a whole block");
	if ((e->flags & PCS_ENTRY_RAW) &&
		(e->flags & (PCS_ENTRY_SHUFFLED | PCS_ENTRY_SPLIT)))
		fuzz_fail("accepted a raw entry marked as shuffled or split");
	if ((e->flags & PCS_ENTRY_SHUFFLED) && (e->flags & PCS_ENTRY_SPLIT))
		fuzz_fail("accepted an entry marked as both shuffled and split");
	if ((e->flags & PCS_ENTRY_RAW) && (e->flags & PCS_ENTRY_DICTIONARY))
		fuzz_fail("accepted a raw entry naming a dictionary");
	if (e->units < pcs_units_for(e->stored, shift) ||
		e->units > pcs_raw_units(shift) + pcs_raw_units(shift) / 4)
		fuzz_fail("accepted an entry with a bad unit count");
	if ((uint64) e->first_unit + e->units > unit_limit)
		fuzz_fail("accepted an entry pointing past the allocated units");
}

/* Operation header: check a header, from the input or with its CRC fixed */
static void
fuzz_header(const uint8_t *data, size_t size, bool fixup)
{
	PcsHeader  *h = load_header(data, size);
	uint32		version;
	BlockNumber nblocks = InvalidBlockNumber;
	int			sound;

	if (fixup)
		fixup_header(h, PG_UINT32_MAX);
	version = pcs_header_other_version(h);
	if (pcs_header_check(h) == PCS_SOUND)
	{
		verify_accepted_header(h);
		if (version != 0)
			fuzz_fail("accepted a header and called it of another version");
	}
	else if (pcs_version_known(version))
		fuzz_fail("called a header of a version this build reads one of another");

	/* a block count the words vouch for is one pcs.c can use */
	if (pcs_version_known(h->version))
	{
		for (int copy = 0; copy < pcs_header_nblocks_copies(h); copy++)
		{
			uint64		word = pg_atomic_read_u64(pcs_header_nblocks(h, copy));

			if (pcs_nblocks_decode(h, 0, copy, word, &nblocks) != PCS_SOUND)
				continue;
			if (nblocks > RELSEG_SIZE)
				fuzz_fail("accepted a block count word with too many blocks");
			if (pcs_nblocks_word(h, 0, copy, nblocks) != word)
				fuzz_fail("accepted a block count word that does not round-trip");
		}
		if (pcs_nblocks_read(h, 0, &nblocks, &sound) == PCS_SOUND &&
			(nblocks > RELSEG_SIZE || sound < 1))
			fuzz_fail("read a block count no sound copy holds");
	}

	/*
	 * A directory slot, of a header that passed its check as the storage
	 * manager reads slots only then: one the check accepts locates a whole
	 * map page below the last unit, and is the slot the format layer writes
	 * for it.
	 */
	if (size >= FUZZ_HEADER_BYTES + 8 + 2 && pcs_header_check(h) == PCS_SOUND)
	{
		uint64		slot;
		int			page;
		bool		present;
		uint32		unit;

		memcpy(&slot, data + FUZZ_HEADER_BYTES, sizeof(slot));
		page = (int) ((data[FUZZ_HEADER_BYTES + 8] |
					   (data[FUZZ_HEADER_BYTES + 9] << 8)) % PCS_MAP_PAGES);
		if (fixup && slot != 0)
			slot = pcs_directory_word(h, 0, page, ~(uint32) slot);
		if (pcs_directory_decode(h, 0, page, slot, &present,
								 &unit) == PCS_SOUND)
		{
			if (!present && slot != 0)
				fuzz_fail("took a slot that is not zeros for no map page");
			if (present &&
				((uint64) unit + pcs_map_page_units(h->unit_shift) > PG_UINT32_MAX ||
				 pcs_directory_word(h, 0, page, unit) != slot))
				fuzz_fail("accepted a directory slot the storage manager cannot use");
		}
		else if (slot == 0)
			fuzz_fail("refused a slot of zeros");
	}

	/*
	 * The header's two directory words, of a header of version 5 that passed
	 * its check, as the storage manager reads them only then: a word the
	 * check accepts locates a whole directory below the last unit and is the
	 * word the format layer writes for its copy.  They are put where a
	 * segment keeps them, so that they are read through the header's
	 * accessor.  With the fixup bit each is sealed for its copy.
	 */
	if (size >= FUZZ_HEADER_BYTES + 8 + 2 + 16 &&
		pcs_header_check(h) == PCS_SOUND && pcs_header_has_directory(h))
	{
		for (int copy = 0; copy < 2; copy++)
		{
			uint64		word;
			bool		present;
			uint32		unit;

			memcpy(&word, data + FUZZ_HEADER_BYTES + 10 + 8 * copy,
				   sizeof(word));
			if (fixup && word != 0)
				word = pcs_directory_location_word(h, 0, copy,
												   ~(uint32) word);
			pg_atomic_write_u64(pcs_header_directory(h, copy), word);
			word = pg_atomic_read_u64(pcs_header_directory(h, copy));
			if (pcs_directory_location_decode(h, 0, copy, word, &present,
											  &unit) == PCS_SOUND)
			{
				if (!present && word != 0)
					fuzz_fail("took a directory word that is not zeros for no directory");
				if (present &&
					((uint64) unit + pcs_directory_units(h->unit_shift) > PG_UINT32_MAX ||
					 pcs_directory_location_word(h, 0, copy, unit) != word))
					fuzz_fail("accepted a directory word the storage manager cannot use");
			}
			else if (word == 0)
				fuzz_fail("refused a directory word of zeros");
			else if (present)
				fuzz_fail("located a directory with a word it refused");
		}
	}
	free(h);
}

/* Operation entry: check one map entry for a slot and a unit limit */
static void
fuzz_entry(const uint8_t *data, size_t size, bool fixup, int shift)
{
	PcsMapEntry *e;
	BlockNumber segblock;
	uint32		limit;

	if (size < 8 + sizeof(PcsMapEntry))
		return;
	segblock = get_u32(data) % RELSEG_SIZE;
	limit = get_u32(data + 4);
	e = malloc(sizeof(PcsMapEntry));
	memcpy(e, data + 8, sizeof(PcsMapEntry));
	if (fixup)
		fixup_entry(e, segblock);
	if (pcs_entry_check(e, segblock, limit, shift) == PCS_SOUND)
		verify_accepted_entry(e, limit, shift);
	free(e);
}

/*
 * Decompress an image of exactly len bytes, as the read path hands it over,
 * into a block of exactly BLCKSZ bytes.
 */
static void
decompress_exact(PcsAlgorithm algo, const uint8_t *src, size_t len)
{
	char	   *image = malloc(Max(len, 1));
	char	   *page = malloc(BLCKSZ);

	memcpy(image, src, len);
	(void) pcs_decompress_page(algo, image, (int) len, page);
	/* and, as a shuffled or split image, through the inverse of each */
	(void) pcs_decode_image(algo, PCS_ENTRY_SHUFFLED, image, (int) len, page, NULL);
	(void) pcs_decode_image(algo, PCS_ENTRY_SPLIT, image, (int) len, page, NULL);
	free(page);
	free(image);
}

/* Operation decompress: an arbitrary image for either decompressor */
static void
fuzz_decompress(const uint8_t *data, size_t size)
{
	if (size < 1)
		return;
	/* the read path never hands over more than a block's worth */
	decompress_exact((PcsAlgorithm) (data[0] % 4), data + 1,
					 Min(size - 1, BLCKSZ));
}

/*
 * Operation segment: read every block of a segment as pcs_read_block()
 * does.  The input holds the header, the map entries of its blocks and the
 * data area; the unit limit is the size of the data area, as it is for a
 * segment opened in a new server generation.
 */
static void
fuzz_segment(const uint8_t *data, size_t size, bool fixup)
{
	PcsHeader  *h;
	BlockNumber nblocks;
	size_t		map_bytes;
	const uint8_t *map;
	uint8_t    *area;
	size_t		area_bytes;
	uint32		limit;
	int			sound;

	if (size < FUZZ_HEADER_BYTES)
		return;
	h = load_header(data, size);
	/* keep runs short: at most 64 blocks of the input are read */
	if (fixup)
		fixup_header(h, 64);
	if (pcs_header_check(h) != PCS_SOUND ||
		pcs_nblocks_read(h, 0, &nblocks, &sound) != PCS_SOUND)
	{
		free(h);
		return;
	}
	verify_accepted_header(h);

	map = data + FUZZ_HEADER_BYTES;
	map_bytes = Min((size_t) Min(nblocks, 64) * sizeof(PcsMapEntry),
					size - FUZZ_HEADER_BYTES);
	nblocks = map_bytes / sizeof(PcsMapEntry);
	area_bytes = size - FUZZ_HEADER_BYTES - nblocks * sizeof(PcsMapEntry);
	area = malloc(Max(area_bytes, 1));
	memcpy(area, map + nblocks * sizeof(PcsMapEntry), area_bytes);
	limit = (uint32) (area_bytes >> h->unit_shift);

	for (BlockNumber b = 0; b < nblocks; b++)
	{
		PcsMapEntry entry;
		char	   *image;
		char	   *page;
		uint64		off;

		memcpy(&entry, map + b * sizeof(PcsMapEntry), sizeof(entry));
		if (fixup)
			fixup_entry(&entry, b);
		if (pcs_entry_check(&entry, b, limit, h->unit_shift) != PCS_SOUND)
			continue;
		verify_accepted_entry(&entry, limit, h->unit_shift);
		if (pcs_entry_is_empty(&entry))
			continue;

		/* FileRead of entry.stored bytes into a block-sized buffer */
		image = malloc(BLCKSZ);
		page = malloc(BLCKSZ);
		off = (uint64) entry.first_unit << h->unit_shift;
		if (off + entry.stored <= area_bytes)
		{
			memcpy(image, area + off, entry.stored);
			if (fixup)
				entry.data_crc = pcs_data_crc(image, entry.stored);
			if (pcs_data_crc(image, entry.stored) == entry.data_crc)
			{
				(void) pcs_decode_image(h->algorithm, entry.flags, image,
										entry.stored, page, NULL);
			}
		}
		free(page);
		free(image);
	}
	free(area);
	free(h);
}

/* Operation roundtrip: what is compressed decompresses to the same page */
static void
fuzz_roundtrip(const uint8_t *data, size_t size)
{
	PcsAlgorithm algo;
	int			capacity;
	char	   *page;
	char	   *dest;
	char	   *back;
	int			len;
	uint8		flags;

	if (size < 3)
		return;
	algo = (data[0] & 1) ? PCS_ALGO_LZ4 : PCS_ALGO_ZSTD;
	capacity = (int) (((uint32) data[1] | ((uint32) data[2] << 8)) % (BLCKSZ + 1));
	page = calloc(1, BLCKSZ);
	memcpy(page, data + 3, Min(size - 3, BLCKSZ));
	dest = malloc(Max(capacity, 1));
	back = malloc(BLCKSZ);

	/* the shuffle or split alone gives any page back */
	if ((flags = pcs_page_shuffle(page, back)) != 0)
	{
		char	   *shuffled = malloc(BLCKSZ);

		memcpy(shuffled, back, BLCKSZ);
		if (pcs_page_unshuffle(shuffled, back, flags) != PCS_SOUND)
			fuzz_fail("a shuffled page does not unshuffle");
		if (memcmp(page, back, BLCKSZ) != 0)
			fuzz_fail("a shuffled page unshuffles to other bytes");
		/* and its damaged image is refused or gives some page */
		shuffled[size % BLCKSZ] ^= 0x5a;
		(void) pcs_page_unshuffle(shuffled, back, flags);
		free(shuffled);
	}

	len = pcs_compress_page(algo, 1, page, dest, capacity, &flags, NULL, NULL, 0);
	if (len > capacity)
		fuzz_fail("compression wrote more than its capacity");
	if ((len < 0) != (flags == PCS_ENTRY_RAW))
		fuzz_fail("compression's flags do not say whether the page is raw");
	if (len >= 0)
	{
		char	   *image = malloc(len);

		memcpy(image, dest, len);
		if (pcs_decode_image(algo, flags, image, len, back, NULL) != PCS_SOUND)
			fuzz_fail("a compressed page does not decompress");
		if (memcmp(page, back, BLCKSZ) != 0)
			fuzz_fail("a compressed page decompresses to other bytes");
		free(image);
	}
	free(back);
	free(dest);
	free(page);
}

/*
 * A dictionary sector's word and record, and a dictionary and an image, as
 * pcs_dict.c's pcs_seg_dictionary() and pcs.c's read path use them
 */
static void
fuzz_dictionary(const uint8_t *data, size_t size, bool fixup)
{
	PcsHeader  *h;
	PcsDictRecord record;
	uint64		word;
	int			number;
	int			n = 0;
	size_t		dlen;
	const uint8_t *dict;
	const uint8_t *rest;
	size_t		restlen;
	PcsDict    *prepared = NULL;

	if (size < FUZZ_HEADER_BYTES + 8 + 1 + 16 + 2)
		return;
	h = load_header(data, FUZZ_HEADER_BYTES);
	if (fixup)
		fixup_header(h, RELSEG_SIZE);
	data += FUZZ_HEADER_BYTES;
	size -= FUZZ_HEADER_BYTES;
	memcpy(&word, data, 8);
	number = 1 + data[8] % PCS_MAX_DICTIONARIES;
	memcpy(&record, data + 9, sizeof(record));
	dlen = (size_t) data[25] | ((size_t) data[26] << 8);
	data += 27;
	size -= 27;
	dlen = Min(dlen, size);
	dict = data;
	rest = data + dlen;
	restlen = size - dlen;

	/* the current word: a number, if any, is one an entry can hold */
	switch (pcs_dict_decode(h, 0, word, 1, &n))
	{
		case PCS_DICT_READY:
		case PCS_DICT_INSTALLING:
			if (n < 1 || n > PCS_MAX_DICTIONARIES)
				fuzz_fail("decoded a dictionary number out of range");
			break;
		case PCS_DICT_NONE:
			break;
	}

	if (pcs_header_check(h) != PCS_SOUND)
	{
		free(h);
		return;
	}
	if (fixup)
	{
		/* the record's checksums, as pcs_format.c computes them */
		uint32		input[6];

		record.first_unit %= 100000;
		record.bytes = (uint32) dlen;
		record.data_crc = pcs_data_crc((const char *) dict, (int) dlen);
		input[0] = h->header_crc;
		input[1] = 0;
		input[2] = 0x52;		/* 'R' */
		input[3] = (uint32) number;
		input[4] = record.first_unit;
		input[5] = record.bytes;
		record.record_crc = crc_of(input, sizeof(input), &record.data_crc,
								   sizeof(record.data_crc));
	}
	if (pcs_dict_record_check(h, 0, number, &record, h->unit_shift) == PCS_SOUND)
	{
		char	   *bytes;

		if ((h->flags & PCS_HEADER_DICTIONARIES) == 0 ||
			record.bytes < PCS_MIN_DICTIONARY_SIZE ||
			record.bytes > PCS_MAX_DICTIONARY_SIZE ||
			(uint64) record.first_unit + pcs_units_for(record.bytes, h->unit_shift) > PG_UINT32_MAX)
			fuzz_fail("accepted a dictionary record the storage manager cannot use");
		/* pcs_dict.c reads record.bytes bytes and checks their CRC */
		if (record.bytes <= dlen)
		{
			bytes = malloc(record.bytes);
			memcpy(bytes, dict, record.bytes);
			if (pcs_data_crc(bytes, record.bytes) == record.data_crc)
				prepared = pcs_dict_prepare(h->algorithm, h->level, bytes,
											record.bytes);
			free(bytes);
		}
	}

	if (prepared != NULL)
	{
		char	   *image = malloc(Max(restlen, 1));
		char	   *page = malloc(BLCKSZ);
		char	   *back = malloc(BLCKSZ);
		char	   *dest = malloc(BLCKSZ);
		uint8		flags = (uint8) (number << PCS_DICTIONARY_SHIFT);
		int			len;

		/* any image, decoded with the dictionary, in every way */
		memcpy(image, rest, restlen);
		(void) pcs_decode_image(h->algorithm, flags, image, (int) restlen,
								page, prepared);
		(void) pcs_decode_image(h->algorithm, flags | PCS_ENTRY_SHUFFLED, image,
								(int) restlen, page, prepared);
		(void) pcs_decode_image(h->algorithm, flags | PCS_ENTRY_SPLIT, image,
								(int) restlen, page, prepared);

		/* a page compressed with it comes back with it, and only with it */
		memset(page, 0, BLCKSZ);
		memcpy(page, rest, Min(restlen, BLCKSZ));
		len = pcs_compress_page(h->algorithm, h->level, page, dest, BLCKSZ,
								&flags, NULL, prepared, number);
		if ((len < 0) != (flags == PCS_ENTRY_RAW))
			fuzz_fail("compression's flags do not say whether the page is raw");
		if (len >= 0)
		{
			char	   *img = malloc(len);

			memcpy(img, dest, len);
			if (pcs_entry_dictionary(flags) != number)
				fuzz_fail("an image compressed with a dictionary does not name it");
			if (pcs_decode_image(h->algorithm, flags, img, len, back,
								 prepared) != PCS_SOUND ||
				memcmp(page, back, BLCKSZ) != 0)
				fuzz_fail("a page compressed with a dictionary does not come back");
			if (pcs_decode_image(h->algorithm, flags, img, len, back,
								 NULL) != PCS_IMAGE_NO_DICTIONARY)
				fuzz_fail("an image naming a dictionary decoded without one");
			free(img);
		}
		free(dest);
		free(back);
		free(page);
		free(image);
		pcs_dict_free(prepared);
	}
	free(h);
}

/* The fuzzer's entry point: one input, one operation */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool		fixup;

	if (size < 1)
		return 0;
	fixup = (data[0] & FUZZ_FIXUP) != 0;
	switch (data[0] & 0x07)
	{
		case FUZZ_OP_HEADER:
			fuzz_header(data + 1, size - 1, fixup);
			break;
		case FUZZ_OP_ENTRY:
			fuzz_entry(data + 1, size - 1, fixup,
					   (data[0] & 0x40) ? PCS_V2_UNIT_SHIFT : PCS_UNIT_SHIFT);
			break;
		case FUZZ_OP_DECOMPRESS:
			fuzz_decompress(data + 1, size - 1);
			break;
		case FUZZ_OP_SEGMENT:
			fuzz_segment(data + 1, size - 1, fixup);
			break;
		case FUZZ_OP_ROUNDTRIP:
			fuzz_roundtrip(data + 1, size - 1);
			break;
		case FUZZ_OP_TOAST:
			toast_fuzz_value(data + 1, size - 1);
			break;
		case FUZZ_OP_TOAST_EXTERNAL:
			toast_fuzz_external(data + 1, size - 1, fixup);
			break;
		case FUZZ_OP_DICTIONARY:
			fuzz_dictionary(data + 1, size - 1, fixup);
			break;
		default:
			break;
	}
	return 0;
}
