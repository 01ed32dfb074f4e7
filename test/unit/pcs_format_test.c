/*-------------------------------------------------------------------------
 *
 * pcs_format_test.c
 *	  Unit tests of the page-compressed storage format layer (pcs_format.c):
 *	  header and map-entry validation, the page codec, allocation sizes.
 *
 * Built and run by test/t/003_pcs_format_unit.pl against the installed
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

#ifdef USE_ASSERT_CHECKING
/* Assertion failures abort the test program, as they would the server */
void
ExceptionalCondition(const char *conditionName, const char *fileName,
					 int lineNumber)
{
	fprintf(stderr, "TRAP: failed Assert(\"%s\"), File: \"%s\", Line: %d\n",
			conditionName, fileName, lineNumber);
	abort();
}
#endif

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

/* Header: a fresh header passes, any change to a fixed field is caught */
static void
test_header(void)
{
	PcsHeader	h;
	bool		all_caught = true;

	pcs_header_init(&h, PCS_ALGO_ZSTD, 1);
	check(pcs_header_check(&h) == NULL, "a new header passes its check");

	for (size_t i = 0; i < offsetof(PcsHeader, header_crc) + sizeof(uint32); i++)
	{
		PcsHeader	bad = h;

		((unsigned char *) &bad)[i] ^= 0x10;
		if (pcs_header_check(&bad) == NULL)
			all_caught = false;
	}
	check(all_caught, "a flipped bit in any fixed header byte is caught");

	pg_atomic_write_u32(&h.nblocks, RELSEG_SIZE + 1);
	check(pcs_header_check(&h) != NULL, "a block count past RELSEG_SIZE is caught");

	check(memcmp(&h, "PCS1\377\377\377\177", 8) == 0,
		  "the file starts with the documented magic bytes");
}

/* Map entries: round trip, and every kind of damage is caught */
static void
test_entry(void)
{
	PcsMapEntry e;
	PcsMapEntry empty;
	bool		all_caught = true;

	memset(&empty, 0, sizeof(empty));
	check(pcs_entry_is_empty(&empty) && pcs_entry_check(&empty, 7, 0) == NULL,
		  "an all-zero entry is an empty block");

	pcs_entry_set(&e, 7, 100, 1000, pcs_units_to_allocate(1000, true), false, 0xdeadbeef);
	check(pcs_entry_check(&e, 7, 200) == NULL, "a new entry passes its check");
	check(pcs_entry_check(&e, 8, 200) != NULL, "an entry in the wrong slot is caught");
	check(pcs_entry_check(&e, 7, 101) != NULL,
		  "an entry pointing past the allocated units is caught");

	for (size_t i = 0; i < sizeof(e); i++)
	{
		for (int bit = 0; bit < 8; bit++)
		{
			PcsMapEntry bad = e;

			((unsigned char *) &bad)[i] ^= 1 << bit;
			if (pcs_entry_check(&bad, 7, 200) == NULL)
				all_caught = false;
		}
	}
	check(all_caught, "every single-bit flip of an entry is caught");

	pcs_entry_set(&e, 3, 0, BLCKSZ, PCS_RAW_UNITS, true, 1);
	check(pcs_entry_check(&e, 3, PCS_RAW_UNITS) == NULL, "a raw entry passes its check");
}

/* Allocation sizes: exact for first images, slack for grown ones */
static void
test_allocation(void)
{
	bool		exact = true;
	bool		slack = true;

	for (int len = 1; len < BLCKSZ; len++)
	{
		int			first = pcs_units_to_allocate(len, false);
		int			grown = pcs_units_to_allocate(len, true);

		if (first != pcs_units_for(len))
			exact = false;
		if (grown < pcs_units_for(len) + 1 || grown > PCS_MAX_UNITS)
			slack = false;
	}
	check(exact, "a block's first image gets exactly the units it needs");
	check(slack, "a grown image gets at least one unit of slack, within bounds");
	check(pcs_units_to_allocate(BLCKSZ, true) == PCS_RAW_UNITS &&
		  pcs_units_to_allocate(BLCKSZ, false) == PCS_RAW_UNITS,
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
	bool		all_caught;
	const char *name = pcs_algorithm_name(algo);

	memset(page, 0, BLCKSZ);
	len = pcs_compress_page(algo, 1, page, comp, sizeof(comp));
	snprintf(msg, sizeof(msg), "%s: a zero page compresses to one unit", name);
	check(len > 0 && pcs_units_for(len) == 1, msg);

	make_text_page(page, 42);
	len = pcs_compress_page(algo, 1, page, comp, sizeof(comp));
	snprintf(msg, sizeof(msg), "%s: a text page compresses and saves units", name);
	check(len > 0 && pcs_units_for(len) < PCS_RAW_UNITS, msg);
	snprintf(msg, sizeof(msg), "%s: it decompresses to the same page", name);
	check(len > 0 && pcs_decompress_page(algo, comp, len, back) == NULL &&
		  memcmp(page, back, BLCKSZ) == 0, msg);

	snprintf(msg, sizeof(msg), "%s: a truncated image is an error", name);
	check(len > 1 && pcs_decompress_page(algo, comp, len - 1, back) != NULL, msg);

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
		(void) pcs_decompress_page(algo, bad, len, back);
		if (pcs_data_crc(bad, len) == pcs_data_crc(comp, len))
			all_caught = false;
	}
	snprintf(msg, sizeof(msg), "%s: every garbled image is caught by the data CRC, and the decoder survives it", name);
	check(all_caught, msg);

	make_random_page(page, 7);
	snprintf(msg, sizeof(msg), "%s: a random page is stored raw", name);
	check(pcs_compress_page(algo, 1, page, comp, sizeof(comp)) == -1, msg);
}

int
main(void)
{
	test_header();
	test_entry();
	test_allocation();
#ifdef USE_ZSTD
	test_codec(PCS_ALGO_ZSTD);
#endif
#ifdef USE_LZ4
	test_codec(PCS_ALGO_LZ4);
#endif
	printf("1..%d\n", ntests);
	return nfailed == 0 ? 0 : 1;
}
