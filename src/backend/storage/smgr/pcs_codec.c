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
/* for ZSTD_initStaticDDict(), which places a dictionary in given memory */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zdict.h>
#endif

#include "storage/pcs_format.h"

#ifdef USE_ZSTD
/* Contexts are reused for the life of the process: creating one per page costs more than compressing it. */
static ZSTD_CCtx *pcs_zstd_cctx = NULL;
static ZSTD_DCtx *pcs_zstd_dctx = NULL;
#endif

/*
 * A dictionary digested for both directions: zstd's prepared dictionaries
 * make compressing and decoding with one cost what they cost without (the
 * dictionary's tables are built once, here, not for every page).
 */
struct PcsDict
{
	PcsAlgorithm algorithm;
	const PcsDictMemory *mem;	/* where its memory came from, NULL: malloc */
#ifdef USE_ZSTD
	ZSTD_CDict *cdict;
	ZSTD_DDict *ddict;
#endif
};

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
				   char *dest, int capacity, const PcsDict *dict)
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
				/* the entry names the dictionary; its level is the segment's */
				/* (a dictionary placed by pcs_dict_place() only decodes) */
				Assert(dict == NULL || dict->cdict != NULL);
				if (dict != NULL &&
					ZSTD_isError(ZSTD_CCtx_refCDict(pcs_zstd_cctx, dict->cdict)))
					return -1;
				r = ZSTD_compress2(pcs_zstd_cctx, dest, capacity, src, BLCKSZ);
				if (!ZSTD_isError(r))
					len = (int) r;
			}
#endif
			break;
		case PCS_ALGO_LZ4:
#ifdef USE_LZ4
			Assert(dict == NULL);
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
 *
 * With dict (prepared from the segment's dictionary dict_number), every
 * image is compressed with it, and dict_number goes into *image_flags'
 * dictionary bits.  Raw pages have no dictionary.
 */
int
pcs_compress_page(PcsAlgorithm algorithm, int level, const char *page,
				  char *dest, int capacity, uint8 *image_flags,
				  PcsCodecState *state, const PcsDict *dict, int dict_number)
{
	PGAlignedBlock transformed;
	PGAlignedBlock other;
	bool		try_both;
	uint8		how = 0;
	int			len;
	int			tlen;
	uint8		dict_flags = 0;

	*image_flags = PCS_ENTRY_RAW;
	if (algorithm == PCS_ALGO_NONE)
		return -1;
	if (dict != NULL)
	{
		Assert(dict->algorithm == algorithm);
		Assert(dict_number >= 1 && dict_number <= PCS_MAX_DICTIONARIES);
		dict_flags = (uint8) (dict_number << PCS_DICTIONARY_SHIFT);
	}

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
								 dest, capacity, dict);
		if (len < 0 || len > BLCKSZ - PCS_MIN_SAVING)
			return -1;
		*image_flags = how | dict_flags;
		return len;
	}

	/* both ways: the page into dest, the transformed page into other */
	len = pcs_compress_bytes(algorithm, level, page, dest, capacity, dict);
	tlen = pcs_compress_bytes(algorithm, level, transformed.data, other.data,
							  Min(capacity, BLCKSZ), dict);
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
	*image_flags = how | dict_flags;
	return len;
}

/*
 * Decompress an image of srclen bytes into page (BLCKSZ bytes).  PCS_SOUND if it
 * decompressed to exactly one page, else what went wrong.
 */
static PcsProblem
pcs_decompress_with(PcsAlgorithm algorithm, const char *src, int srclen,
					char *page, const PcsDict *dict)
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
				if (dict != NULL)
					r = ZSTD_decompress_usingDDict(pcs_zstd_dctx, page, BLCKSZ,
												   src, srclen, dict->ddict);
				else
					r = ZSTD_decompressDCtx(pcs_zstd_dctx, page, BLCKSZ, src,
											srclen);
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
				int			r;

				if (dict != NULL)
					return PCS_IMAGE_NO_DICTIONARY;
				r = LZ4_decompress_safe(src, page, srclen, BLCKSZ);

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
 * Decompress an image of srclen bytes, compressed without a dictionary,
 * into page (BLCKSZ bytes).  PCS_SOUND if it decompressed to exactly one
 * page, else what went wrong.
 */
PcsProblem
pcs_decompress_page(PcsAlgorithm algorithm, const char *src, int srclen,
					char *page)
{
	return pcs_decompress_with(algorithm, src, srclen, page, NULL);
}

/*
 * The page a stored image holds, whatever the entry's flags say it is (raw,
 * compressed, or compressed after a shuffle, with or without a dictionary).
 * dict is the segment's dictionary the flags name, prepared, or NULL when
 * they name none.  PCS_SOUND if page now holds it, else what went wrong.
 */
PcsProblem
pcs_decode_image(PcsAlgorithm algorithm, uint8 flags, const char *image,
				 int len, char *page, const PcsDict *dict)
{
	PGAlignedBlock shuffled;
	PcsProblem	problem;

	if ((pcs_entry_dictionary(flags) != 0) != (dict != NULL))
		return PCS_IMAGE_NO_DICTIONARY;
	flags &= ~PCS_ENTRY_DICTIONARY;

	if (flags & PCS_ENTRY_RAW)
	{
		if (len != BLCKSZ)
			return PCS_IMAGE_RAW_NOT_BLOCK;
		memcpy(page, image, BLCKSZ);
		return PCS_SOUND;
	}
	if ((flags & (PCS_ENTRY_SHUFFLED | PCS_ENTRY_SPLIT)) == 0)
		return pcs_decompress_with(algorithm, image, len, page, dict);
	if ((flags & PCS_ENTRY_SHUFFLED) && (flags & PCS_ENTRY_SPLIT))
		return PCS_IMAGE_SHUFFLED_AND_SPLIT;

	problem = pcs_decompress_with(algorithm, image, len, shuffled.data, dict);
	if (problem != PCS_SOUND)
		return problem;
	return pcs_page_unshuffle(shuffled.data, page,
							  flags & (PCS_ENTRY_SHUFFLED | PCS_ENTRY_SPLIT));
}

/*
 * Prepare the bytes of a dictionary (len of them) for compressing at level
 * (encode) and for decoding (decode), one or both: zstd's structures for
 * the two directions are separate, and a process that only reads needs no
 * compression tables.  Memory comes from mem (NULL: malloc), which
 * pcs_dict_free() gives it back to.  NULL if the algorithm takes no
 * dictionaries, if zstd does not accept the bytes, or if memory ran out;
 * callers tell these apart by what they know (the bytes passed their CRC
 * check, so NULL is memory or bytes this build's zstd cannot use).
 */
PcsDict *
pcs_dict_prepare_for(PcsAlgorithm algorithm, int level, const char *bytes,
					 int len, bool encode, bool decode,
					 const PcsDictMemory *mem)
{
#ifdef USE_ZSTD
	PcsDict    *dict;
	ZSTD_customMem zmem = ZSTD_defaultCMem;

	Assert(encode || decode);
	if (algorithm != PCS_ALGO_ZSTD)
		return NULL;
	if (mem != NULL)
	{
		zmem.customAlloc = mem->alloc;
		zmem.customFree = mem->release;
		zmem.opaque = mem->opaque;
	}
	dict = mem != NULL ? mem->alloc(mem->opaque, sizeof(PcsDict)) :
		malloc(sizeof(PcsDict));
	if (dict == NULL)
		return NULL;
	dict->algorithm = algorithm;
	dict->mem = mem;
	dict->cdict = NULL;
	dict->ddict = NULL;
	if (encode)
	{
		/* the parameters ZSTD_createCDict() would take for the level */
		ZSTD_CCtx_params *params = ZSTD_createCCtxParams();

		if (params != NULL &&
			!ZSTD_isError(ZSTD_CCtxParams_setParameter(params,
													   ZSTD_c_compressionLevel,
													   level)))
			dict->cdict = ZSTD_createCDict_advanced2(bytes, len,
													 ZSTD_dlm_byCopy,
													 ZSTD_dct_auto, params,
													 zmem);
		ZSTD_freeCCtxParams(params);
	}
	if (decode)
		dict->ddict = ZSTD_createDDict_advanced(bytes, len, ZSTD_dlm_byCopy,
												ZSTD_dct_auto, zmem);
	if ((encode && dict->cdict == NULL) || (decode && dict->ddict == NULL))
	{
		pcs_dict_free(dict);
		return NULL;
	}
	return dict;
#else
	return NULL;
#endif
}

/* Prepare a dictionary for both directions (pcs_dict_prepare_for()) */
PcsDict *
pcs_dict_prepare(PcsAlgorithm algorithm, int level, const char *bytes,
				 int len)
{
	return pcs_dict_prepare_for(algorithm, level, bytes, len, true, true,
								NULL);
}

/*
 * Bytes pcs_dict_place() needs for a dictionary of up to
 * PCS_MAX_DICTIONARY_SIZE bytes; 0 when this build has no zstd
 */
size_t
pcs_dict_place_size(void)
{
#ifdef USE_ZSTD
	return MAXALIGN(sizeof(PcsDict)) +
		ZSTD_estimateDDictSize(PCS_MAX_DICTIONARY_SIZE, ZSTD_dlm_byCopy);
#else
	return 0;
#endif
}

/*
 * Prepare the bytes of a dictionary (len of them) for decoding only, inside
 * space (size bytes, 8-byte aligned, at least pcs_dict_place_size()), with
 * no allocation: pointers to it and within it stay valid for any process
 * that maps space at the same address, so a dictionary placed in shared
 * memory serves decoding in every backend and I/O worker.  NULL if the
 * algorithm takes no dictionaries or zstd does not accept the bytes.  It
 * needs no freeing; it is gone when space is reused.
 */
PcsDict *
pcs_dict_place(PcsAlgorithm algorithm, const char *bytes, int len,
			   void *space, size_t size)
{
#ifdef USE_ZSTD
	PcsDict    *dict = (PcsDict *) space;

	Assert(((uintptr_t) space) % 8 == 0);
	if (algorithm != PCS_ALGO_ZSTD || len > PCS_MAX_DICTIONARY_SIZE ||
		size < pcs_dict_place_size())
		return NULL;
	dict->algorithm = algorithm;
	dict->mem = NULL;
	dict->cdict = NULL;
	dict->ddict = (ZSTD_DDict *)
		ZSTD_initStaticDDict((char *) space + MAXALIGN(sizeof(PcsDict)),
							 size - MAXALIGN(sizeof(PcsDict)),
							 bytes, len, ZSTD_dlm_byCopy, ZSTD_dct_auto);
	if (dict->ddict == NULL)
		return NULL;
	return dict;
#else
	return NULL;
#endif
}

/* Give back what pcs_dict_prepare_for() took */
void
pcs_dict_free(PcsDict *dict)
{
	if (dict == NULL)
		return;
#ifdef USE_ZSTD
	ZSTD_freeCDict(dict->cdict);
	ZSTD_freeDDict(dict->ddict);
#endif
	if (dict->mem != NULL)
		dict->mem->release(dict->mem->opaque, dict);
	else
		free(dict);
}

/*
 * Bytes that npages pages (BLCKSZ each, one after the other) take stored
 * by this codec with algorithm, level and dict (or NULL), in units of
 * 1 << shift bytes, raw where they do not save PCS_MIN_SAVING: what a
 * dictionary gains, or what a relation would compress to
 */
int64
pcs_stored_bytes(PcsAlgorithm algorithm, int level, int shift,
				 const char *pages, int npages, const PcsDict *dict)
{
	PGAlignedBlock image;
	PcsCodecState codec = {0};
	int64		total = 0;

	for (int i = 0; i < npages; i++)
	{
		uint8		flags;
		int			len;

		len = pcs_compress_page(algorithm, level, pages + (size_t) i * BLCKSZ,
								image.data, BLCKSZ, &flags, &codec, dict, 1);
		total += (int64) pcs_units_for(len < 0 ? BLCKSZ : len, shift) << shift;
	}
	return total;
}

/*
 * The size of a dictionary trained on npages pages: a 64th of the sample
 * (zstd's trainer wants about a hundred times its size in samples), within
 * PCS_MIN_TRAINED_SIZE and the format's largest
 */
int
pcs_dict_capacity(int npages)
{
	int64		bytes = (int64) npages * BLCKSZ / 64;

	return (int) Min(PCS_MAX_DICTIONARY_SIZE, Max(PCS_MIN_TRAINED_SIZE, bytes));
}

/*
 * Train a zstd dictionary of at most capacity bytes on npages pages (BLCKSZ
 * bytes each, one after the other in pages), into dict: its length, or -1
 * if training failed (too few or too uniform samples) or there is no zstd.
 * Every page is one sample, as every page is compressed on its own.
 */
int
pcs_dict_train(const char *pages, int npages, char *dict, int capacity)
{
#ifdef USE_ZSTD
	size_t	   *sizes;
	size_t		r;

	if (npages <= 0)
		return -1;
	sizes = malloc(sizeof(size_t) * npages);
	if (sizes == NULL)
		return -1;
	for (int i = 0; i < npages; i++)
		sizes[i] = BLCKSZ;
	r = ZDICT_trainFromBuffer(dict, capacity, pages, sizes, (unsigned) npages);
	free(sizes);
	if (ZDICT_isError(r) || r < PCS_MIN_DICTIONARY_SIZE)
		return -1;
	return (int) r;
#else
	return -1;
#endif
}
