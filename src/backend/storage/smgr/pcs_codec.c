/*-------------------------------------------------------------------------
 *
 * pcs_codec.c
 *	  The page codec of page-compressed storage (pcs): compressing a page
 *	  into an image, and decoding an image back into the page.
 *
 * Like the rest of the format layer (pcs_format.c), nothing here does I/O
 * or raises errors: decoding returns PCS_SOUND, or what is wrong with an
 * image.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * The same file is compiled into frontend programs (see fe_utils/pcs_file.c),
 * with FRONTEND defined.
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_codec.c
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

#include "storage/pcs_format.h"

#ifdef USE_ZSTD
/* Contexts are reused for the life of the process: creating one per page costs more than compressing it. */
static ZSTD_CCtx *pcs_zstd_cctx = NULL;
static ZSTD_DCtx *pcs_zstd_dctx = NULL;
#endif

/*
 * Which pages are compressed both with and without their transform: the
 * first PCS_TRY_FIRST pages a PcsCodecState sees, and then one in
 * PCS_TRY_EVERY.  Between them the state's verdict decides.
 */
#define PCS_TRY_FIRST		16
#define PCS_TRY_EVERY		8

/*
 * The transform is kept while it saves more than this many bytes per page
 * tried both ways, on average (decayed by 1/PCS_GAIN_DECAY per page), in
 * whole units, since bytes that do not add up to a unit are not stored: a
 * transformed image costs more to decode, and a transform that saves 512
 * bytes on fewer than one page in sixteen (one 128-byte unit on fewer than
 * one in four) is not worth that.
 */
#define PCS_GAIN_MIN		32
#define PCS_GAIN_DECAY		8

/*
 * Compress BLCKSZ bytes of src into dest (capacity bytes) with the
 * algorithm: the compressed length, or -1.
 */
static int
pcs_compress_bytes(PcsAlgorithm algorithm, int level, const char *src,
				   char *dest, int capacity)
{
	int			len = -1;

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
	return len;
}

/*
 * Compress one page into dest (capacity bytes).  Returns the compressed
 * length and sets *image_flags to the entry flags of the image
 * (PCS_ENTRY_SPLIT or PCS_ENTRY_SHUFFLED when it went through that
 * transform first, else 0), or returns -1 with *image_flags PCS_ENTRY_RAW
 * if the page should be stored raw: compression failed, or did not save at
 * least one unit, or the page looks as if it would not and was not tried
 * (pcs_page_incompressible()).
 *
 * Whether the transform pcs_page_shuffle() offers is used is decided by
 * what it gains, not by the page's shape alone.  The shuffle and the split
 * turn each field of fixed-width rows and index tuples into a run, and
 * gain a factor of two to four there; on rows of varying length they
 * scatter the fields, and plain compression does up to twice as well.  So
 * some pages are compressed both ways and keep the smaller image (the
 * untransformed one when they take the same units: it decodes faster), and
 * what the transform saved on them, in state, decides for the pages in
 * between, which are compressed once.  state belongs to one segment of
 * one relation in one process (its pages are alike, more than those of a
 * whole server); NULL compresses every page both ways.
 */
int
pcs_compress_page(PcsAlgorithm algorithm, int level, const char *page,
				  char *dest, int capacity, uint8 *image_flags,
				  PcsCodecState *state)
{
	PGAlignedBlock transformed;
	PGAlignedBlock other;
	bool		try_both;
	uint8		how = 0;
	int			len;
	int			tlen;

	*image_flags = PCS_ENTRY_RAW;
	if (algorithm == PCS_ALGO_NONE)
		return -1;

	try_both = state == NULL || state->pages < PCS_TRY_FIRST ||
		state->pages % PCS_TRY_EVERY == 0;
	if (state != NULL)
		state->pages++;
	if (try_both || state->gain > PCS_GAIN_MIN * PCS_GAIN_DECAY)
		how = pcs_page_shuffle(page, transformed.data);

	/*
	 * The estimate reads the bytes' histogram, which no transform changes,
	 * and probes for repeats with lz4; dest serves as its scratch space when
	 * it is large enough.
	 */
	if (algorithm == PCS_ALGO_ZSTD && capacity >= BLCKSZ &&
		pcs_page_incompressible(how != 0 && !try_both ? transformed.data : page,
								dest))
		return -1;

	if (how == 0 || !try_both)
	{
		len = pcs_compress_bytes(algorithm, level,
								 how != 0 ? transformed.data : page,
								 dest, capacity);
		if (len < 0 || len > BLCKSZ - PCS_MIN_SAVING)
			return -1;
		*image_flags = how;
		return len;
	}

	/* both ways: the page into dest, the transformed page into other */
	len = pcs_compress_bytes(algorithm, level, page, dest, capacity);
	tlen = pcs_compress_bytes(algorithm, level, transformed.data, other.data,
							  Min(capacity, BLCKSZ));
	if (state != NULL)
	{
		/* in whole units, which is what is stored */
		int			saved = (pcs_units_for(len < 0 ? BLCKSZ : len, PCS_UNIT_SHIFT) -
							 pcs_units_for(tlen < 0 ? BLCKSZ : tlen, PCS_UNIT_SHIFT)) * PCS_UNIT_SIZE;

		state->gain += saved - state->gain / PCS_GAIN_DECAY;
	}
	if (tlen >= 0 &&
		(len < 0 || pcs_units_for(tlen, PCS_UNIT_SHIFT) < pcs_units_for(len, PCS_UNIT_SHIFT)))
	{
		memcpy(dest, other.data, tlen);
		len = tlen;
	}
	else
		how = 0;
	if (len < 0 || len > BLCKSZ - PCS_MIN_SAVING)
		return -1;
	*image_flags = how;
	return len;
}

/*
 * Decompress an image of srclen bytes into page (BLCKSZ bytes).  PCS_SOUND if it
 * decompressed to exactly one page, else what went wrong.
 */
PcsProblem
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
						return PCS_IMAGE_NO_MEMORY;
				}
				r = ZSTD_decompressDCtx(pcs_zstd_dctx, page, BLCKSZ, src, srclen);
				if (ZSTD_isError(r))
					return PCS_IMAGE_ZSTD_FAILED;
				if (r != BLCKSZ)
					return PCS_IMAGE_WRONG_LENGTH;
				return PCS_SOUND;
			}
#else
			return PCS_IMAGE_NO_ZSTD;
#endif
		case PCS_ALGO_LZ4:
#ifdef USE_LZ4
			{
				int			r = LZ4_decompress_safe(src, page, srclen, BLCKSZ);

				if (r < 0)
					return PCS_IMAGE_LZ4_FAILED;
				if (r != BLCKSZ)
					return PCS_IMAGE_WRONG_LENGTH;
				return PCS_SOUND;
			}
#else
			return PCS_IMAGE_NO_LZ4;
#endif
		case PCS_ALGO_NONE:
			break;
	}
	return PCS_IMAGE_UNKNOWN_ALGORITHM;
}

/*
 * The page a stored image holds, whatever the entry's flags say it is (raw,
 * compressed, or compressed after a shuffle).  PCS_SOUND if page now holds it,
 * else what went wrong.
 */
PcsProblem
pcs_decode_image(PcsAlgorithm algorithm, uint8 flags, const char *image,
				 int len, char *page)
{
	PGAlignedBlock shuffled;
	PcsProblem	problem;

	if (flags & PCS_ENTRY_RAW)
	{
		if (len != BLCKSZ)
			return PCS_IMAGE_RAW_NOT_BLOCK;
		memcpy(page, image, BLCKSZ);
		return PCS_SOUND;
	}
	if ((flags & (PCS_ENTRY_SHUFFLED | PCS_ENTRY_SPLIT)) == 0)
		return pcs_decompress_page(algorithm, image, len, page);
	if ((flags & PCS_ENTRY_SHUFFLED) && (flags & PCS_ENTRY_SPLIT))
		return PCS_IMAGE_SHUFFLED_AND_SPLIT;

	problem = pcs_decompress_page(algorithm, image, len, shuffled.data);
	if (problem != PCS_SOUND)
		return problem;
	return pcs_page_unshuffle(shuffled.data, page,
							  flags & (PCS_ENTRY_SHUFFLED | PCS_ENTRY_SPLIT));
}
