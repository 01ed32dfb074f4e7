/*-------------------------------------------------------------------------
 *
 * toast_zstd_format.c
 *	  Parsing and validation of the header of a zstd TOAST value (pgstrata).
 *
 * Nothing here allocates memory, does I/O or raises errors: each check
 * returns TOAST_ZSTD_SOUND or a ToastZstdProblem, which toast_zstd.c turns
 * into an ERROR with ERRCODE_DATA_CORRUPTED.  So the code that decides
 * whether bytes read from disk may be handed to the zstd decoder, and with
 * which window, is the code the fuzz target (test/fuzz/pcs_fuzz.c) runs.
 *
 * The bounds enforced are those every value this build or an earlier one
 * wrote meets: zstd_compress_datum() gives the compressor an output buffer
 * no larger than the raw value, so a frame is never longer than its raw
 * size, and a raw size is a varlena's payload, whose length word (and
 * palloc's MaxAllocSize) caps it below 2^30 bytes.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/access/common/toast_zstd_format.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/toast_zstd_format.h"
#include "varatt.h"

/* Largest raw size: the payload of the largest varlena, also MaxAllocSize's */
#define TOAST_ZSTD_MAX_RAWSIZE	((int32) (VARLENA_EXTSIZE_MASK - VARHDRSZ))

/* Is cmid one of the two bit patterns zstd values are written with? */
static inline bool
toast_zstd_pattern(ToastCompressionId cmid)
{
	return cmid == TOAST_ZSTD_LEGACY_COMPRESSION_ID ||
		cmid == TOAST_EXTENDED_COMPRESSION_ID;
}

/*
 * The window log a value of rawsize bytes is decoded with: the smallest that
 * holds the whole value.  The compressor shrinks its window to the input
 * size, so no frame it wrote asks for more, and a damaged frame asking for
 * more is refused by the decoder before it allocates the window.
 */
int
toast_zstd_window_log(int32 rawsize)
{
	int			window_log = TOAST_ZSTD_MIN_WINDOW_LOG;

	Assert(rawsize >= 0 && rawsize <= (int32) VARLENA_EXTSIZE_MASK);
	while (((int64) 1 << window_log) < rawsize)
		window_log++;
	Assert(window_log <= TOAST_ZSTD_MAX_WINDOW_LOG);
	return window_log;
}

/*
 * Parse the header of a zstd value: the len bytes from va_tcinfo on, that
 * is, an in-line value without its varlena length word, or the whole of an
 * external value's chunks.  Fills in *header as far as the bytes go (the
 * method byte is needed to report an unknown one) and says what is wrong,
 * if anything.  Only a sound header may be handed to the decoder.
 */
ToastZstdProblem
toast_zstd_parse(const char *data, size_t len, ToastZstdHeader *header)
{
	uint32		tcinfo;
	uint32		hdrsz = sizeof(uint32);

	header->cmid = TOAST_INVALID_COMPRESSION_ID;
	header->method = -1;
	header->rawsize = 0;
	header->frame_offset = 0;
	header->frame_len = 0;
	header->window_log = TOAST_ZSTD_MIN_WINDOW_LOG;

	if (len < sizeof(uint32))
		return TOAST_ZSTD_TRUNCATED;
	/* va_tcinfo is not aligned in a chunk's bytes */
	memcpy(&tcinfo, data, sizeof(uint32));
	header->cmid = (ToastCompressionId) (tcinfo >> VARLENA_EXTSIZE_BITS);
	header->rawsize = (int32) (tcinfo & VARLENA_EXTSIZE_MASK);
	if (!toast_zstd_pattern(header->cmid))
		return TOAST_ZSTD_NOT_ZSTD;

	if (header->cmid == TOAST_EXTENDED_COMPRESSION_ID)
	{
		if (len < sizeof(uint32) + 1)
			return TOAST_ZSTD_TRUNCATED;
		header->method = (uint8) data[sizeof(uint32)];
		/* a method a later build may add must not be decoded as zstd */
		if (header->method != TOAST_EXTENDED_METHOD_ZSTD)
			return TOAST_ZSTD_UNKNOWN_METHOD;
		hdrsz++;
	}

	if (header->rawsize > TOAST_ZSTD_MAX_RAWSIZE)
		return TOAST_ZSTD_RAWSIZE_RANGE;
	header->window_log = toast_zstd_window_log(header->rawsize);

	header->frame_offset = hdrsz;
	header->frame_len = (uint32) (len - hdrsz);
	if (header->frame_len == 0 || header->frame_len > (uint32) header->rawsize)
		return TOAST_ZSTD_FRAME_LENGTH;

	Assert(header->frame_offset + header->frame_len == len);
	return TOAST_ZSTD_SOUND;
}

/*
 * Check an external value: its TOAST pointer's va_rawsize and va_extinfo,
 * and the len bytes fetched from its chunks.  TOAST_ZSTD_NOT_ZSTD if
 * neither says zstd; otherwise both must: the same bit pattern, the same
 * raw size, and as many bytes as the pointer says were stored.  Stock
 * PostgreSQL decodes by the chunks' va_tcinfo alone; a pointer that
 * disagrees with it is damage, which would otherwise go unnoticed.
 */
ToastZstdProblem
toast_zstd_check_pointer(int32 va_rawsize, uint32 va_extinfo,
						 const char *data, size_t len,
						 ToastZstdHeader *header)
{
	ToastCompressionId pointer_cmid;
	ToastZstdProblem problem;

	pointer_cmid = (ToastCompressionId) (va_extinfo >> VARLENA_EXTSIZE_BITS);
	problem = toast_zstd_parse(data, len, header);

	if (!toast_zstd_pattern(pointer_cmid))
	{
		/* pglz or lz4 says the pointer; the chunks must not say zstd */
		if (problem == TOAST_ZSTD_NOT_ZSTD || len < sizeof(uint32))
			return TOAST_ZSTD_NOT_ZSTD;
		return TOAST_ZSTD_POINTER_MISMATCH;
	}
	if (problem == TOAST_ZSTD_NOT_ZSTD)
		return TOAST_ZSTD_POINTER_MISMATCH;
	if (problem != TOAST_ZSTD_SOUND)
		return problem;

	if (pointer_cmid != header->cmid ||
		(va_extinfo & VARLENA_EXTSIZE_MASK) != len ||
		(int64) va_rawsize != (int64) header->rawsize + VARHDRSZ)
		return TOAST_ZSTD_POINTER_MISMATCH;
	return TOAST_ZSTD_SOUND;
}
