/*-------------------------------------------------------------------------
 *
 * toast_zstd.c
 *	  zstd as a TOAST compression method (pgstrata).
 *
 * A zstd-compressed varlena is laid out exactly like a pglz or lz4 one: the
 * usual 4-byte varlena header, va_tcinfo holding the raw size in its low 30
 * bits and TOAST_ZSTD_COMPRESSION_ID (2) in its top 2 bits, then one zstd
 * frame.  The frame carries no checksum (pages have their own) and no
 * content size (va_tcinfo has it); leaving the content size out also keeps
 * the frame from being "single segment", which bounds the window buffer the
 * streaming decoder allocates for a slice to the compression level's window
 * instead of the whole value.
 *
 * Compression and decompression contexts are created once per backend and
 * reused, since creating them costs more than compressing a small value.
 * They are allocated by libzstd with malloc, outside any memory context, so
 * an ERROR thrown in the middle of an operation leaks nothing: the next
 * call resets the context's session before using it.  A context that has
 * grown past ZSTD_KEEP_CONTEXT_SIZE (high levels on large values) is freed
 * after use, so that a backend does not hold on to tens of megabytes.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/access/common/toast_zstd.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef USE_ZSTD
#include <zstd.h>
#include <zstd_errors.h>
#endif

#include "access/toast_compression.h"
#include "access/toast_zstd.h"
#include "utils/memutils.h"
#include "varatt.h"

/* GUC */
int			toast_zstd_level = TOAST_ZSTD_LEVEL_DEFAULT;

#define NO_ZSTD_SUPPORT() \
	ereport(ERROR, \
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED), \
			 errmsg("compression method zstd not supported"), \
			 errdetail("This functionality requires the server to be built with zstd support.")))

#ifdef USE_ZSTD
/* contexts larger than this are not kept between calls */
#define ZSTD_KEEP_CONTEXT_SIZE	(8 * 1024 * 1024)

static ZSTD_CCtx *zstd_cctx = NULL;
static ZSTD_DCtx *zstd_dctx = NULL;

/* Report a zstd-compressed value that does not decompress as its header says. */
static void
zstd_report_corrupt(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg_internal("compressed zstd data is corrupt"),
			 errdetail_internal("%s", detail)));
}

/* Return this backend's compression context, creating it on first use. */
static ZSTD_CCtx *
zstd_get_cctx(void)
{
	if (zstd_cctx == NULL)
	{
		zstd_cctx = ZSTD_createCCtx();
		if (zstd_cctx == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("Could not allocate a zstd compression context.")));
	}
	return zstd_cctx;
}

/* Return this backend's decompression context, reset for a new frame. */
static ZSTD_DCtx *
zstd_get_dctx(void)
{
	if (zstd_dctx == NULL)
	{
		zstd_dctx = ZSTD_createDCtx();
		if (zstd_dctx == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("Could not allocate a zstd decompression context.")));
	}

	/* a previous call may have been interrupted by an ERROR mid-frame */
	ZSTD_DCtx_reset(zstd_dctx, ZSTD_reset_session_only);
	return zstd_dctx;
}

/* Free the contexts that have grown too large to keep for the next value. */
static void
zstd_trim_contexts(void)
{
	if (zstd_cctx != NULL && ZSTD_sizeof_CCtx(zstd_cctx) > ZSTD_KEEP_CONTEXT_SIZE)
	{
		ZSTD_freeCCtx(zstd_cctx);
		zstd_cctx = NULL;
	}
	if (zstd_dctx != NULL && ZSTD_sizeof_DCtx(zstd_dctx) > ZSTD_KEEP_CONTEXT_SIZE)
	{
		ZSTD_freeDCtx(zstd_dctx);
		zstd_dctx = NULL;
	}
}

/* Set a compression parameter, failing loudly if libzstd refuses it. */
static void
zstd_set_cparam(ZSTD_CCtx *cctx, ZSTD_cParameter param, int value)
{
	size_t		ret = ZSTD_CCtx_setParameter(cctx, param, value);

	if (ZSTD_isError(ret))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not set zstd compression parameter: %s",
						ZSTD_getErrorName(ret))));
}
#endif							/* USE_ZSTD */

/* Raise the "not supported" error unless this build has zstd. */
void
zstd_check_support(void)
{
#ifndef USE_ZSTD
	NO_ZSTD_SUPPORT();
#endif
}

/*
 * Compress a varlena using zstd.
 *
 * Returns the compressed varlena, or NULL if the data does not shrink.
 */
struct varlena *
zstd_compress_datum(const struct varlena *value)
{
#ifndef USE_ZSTD
	NO_ZSTD_SUPPORT();
	return NULL;				/* keep compiler quiet */
#else
	int32		valsize = VARSIZE_ANY_EXHDR(value);
	size_t		capacity;
	size_t		len;
	struct varlena *tmp;
	ZSTD_CCtx  *cctx = zstd_get_cctx();

	/*
	 * The output buffer is no larger than the input: zstd then fails with
	 * dstSize_tooSmall on data that would not shrink, so incompressible
	 * values cost neither ZSTD_compressBound() bytes nor a second pass.
	 */
	capacity = Min((size_t) valsize, MaxAllocSize - VARHDRSZ_COMPRESSED);
	tmp = (struct varlena *) palloc(capacity + VARHDRSZ_COMPRESSED);

	/*
	 * Parameters can only be set between frames, and an earlier call may have
	 * stopped mid-frame, on a too small output buffer or an ERROR.
	 */
	ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
	zstd_set_cparam(cctx, ZSTD_c_compressionLevel, toast_zstd_level);
	zstd_set_cparam(cctx, ZSTD_c_contentSizeFlag, 0);
	zstd_set_cparam(cctx, ZSTD_c_checksumFlag, 0);

	len = ZSTD_compress2(cctx, (char *) tmp + VARHDRSZ_COMPRESSED, capacity,
						 VARDATA_ANY(value), valsize);
	zstd_trim_contexts();
	if (ZSTD_isError(len))
	{
		pfree(tmp);
		if (ZSTD_getErrorCode(len) == ZSTD_error_dstSize_tooSmall)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("zstd compression failed: %s", ZSTD_getErrorName(len))));
	}

	SET_VARSIZE_COMPRESSED(tmp, len + VARHDRSZ_COMPRESSED);

	return tmp;
#endif
}

/*
 * Decompress a varlena that was compressed using zstd.
 */
struct varlena *
zstd_decompress_datum(const struct varlena *value)
{
#ifndef USE_ZSTD
	NO_ZSTD_SUPPORT();
	return NULL;				/* keep compiler quiet */
#else
	int32		rawsize = VARDATA_COMPRESSED_GET_EXTSIZE(value);
	size_t		ret;
	struct varlena *result;
	ZSTD_DCtx  *dctx = zstd_get_dctx();

	result = (struct varlena *) palloc(rawsize + VARHDRSZ);

	/* one-shot decoding writes straight into result, no window buffer */
	ret = ZSTD_decompressDCtx(dctx, VARDATA(result), rawsize,
							  (char *) value + VARHDRSZ_COMPRESSED,
							  VARSIZE(value) - VARHDRSZ_COMPRESSED);
	if (ZSTD_isError(ret))
		zstd_report_corrupt(ZSTD_getErrorName(ret));
	if (ret != (size_t) rawsize)
		zstd_report_corrupt(psprintf("Decompressed size %zu does not match the stored size %d.",
									 ret, rawsize));

	SET_VARSIZE(result, rawsize + VARHDRSZ);

	return result;
#endif
}

/*
 * Decompress the first slicelength bytes of a varlena compressed using zstd.
 *
 * The streaming decoder stops as soon as the output buffer is full, so only
 * the blocks that hold the slice are decoded.
 */
struct varlena *
zstd_decompress_datum_slice(const struct varlena *value, int32 slicelength)
{
#ifndef USE_ZSTD
	NO_ZSTD_SUPPORT();
	return NULL;				/* keep compiler quiet */
#else
	int32		rawsize = VARDATA_COMPRESSED_GET_EXTSIZE(value);
	int32		wanted = Min(slicelength, rawsize);
	struct varlena *result;
	ZSTD_DCtx  *dctx = zstd_get_dctx();
	ZSTD_inBuffer in;
	ZSTD_outBuffer out;

	result = (struct varlena *) palloc(wanted + VARHDRSZ);

	in.src = (const char *) value + VARHDRSZ_COMPRESSED;
	in.size = VARSIZE(value) - VARHDRSZ_COMPRESSED;
	in.pos = 0;
	out.dst = VARDATA(result);
	out.size = wanted;
	out.pos = 0;

	while (out.pos < out.size)
	{
		size_t		in_before = in.pos;
		size_t		out_before = out.pos;
		size_t		ret = ZSTD_decompressStream(dctx, &out, &in);

		if (ZSTD_isError(ret))
			zstd_report_corrupt(ZSTD_getErrorName(ret));
		/* no progress means the input ended before the slice did */
		if (in.pos == in_before && out.pos == out_before)
			break;
	}
	zstd_trim_contexts();
	if (out.pos != (size_t) wanted)
		zstd_report_corrupt(psprintf("Decompressed %zu bytes where the slice needs %d.",
									 out.pos, wanted));

	SET_VARSIZE(result, wanted + VARHDRSZ);

	return result;
#endif
}
