/*-------------------------------------------------------------------------
 *
 * toast_zstd.c
 *	  zstd as a TOAST compression method (pgstrata).
 *
 * A zstd-compressed varlena is laid out like a pglz or lz4 one with one
 * more byte: the usual 4-byte varlena header, va_tcinfo holding the raw size
 * in its low 30 bits and TOAST_EXTENDED_COMPRESSION_ID (3) in its top 2
 * bits, the method byte TOAST_EXTENDED_METHOD_ZSTD (2), then one zstd frame.
 * Stored externally, the same bytes from va_tcinfo on are cut into chunks,
 * and the TOAST pointer's va_extinfo carries pattern 3 as well.  Values
 * written by earlier pgstrata builds have pattern 2
 * (TOAST_ZSTD_LEGACY_COMPRESSION_ID) and no method byte; every reader here
 * accepts both, and toast_zstd_expand_legacy() lets a table rewrite
 * compress them anew.
 *
 * The frame carries no checksum (pages have their own) and no content size
 * (va_tcinfo has it); leaving the content size out also keeps the frame
 * from being "single segment", which bounds the window buffer the
 * streaming decoder allocates for a slice to the compression level's
 * window instead of the whole value.  The decoder refuses frames whose
 * window exceeds the value's raw size: the compressor never uses a larger
 * one, so only a damaged frame asks for it, and it must not make the
 * backend allocate up to libzstd's own limit.
 *
 * What may be handed to the decoder, and with which window, is decided by
 * toast_zstd_format.c, which parses the header without raising errors, so
 * that the fuzz target runs the same code; this file turns its verdicts
 * into errors.
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

#include "access/detoast.h"
#include "access/toast_compression.h"
#include "access/toast_zstd.h"
#include "access/toast_zstd_format.h"
#include "access/tupdesc.h"
#include "utils/memutils.h"
#include "varatt.h"

/* GUCs */
int			toast_zstd_level = TOAST_ZSTD_LEVEL_DEFAULT;
bool		toast_zstd_debug_legacy_encoding = false;

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

/*
 * Report what toast_zstd_parse() or toast_zstd_check_pointer() found wrong
 * with a value's header.
 */
static void
zstd_report_problem(ToastZstdProblem problem, const ToastZstdHeader *header)
{
	switch (problem)
	{
		case TOAST_ZSTD_SOUND:
			return;
		case TOAST_ZSTD_NOT_ZSTD:
			/* the callers dispatch on the bit pattern: a caller's bug */
			elog(ERROR, "compression method id %d is not zstd's",
				 (int) header->cmid);
			break;
		case TOAST_ZSTD_TRUNCATED:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("compressed zstd data is corrupt"),
					 errdetail("The extended compression header is truncated.")));
			break;
		case TOAST_ZSTD_UNKNOWN_METHOD:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("invalid compression method id %d in extended compression header",
							header->method)));
			break;
		case TOAST_ZSTD_RAWSIZE_RANGE:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("compressed zstd data is corrupt"),
					 errdetail("The stored raw size %d exceeds the largest value size.",
							   header->rawsize)));
			break;
		case TOAST_ZSTD_FRAME_LENGTH:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("compressed zstd data is corrupt"),
					 errdetail("The compressed frame of %u bytes is empty or longer than the stored raw size %d.",
							   header->frame_len, header->rawsize)));
			break;
		case TOAST_ZSTD_POINTER_MISMATCH:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg_internal("compressed zstd data is corrupt"),
					 errdetail("The TOAST pointer's compression method or sizes do not match the stored value's header.")));
			break;
	}
	/* an unknown code is a bug of toast_zstd_format.c */
	elog(ERROR, "unexpected zstd TOAST header problem %d", (int) problem);
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

/*
 * Return this backend's decompression context, reset for a new frame and
 * bounded to the window toast_zstd_parse() chose for the value.
 */
static ZSTD_DCtx *
zstd_get_dctx(const ToastZstdHeader *header)
{
	size_t		ret;

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

	Assert(header->window_log >= TOAST_ZSTD_MIN_WINDOW_LOG &&
		   header->window_log <= TOAST_ZSTD_MAX_WINDOW_LOG);
	ret = ZSTD_DCtx_setParameter(zstd_dctx, ZSTD_d_windowLogMax,
								 header->window_log);
	if (ZSTD_isError(ret))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not set zstd decompression parameter: %s",
						ZSTD_getErrorName(ret))));
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

/*
 * Parse the header of an in-line compressed value of either encoding,
 * raising an ERROR unless it is sound, and return where its frame starts.
 */
static const char *
zstd_get_frame(const struct varlena *value, ToastZstdHeader *header)
{
	const char *data = (const char *) value + VARHDRSZ;

	Assert(VARATT_IS_4B_C(value));
	zstd_report_problem(toast_zstd_parse(data, VARSIZE(value) - VARHDRSZ,
										 header),
						header);
	return data + header->frame_offset;
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
 * Returns the compressed varlena, or NULL if the data does not shrink, and
 * in *cmid the bit pattern its va_tcinfo must be given.
 */
struct varlena *
zstd_compress_datum(const struct varlena *value, ToastCompressionId *cmid)
{
#ifndef USE_ZSTD
	NO_ZSTD_SUPPORT();
	return NULL;				/* keep compiler quiet */
#else
	int32		valsize = VARSIZE_ANY_EXHDR(value);
	bool		legacy = toast_zstd_debug_legacy_encoding;
	Size		hdrsz = legacy ? VARHDRSZ_COMPRESSED : TOAST_EXTENDED_HDRSZ;
	size_t		capacity;
	size_t		len;
	struct varlena *tmp;
	ZSTD_CCtx  *cctx = zstd_get_cctx();

	/*
	 * The output buffer is no larger than the input: zstd then fails with
	 * dstSize_tooSmall on data that would not shrink, so incompressible
	 * values cost neither ZSTD_compressBound() bytes nor a second pass.
	 */
	capacity = Min((size_t) valsize, MaxAllocSize - hdrsz);
	tmp = (struct varlena *) palloc(capacity + hdrsz);

	/*
	 * Parameters can only be set between frames, and an earlier call may have
	 * stopped mid-frame, on a too small output buffer or an ERROR.
	 */
	ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
	zstd_set_cparam(cctx, ZSTD_c_compressionLevel, toast_zstd_level);
	zstd_set_cparam(cctx, ZSTD_c_contentSizeFlag, 0);
	zstd_set_cparam(cctx, ZSTD_c_checksumFlag, 0);

	len = ZSTD_compress2(cctx, (char *) tmp + hdrsz, capacity,
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

	SET_VARSIZE_COMPRESSED(tmp, len + hdrsz);
	if (legacy)
		*cmid = TOAST_ZSTD_LEGACY_COMPRESSION_ID;
	else
	{
		*((uint8 *) tmp + VARHDRSZ_COMPRESSED) = TOAST_EXTENDED_METHOD_ZSTD;
		*cmid = TOAST_EXTENDED_COMPRESSION_ID;
	}

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
	ToastZstdHeader header;
	const char *frame = zstd_get_frame(value, &header);
	int32		rawsize = header.rawsize;
	size_t		ret;
	struct varlena *result;
	ZSTD_DCtx  *dctx;

	dctx = zstd_get_dctx(&header);
	result = (struct varlena *) palloc(rawsize + VARHDRSZ);

	/* one-shot decoding writes straight into result, no window buffer */
	ret = ZSTD_decompressDCtx(dctx, VARDATA(result), rawsize, frame,
							  header.frame_len);
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
	ToastZstdHeader header;
	const char *frame = zstd_get_frame(value, &header);
	int32		wanted = Min(slicelength, header.rawsize);
	struct varlena *result;
	ZSTD_DCtx  *dctx;
	ZSTD_inBuffer in;
	ZSTD_outBuffer out;

	dctx = zstd_get_dctx(&header);
	result = (struct varlena *) palloc(wanted + VARHDRSZ);

	in.src = frame;
	in.size = header.frame_len;
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

/*
 * Check an external value fetched whole from its chunks against its TOAST
 * pointer, when either says zstd (toast_zstd_check_pointer()).  Called by
 * detoast.c before a compressed external value is decompressed.
 */
void
toast_zstd_check_fetched(const struct varatt_external *toast_pointer,
						 const struct varlena *fetched)
{
	ToastZstdHeader header;
	ToastZstdProblem problem;

	Assert(VARATT_IS_4B_C(fetched));
	problem = toast_zstd_check_pointer(toast_pointer->va_rawsize,
									   toast_pointer->va_extinfo,
									   (const char *) fetched + VARHDRSZ,
									   VARSIZE(fetched) - VARHDRSZ,
									   &header);
	if (problem != TOAST_ZSTD_NOT_ZSTD)
		zstd_report_problem(problem, &header);
}

/*
 * Is attr a zstd value of the legacy encoding (bit pattern 2), in line or
 * behind an on-disk TOAST pointer?
 */
bool
toast_zstd_is_legacy(const struct varlena *attr)
{
	if (VARATT_IS_EXTERNAL_ONDISK(attr))
	{
		struct varatt_external toast_pointer;

		VARATT_EXTERNAL_GET_POINTER(toast_pointer, attr);
		return VARATT_EXTERNAL_IS_COMPRESSED(toast_pointer) &&
			VARATT_EXTERNAL_GET_COMPRESS_METHOD(toast_pointer) ==
			TOAST_ZSTD_LEGACY_COMPRESSION_ID;
	}
	return VARATT_IS_COMPRESSED(attr) &&
		VARDATA_COMPRESSED_GET_COMPRESS_METHOD(attr) ==
		TOAST_ZSTD_LEGACY_COMPRESSION_ID;
}

/*
 * Decompress the in-line zstd values of the legacy encoding among a row's
 * values, so that forming and storing the row compresses them anew.
 *
 * A table rewrite copies compressed values as they are, and rows short
 * enough not to need the TOAST machinery never meet toast_tuple_init(),
 * which decompresses the others.  Returns NULL if no value was replaced,
 * else a palloc'd array marking the replaced ones for
 * toast_zstd_free_expanded().
 */
bool *
toast_zstd_expand_legacy(TupleDesc tupdesc, Datum *values, bool *isnull)
{
	bool	   *expanded = NULL;

	for (int i = 0; i < tupdesc->natts; i++)
	{
		struct varlena *attr;

		if (isnull[i] || TupleDescAttr(tupdesc, i)->attlen != -1)
			continue;
		attr = (struct varlena *) DatumGetPointer(values[i]);
		if (VARATT_IS_EXTERNAL(attr) || !toast_zstd_is_legacy(attr))
			continue;
		if (expanded == NULL)
			expanded = palloc0(tupdesc->natts * sizeof(bool));
		values[i] = PointerGetDatum(detoast_attr(attr));
		expanded[i] = true;
	}
	return expanded;
}

/* Free the values toast_zstd_expand_legacy() replaced, once they are copied. */
void
toast_zstd_free_expanded(int natts, Datum *values, bool *expanded)
{
	if (expanded == NULL)
		return;
	for (int i = 0; i < natts; i++)
	{
		if (expanded[i])
			pfree(DatumGetPointer(values[i]));
	}
	pfree(expanded);
}
