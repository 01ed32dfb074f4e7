/*-------------------------------------------------------------------------
 *
 * pcs_estimate.c
 *	  The incompressibility estimate of page-compressed storage (pcs): which
 *	  pages zstd could not store in fewer units, found without asking it.
 *
 * Like the rest of the format layer (pcs_format.c), nothing here does I/O
 * or raises errors.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * The same file is compiled into frontend programs (see fe_utils/pcs_file.c),
 * with FRONTEND defined.
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_estimate.c
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

#include "storage/pcs_format.h"

/*
 * The incompressibility estimate, for zstd.
 *
 * Pages of values that are compressed already (TOAST values compressed by
 * pglz, lz4 or zstd, compressed or encrypted files in bytea columns) do not
 * compress again, and a zstd attempt on each costs several times what
 * storing it raw does.  So before zstd is asked, a cheaper test looks for
 * what zstd would need to save a unit.  A page is stored compressed only
 * when its image is at least one unit smaller than the page, at most
 * BLCKSZ - PCS_MIN_SAVING bytes (7680 of 8192, 7.5 bits per byte), and zstd
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
	return bound > (uint64) 8 * 65536 * (BLCKSZ - PCS_MIN_SAVING + saved);
#else
	return false;
#endif
}
