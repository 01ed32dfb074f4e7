/*-------------------------------------------------------------------------
 *
 * pcs_transform.c
 *	  Reversible page transforms of page-compressed storage (pcs): the page
 *	  shuffle and the index split, applied before compression.
 *
 * Like the rest of the format layer (pcs_format.c), nothing here does I/O
 * or raises errors: the inverse returns PCS_SOUND, or what is wrong with an
 * image.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * The same file is compiled into frontend programs (see fe_utils/pcs_file.c),
 * with FRONTEND defined.
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_transform.c
 *
 *-------------------------------------------------------------------------
 */
#ifndef FRONTEND
#include "postgres.h"
#else
#include "postgres_fe.h"
#endif

#ifndef FRONTEND
#include "access/itup.h"
#include "access/nbtree.h"
#endif
#include "port/pg_bitutils.h"
#include "port/simd.h"
#include "storage/bufpage.h"
#include "storage/pcs_format.h"

/*
 * The transposition runs in SSE2 registers where the platform has them,
 * unless the build asks for the portable code alone: the unit test is built
 * both ways (test/pcs/001_pcs_format_unit.pl), so that the code other
 * platforms run is tested here too.  Both make the same bytes.
 */
#if defined(USE_SSE2) && !defined(PCS_PORTABLE_TRANSFORMS)
#define PCS_USE_SSE2
#endif

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
 * round trip, and test/bench/compression/runs/results-ratio.md what it saves.
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

#ifdef PCS_USE_SSE2
/*
 * 16 rows of 8 bytes (src, rows spitch bytes apart) to 8 columns of 16 bytes
 * (dst, columns dpitch bytes apart), in SSE2 registers: row k and row k + 8
 * share a register, then three rounds of interleaving (bytes, pairs, fours)
 * leave two columns of eight rows in each register, whose halves are joined.
 * Written out without arrays or loops, so that the compiler keeps every
 * value in a register: with arrays, GCC at -O2 kept them on the stack, and
 * the transposition cost twice lz4's decoding of the same page.
 */
static inline void
pcs_transpose16x8(const char *src, int spitch, char *dst, int dpitch)
{
#define PCS_ROW(k) _mm_loadl_epi64((const __m128i *) (src + (k) * spitch))
	__m128i		x0 = _mm_unpacklo_epi64(PCS_ROW(0), PCS_ROW(8));
	__m128i		x1 = _mm_unpacklo_epi64(PCS_ROW(1), PCS_ROW(9));
	__m128i		x2 = _mm_unpacklo_epi64(PCS_ROW(2), PCS_ROW(10));
	__m128i		x3 = _mm_unpacklo_epi64(PCS_ROW(3), PCS_ROW(11));
	__m128i		x4 = _mm_unpacklo_epi64(PCS_ROW(4), PCS_ROW(12));
	__m128i		x5 = _mm_unpacklo_epi64(PCS_ROW(5), PCS_ROW(13));
	__m128i		x6 = _mm_unpacklo_epi64(PCS_ROW(6), PCS_ROW(14));
	__m128i		x7 = _mm_unpacklo_epi64(PCS_ROW(7), PCS_ROW(15));
#undef PCS_ROW
	/* rows 2i and 2i + 1 interleaved; rows 2i + 8 and 2i + 9 */
	__m128i		y0 = _mm_unpacklo_epi8(x0, x1);
	__m128i		y1 = _mm_unpackhi_epi8(x0, x1);
	__m128i		y2 = _mm_unpacklo_epi8(x2, x3);
	__m128i		y3 = _mm_unpackhi_epi8(x2, x3);
	__m128i		y4 = _mm_unpacklo_epi8(x4, x5);
	__m128i		y5 = _mm_unpackhi_epi8(x4, x5);
	__m128i		y6 = _mm_unpacklo_epi8(x6, x7);
	__m128i		y7 = _mm_unpackhi_epi8(x6, x7);

	/* columns 0-3 and 4-7 of rows 0-3, 4-7, 8-11 and 12-15 */
	x0 = _mm_unpacklo_epi16(y0, y2);
	x1 = _mm_unpackhi_epi16(y0, y2);
	x2 = _mm_unpacklo_epi16(y4, y6);
	x3 = _mm_unpackhi_epi16(y4, y6);
	x4 = _mm_unpacklo_epi16(y1, y3);
	x5 = _mm_unpackhi_epi16(y1, y3);
	x6 = _mm_unpacklo_epi16(y5, y7);
	x7 = _mm_unpackhi_epi16(y5, y7);
	/* columns 2m and 2m + 1 of rows 0-7 (y0-y3) and of rows 8-15 (y4-y7) */
	y0 = _mm_unpacklo_epi32(x0, x2);
	y1 = _mm_unpackhi_epi32(x0, x2);
	y2 = _mm_unpacklo_epi32(x1, x3);
	y3 = _mm_unpackhi_epi32(x1, x3);
	y4 = _mm_unpacklo_epi32(x4, x6);
	y5 = _mm_unpackhi_epi32(x4, x6);
	y6 = _mm_unpacklo_epi32(x5, x7);
	y7 = _mm_unpackhi_epi32(x5, x7);
	_mm_storeu_si128((__m128i *) dst, _mm_unpacklo_epi64(y0, y4));
	_mm_storeu_si128((__m128i *) (dst + dpitch), _mm_unpackhi_epi64(y0, y4));
	_mm_storeu_si128((__m128i *) (dst + 2 * dpitch), _mm_unpacklo_epi64(y1, y5));
	_mm_storeu_si128((__m128i *) (dst + 3 * dpitch), _mm_unpackhi_epi64(y1, y5));
	_mm_storeu_si128((__m128i *) (dst + 4 * dpitch), _mm_unpacklo_epi64(y2, y6));
	_mm_storeu_si128((__m128i *) (dst + 5 * dpitch), _mm_unpackhi_epi64(y2, y6));
	_mm_storeu_si128((__m128i *) (dst + 6 * dpitch), _mm_unpacklo_epi64(y3, y7));
	_mm_storeu_si128((__m128i *) (dst + 7 * dpitch), _mm_unpackhi_epi64(y3, y7));
}

/* Store rows first and first + 1 (v's halves) at p, pitch apart, if < nrows */
static inline void
pcs_store_rows(char *p, int pitch, __m128i v, int first, int nrows)
{
	if (first < nrows)
		_mm_storel_epi64((__m128i *) (p + first * pitch), v);
	if (first + 1 < nrows)
		_mm_storeh_pd((double *) (p + (first + 1) * pitch), _mm_castsi128_pd(v));
}

/*
 * The inverse: 8 columns of 16 bytes (src, columns spitch bytes apart) to
 * 16 rows of 8 bytes (dst, rows dpitch bytes apart).  Interleaving bytes,
 * pairs and fours of two columns, then of their results, leaves two whole
 * rows in each register.  Written out like the forward direction.
 */
static inline void
pcs_untranspose8x16(const char *src, int spitch, char *dst, int dpitch)
{
#define PCS_COLUMN(i) _mm_loadu_si128((const __m128i *) (src + (i) * spitch))
	__m128i		a0 = PCS_COLUMN(0);
	__m128i		a1 = PCS_COLUMN(1);
	__m128i		a2 = PCS_COLUMN(2);
	__m128i		a3 = PCS_COLUMN(3);
	__m128i		a4 = PCS_COLUMN(4);
	__m128i		a5 = PCS_COLUMN(5);
	__m128i		a6 = PCS_COLUMN(6);
	__m128i		a7 = PCS_COLUMN(7);
#undef PCS_COLUMN
	/* columns 2i and 2i + 1 of rows 0-7, and of rows 8-15 */
	__m128i		b0 = _mm_unpacklo_epi8(a0, a1);
	__m128i		b1 = _mm_unpackhi_epi8(a0, a1);
	__m128i		b2 = _mm_unpacklo_epi8(a2, a3);
	__m128i		b3 = _mm_unpackhi_epi8(a2, a3);
	__m128i		b4 = _mm_unpacklo_epi8(a4, a5);
	__m128i		b5 = _mm_unpackhi_epi8(a4, a5);
	__m128i		b6 = _mm_unpacklo_epi8(a6, a7);
	__m128i		b7 = _mm_unpackhi_epi8(a6, a7);

	/* columns 0-3 (a0-a3) and 4-7 (a4-a7) of rows 4k to 4k + 3 */
	a0 = _mm_unpacklo_epi16(b0, b2);
	a1 = _mm_unpackhi_epi16(b0, b2);
	a2 = _mm_unpacklo_epi16(b1, b3);
	a3 = _mm_unpackhi_epi16(b1, b3);
	a4 = _mm_unpacklo_epi16(b4, b6);
	a5 = _mm_unpackhi_epi16(b4, b6);
	a6 = _mm_unpacklo_epi16(b5, b7);
	a7 = _mm_unpackhi_epi16(b5, b7);
	/* rows 4k, 4k + 1, then rows 4k + 2, 4k + 3 */
	pcs_store_rows(dst, dpitch, _mm_unpacklo_epi32(a0, a4), 0, 16);
	pcs_store_rows(dst, dpitch, _mm_unpackhi_epi32(a0, a4), 2, 16);
	pcs_store_rows(dst, dpitch, _mm_unpacklo_epi32(a1, a5), 4, 16);
	pcs_store_rows(dst, dpitch, _mm_unpackhi_epi32(a1, a5), 6, 16);
	pcs_store_rows(dst, dpitch, _mm_unpacklo_epi32(a2, a6), 8, 16);
	pcs_store_rows(dst, dpitch, _mm_unpackhi_epi32(a2, a6), 10, 16);
	pcs_store_rows(dst, dpitch, _mm_unpacklo_epi32(a3, a7), 12, 16);
	pcs_store_rows(dst, dpitch, _mm_unpackhi_epi32(a3, a7), 14, 16);
}

/*
 * The inverse for 8 rows: 8 columns of 8 bytes (src, columns spitch bytes
 * apart) to the first nrows (at most 8) rows of 8 bytes (dst, rows dpitch
 * bytes apart); the same rounds on half registers.
 */
static inline void
pcs_untranspose8x8(const char *src, int spitch, char *dst, int dpitch,
				   int nrows)
{
#define PCS_COLUMN(i) _mm_loadl_epi64((const __m128i *) (src + (i) * spitch))
	__m128i		b0 = _mm_unpacklo_epi8(PCS_COLUMN(0), PCS_COLUMN(1));
	__m128i		b2 = _mm_unpacklo_epi8(PCS_COLUMN(2), PCS_COLUMN(3));
	__m128i		b4 = _mm_unpacklo_epi8(PCS_COLUMN(4), PCS_COLUMN(5));
	__m128i		b6 = _mm_unpacklo_epi8(PCS_COLUMN(6), PCS_COLUMN(7));
#undef PCS_COLUMN
	/* columns 0-3 of rows 0-3 and 4-7; columns 4-7 of the same */
	__m128i		c0 = _mm_unpacklo_epi16(b0, b2);
	__m128i		c1 = _mm_unpackhi_epi16(b0, b2);
	__m128i		c4 = _mm_unpacklo_epi16(b4, b6);
	__m128i		c5 = _mm_unpackhi_epi16(b4, b6);

	pcs_store_rows(dst, dpitch, _mm_unpacklo_epi32(c0, c4), 0, nrows);
	pcs_store_rows(dst, dpitch, _mm_unpackhi_epi32(c0, c4), 2, nrows);
	pcs_store_rows(dst, dpitch, _mm_unpacklo_epi32(c1, c5), 4, nrows);
	pcs_store_rows(dst, dpitch, _mm_unpackhi_epi32(c1, c5), 6, nrows);
}
#endif							/* PCS_USE_SSE2 */

#ifndef WORDS_BIGENDIAN
/*
 * The block of columns c to c + 7 of rows r to r + nrows - 1 (nrows at most
 * 8) through eight 64-bit words, to columns or back with inverse.  All 8
 * bytes are read of each column (inverse) and written of each column
 * (forward), rows past nrows being zeros forward and dropped inverse:
 * pcs_transpose() says when that is safe.
 */
static inline void
pcs_transpose_words(const char *src, char *dst, int rows, int stride,
					int r, int c, int nrows, bool inverse)
{
	uint64		x[8] = {0};

	Assert(nrows > 0 && nrows <= 8);
	for (int i = 0; i < (inverse ? 8 : nrows); i++)
	{
		if (inverse)
			memcpy(&x[i], src + (c + i) * rows + r, 8);
		else
			memcpy(&x[i], src + (r + i) * stride + c, 8);
	}
	pcs_transpose8x8(x);
	for (int i = 0; i < (inverse ? nrows : 8); i++)
	{
		if (inverse)
			memcpy(dst + (r + i) * stride + c, &x[i], 8);
		else
			memcpy(dst + (c + i) * rows + r, &x[i], 8);
	}
}
#endif

/*
 * Step 2 and its inverse on the len bytes of the tuple space: rows of stride
 * bytes ending at its end, to columns (or back, with inverse); the (len mod
 * stride) bytes before the rows are copied as they are.  Both ways give the
 * same bytes, whatever the machine: blocks of 16 rows by 8 columns are moved
 * in SSE2 registers where there are some, blocks of 8 rows by 8 columns as
 * eight 64-bit words transposed in general registers (on little-endian
 * machines, where byte j of a loaded word is its bits 8j..8j+7), and the
 * last columns byte by byte.  The decoding of every shuffled image goes through the
 * inverse, so its speed counts (test/bench/compression/page_codec.c).
 */
static void
pcs_transpose(const char *src, char *dst, int len, int stride, bool inverse)
{
	int			rows = len / stride;
	int			lead = len % stride;
	int			block_rows = 0;
	int			block_cols = 0;
	int			tail_cols = 0;

	memcpy(dst, src, lead);
	src += lead;
	dst += lead;

#ifndef WORDS_BIGENDIAN
	block_rows = rows - rows % 8;
	block_cols = stride - stride % 8;

	/*
	 * The last rows (fewer than 8) in blocks too, where a block's words can
	 * overrun: reading a column's bytes of them as 8 takes the next column's
	 * first bytes along, which are transposed and dropped; writing them as 8
	 * writes over the next column's first rows, which the blocks below write
	 * afterwards.  So first, and not for the last columns, whose words would
	 * end past the rows; and only where there are 8 rows before them.
	 */
	if (rows >= 8)
	{
		int			tail = rows - block_rows;

		for (; tail > 0 && tail_cols + 8 < stride && tail_cols < block_cols;
			 tail_cols += 8)
		{
#ifdef PCS_USE_SSE2
			if (inverse)
				pcs_untranspose8x8(src + tail_cols * rows + block_rows, rows,
								   dst + block_rows * stride + tail_cols, stride,
								   tail);
			else
#endif
				pcs_transpose_words(src, dst, rows, stride, block_rows,
									tail_cols, tail, inverse);
		}
	}

	for (int r = 0; r < block_rows;)
	{
#ifdef PCS_USE_SSE2
		if (r + 16 <= block_rows)
		{
			for (int c = 0; c < block_cols; c += 8)
			{
				if (inverse)
					pcs_untranspose8x16(src + c * rows + r, rows,
										dst + r * stride + c, stride);
				else
					pcs_transpose16x8(src + r * stride + c, stride,
									  dst + c * rows + r, rows);
			}
			r += 16;
			continue;
		}
		if (inverse)
		{
			for (int c = 0; c < block_cols; c += 8)
				pcs_untranspose8x8(src + c * rows + r, rows,
								   dst + r * stride + c, stride, 8);
			r += 8;
			continue;
		}
#endif
		for (int c = 0; c < block_cols; c += 8)
			pcs_transpose_words(src, dst, rows, stride, r, c, 8, inverse);
		r += 8;
	}
#endif

	/* what the blocks did not cover: the last columns, of all rows */
	for (int r = 0; r < rows; r++)
	{
		for (int c = (r < block_rows ? block_cols : tail_cols); c < stride; c++)
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
 * The constants of access/itup.h and access/nbtree.h it relies on are
 * fixed in pcs_format.h (PCS_SPLIT_SPECIAL and the others), because they are
 * part of the stored format; the backend build checks them against
 * upstream's headers below.
 */
#ifndef FRONTEND
/*
 * Images already stored were split with these values: should an upstream
 * release change the layout they describe, the build must fail here, and
 * the split learn the new layout under a new entry flag, rather than
 * images of new pages be taken apart with the old one.
 */
StaticAssertDecl(PCS_SPLIT_SPECIAL == MAXALIGN(sizeof(BTPageOpaqueData)),
				 "B-tree special space changed size");
StaticAssertDecl(PCS_SPLIT_HEADER == sizeof(IndexTupleData),
				 "index tuple header changed size");
StaticAssertDecl(PCS_SPLIT_TID == sizeof(ItemPointerData),
				 "item pointer changed size");
StaticAssertDecl(PCS_ALT_TID_MASK == INDEX_ALT_TID_MASK,
				 "INDEX_ALT_TID_MASK changed");
StaticAssertDecl(PCS_BT_IS_POSTING == BT_IS_POSTING,
				 "BT_IS_POSTING changed");
StaticAssertDecl(PCS_BT_OFFSET_MASK == BT_OFFSET_MASK,
				 "BT_OFFSET_MASK changed");
StaticAssertDecl(PCS_BTP_LEAF == BTP_LEAF, "BTP_LEAF changed");
StaticAssertDecl(PCS_MAX_BT_CYCLE_ID == MAX_BT_CYCLE_ID,
				 "MAX_BT_CYCLE_ID changed");
StaticAssertDecl(PCS_BT_FLAGS_OFFSET == offsetof(BTPageOpaqueData, btpo_flags),
				 "btpo_flags moved");
StaticAssertDecl(PCS_BT_CYCLEID_OFFSET == offsetof(BTPageOpaqueData, btpo_cycleid),
				 "btpo_cycleid moved");
#endif

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
pcs_split_cover(uint64 *covered, uint32 start, uint32 end)
{
	while (start < end)
	{
		uint32		word = start / 64;
		uint32		bit = start % 64;
		uint32		nbits = Min(64 - bit, end - start);
		uint64		mask = (~UINT64CONST(0) >> (64 - nbits)) << bit;

		Assert(nbits >= 1 && nbits <= 64);
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
 * Is the page a B-tree leaf, whose tuples may have posting lists?  From its
 * special space, which the split leaves in place.
 */
static inline bool
pcs_split_leaf(const char *page, int special)
{
	uint16		btflags;
	uint16		cycleid;

	memcpy(&btflags, page + special + PCS_BT_FLAGS_OFFSET, sizeof(btflags));
	memcpy(&cycleid, page + special + PCS_BT_CYCLEID_OFFSET, sizeof(cycleid));
	return (btflags & PCS_BTP_LEAF) != 0 && cycleid <= PCS_MAX_BT_CYCLE_ID;
}

/* The uint16 at p, in the host's byte order */
static inline uint16
pcs_host16(const unsigned char *p)
{
#ifdef WORDS_BIGENDIAN
	return (uint16) (p[0] << 8 | p[1]);
#else
	return (uint16) (p[0] | p[1] << 8);
#endif
}

/*
 * Where a tuple's posting list is, if it has one, from its t_info and the
 * bytes of its t_tid (tid, a copy): sets item->keyend and item->nposting.
 */
static inline void
pcs_split_plan(const unsigned char *tid, bool btleaf, PcsSplitItem *item)
{
	uint16		posid;

	item->keyend = item->len;
	item->nposting = 0;
	if (!btleaf || !item->alt)
		return;
	posid = pcs_host16(tid + 4);
	if ((posid & PCS_BT_IS_POSTING) != 0)
	{
		uint32		postoff = ((uint32) pcs_host16(tid) << 16) |
			pcs_host16(tid + 2);
		uint32		n = posid & PCS_BT_OFFSET_MASK;

		if (postoff >= PCS_SPLIT_HEADER &&
			postoff + n * PCS_SPLIT_TID <= item->len)
		{
			item->keyend = (uint16) postoff;
			item->nposting = (uint16) n;
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
 *
 * Three passes over the tuples, each doing for every tuple what the streams
 * it can place need: A (which says which tuples have an alternative t_tid,
 * and so how many rows B has); then B, where the posting lists are, how
 * many heap TIDs C holds and how long the keys of D are; then C, D and E
 * together, their places being known.  A page of a B-tree on an integer
 * column with small posting lists has some 260 tuples, and every pass costs
 * a few dozen cycles for each: with a pass per stream, joining such a page
 * took 8.0 us, 5.9 like this.
 */
static void
pcs_split_streams(const char *in, char *out, bool inverse, int upper,
				  int special, PcsSplit *split)
{
	PGAlignedBlock keys;
	char	   *page = inverse ? out : unconstify(char *, in);
	char	   *image = inverse ? unconstify(char *, in) : out;
	int			nitems = split->nitems;
	bool		btleaf = pcs_split_leaf(page, special);
	unsigned char *sa = (unsigned char *) image + upper;	/* stream A */
	char	   *sb;				/* stream B */
	char	   *sc;				/* stream C */
	int			nalt = 0;
	int			ntids = 0;
	int			len = 0;
	int			stride = 0;
	int			best = 0;
	int			pos;
	int			k;
	int			t;
	int			d;
	uint32		block = 0;
	uint16		counts[PCS_SHUFFLE_MAX_STRIDE / MAXIMUM_ALIGNOF + 1];

	/* A: every tuple's t_info, low bytes, then high bytes */
	for (int i = 0; i < nitems; i++)
	{
		PcsSplitItem *item = &split->items[i];

		if (inverse)
		{
			item->info = sa[i] | sa[nitems + i] << 8;
			memcpy(page + item->off + PCS_SPLIT_TID, &item->info,
				   sizeof(uint16));
		}
		else
		{
			memcpy(&item->info, page + item->off + PCS_SPLIT_TID,
				   sizeof(uint16));
			sa[i] = (unsigned char) item->info;
			sa[nitems + i] = (unsigned char) (item->info >> 8);
		}
		item->alt = (item->info & PCS_ALT_TID_MASK) != 0;
		nalt += item->alt;
	}

	/*
	 * B: the alternative t_tids, nalt rows of 6 bytes transposed (byte j of
	 * row k at sb[j * nalt + k], what pcs_transpose() makes of them laid end
	 * to end); and what the streams after it need to know: where each posting
	 * list is (from the t_tid), how many heap TIDs there are, and how long
	 * the keys are
	 */
	sb = image + upper + nitems * sizeof(uint16);
	memset(counts, 0, sizeof(counts));
	k = 0;
	for (int i = 0; i < nitems; i++)
	{
		PcsSplitItem *item = &split->items[i];
		int			keylen;

		if (item->alt)
		{
			/*
			 * The plan reads the t_tid byte by byte from a copy: a wider load
			 * of what the inverse has just stored byte by byte would wait for
			 * the stores to complete
			 */
			unsigned char tid[PCS_SPLIT_TID];
			unsigned char *field = (unsigned char *) page + item->off;

			for (int j = 0; j < PCS_SPLIT_TID; j++)
			{
				unsigned char *plane = (unsigned char *) sb + j * nalt + k;

				if (inverse)
					field[j] = tid[j] = *plane;
				else
					*plane = tid[j] = field[j];
			}
			k++;
			pcs_split_plan(tid, btleaf, item);
		}
		else
			pcs_split_plan(NULL, btleaf, item);
		ntids += (item->alt ? 0 : 1) + item->nposting;

		keylen = item->keyend - PCS_SPLIT_HEADER;
		len += keylen;
		if (keylen > 0 && keylen <= PCS_SHUFFLE_MAX_STRIDE &&
			keylen % MAXIMUM_ALIGNOF == 0)
			counts[keylen / MAXIMUM_ALIGNOF]++;
	}

	/* D is transposed by the commonest key length, the smaller on a tie */
	for (int j = 1; j <= PCS_SHUFFLE_MAX_STRIDE / MAXIMUM_ALIGNOF; j++)
	{
		if (counts[j] > best)
		{
			best = counts[j];
			stride = j * MAXIMUM_ALIGNOF;
		}
	}
	if (stride == 0)
		stride = 1;				/* no transposition */

	/*
	 * C: the heap TIDs; D: the keys, laid end to end (in keys) and
	 * transposed; E: what follows the posting lists
	 */
	sc = sb + nalt * PCS_SPLIT_TID;
	pos = (sc - image) + ntids * PCS_SPLIT_TID; /* where D starts */
	if (inverse)
		pcs_transpose(image + pos, keys.data, len, stride, true);
	t = 0;
	d = 0;
	pos += len;					/* where E starts */
	for (int i = 0; i < nitems; i++)
	{
		PcsSplitItem *item = &split->items[i];
		char	   *tuple = page + item->off;
		int			keylen = item->keyend - PCS_SPLIT_HEADER;
		int			tail = item->keyend + item->nposting * PCS_SPLIT_TID;

		if (!item->alt)
			pcs_split_tids(tuple, 1, sc, ntids, t++, &block, inverse);
		pcs_split_tids(tuple + item->keyend, item->nposting, sc, ntids, t,
					   &block, inverse);
		t += item->nposting;

		if (keylen == MAXIMUM_ALIGNOF)	/* the common case, inlined */
			pcs_split_move(page, item->off + PCS_SPLIT_HEADER, keys.data, &d,
						   MAXIMUM_ALIGNOF, inverse);
		else
			pcs_split_move(page, item->off + PCS_SPLIT_HEADER, keys.data, &d,
						   keylen, inverse);

		if (tail < item->len)
			pcs_split_move(page, item->off + tail, image, &pos,
						   item->len - tail, inverse);
	}
	Assert(t == ntids && d == len);
	if (!inverse && len > 0)
		pcs_transpose(keys.data, sc + ntids * PCS_SPLIT_TID,
					  len, stride, false);

	/* F: what no tuple covers */
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
 * with inverse their inverse, from in to out (BLCKSZ bytes each).  PCS_SOUND if
 * done, else why not; out is untouched if the page does not have what the
 * forward direction needs.
 */
static PcsProblem
pcs_shuffle(const char *in, char *out, uint8 how, bool inverse)
{
	PcsSplit	split;
	int			nitems;
	int			upper;
	int			special;
	int			stride;
	uint32		prev = 0;

	if (!pcs_page_layout(in, &nitems, &upper, &special) || nitems == 0)
		return PCS_IMAGE_NO_LAYOUT;
	if (how == PCS_ENTRY_SPLIT && !inverse &&
		!pcs_split_items(in, nitems, upper, special, &split))
		return PCS_IMAGE_NO_INDEX_TUPLES;

	/*
	 * The whole page, though the transform rewrites the tuple space: out is
	 * often a buffer that is not in the CPU's cache, and one string copy
	 * brings it in more cheaply than the transposition's scattered stores do
	 * (copying only what stays in place made 50,000 index lookups into a
	 * table in an lz4 tablespace take a third longer).
	 */
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
			return PCS_IMAGE_CANNOT_JOIN;
		pcs_split_streams(in, out, inverse, upper, special, &split);
		return PCS_SOUND;
	}

	/* the stride comes from the unshuffled line pointers, restored by now */
	stride = pcs_shuffle_stride(inverse ? out : in, nitems, NULL);
	if (stride > 0)
		pcs_transpose(in + upper, out + upper, special - upper, stride, inverse);
	return PCS_SOUND;
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
			pcs_shuffle(page, out, PCS_ENTRY_SPLIT, false) == PCS_SOUND)
			return PCS_ENTRY_SPLIT;
	}
	if (pcs_shuffle(page, out, PCS_ENTRY_SHUFFLED, false) == PCS_SOUND)
		return PCS_ENTRY_SHUFFLED;
	return 0;
}

/*
 * Undo pcs_page_shuffle(), which returned how (PCS_ENTRY_SPLIT or
 * PCS_ENTRY_SHUFFLED): from in to page (BLCKSZ bytes each).  PCS_SOUND if done,
 * else what is wrong with the image.
 */
PcsProblem
pcs_page_unshuffle(const char *in, char *page, uint8 how)
{
	Assert(how == PCS_ENTRY_SPLIT || how == PCS_ENTRY_SHUFFLED);
	return pcs_shuffle(in, page, how, true);
}
