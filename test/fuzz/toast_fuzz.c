/*-------------------------------------------------------------------------
 *
 * toast_fuzz.c
 *	  The zstd TOAST operations of the fuzz target: arbitrary bytes through
 *	  the header checks of toast_zstd_format.c and, where they accept them,
 *	  through zstd's decoder with the window bound the backend uses.
 *
 * Two operations of pcs_fuzz.c (whose header comment lists the operation
 * bytes) come here:
 *
 *	 5 toast value	  the bytes of a compressed value from va_tcinfo on (an
 *					  in-line value without its length word):
 *					  toast_zstd_parse()
 *	 6 toast external va_rawsize (4 bytes, little-endian), va_extinfo (4),
 *					  then the bytes of the value's chunks:
 *					  toast_zstd_check_pointer(); with the operation byte's
 *					  bit 0x80, the pointer is first made to agree with the
 *					  chunks, so that mutations of the value reach the
 *					  decoder
 *
 * What a check accepts is checked again here, and decoded as toast_zstd.c
 * decodes it: whole, into a buffer of exactly the raw size, and as a slice,
 * through the streaming decoder.  Broken properties abort(): an accepted
 * header with a pattern or method byte other than zstd's, or with bounds
 * the backend relies on broken; an unknown method byte not refused; the
 * two encodings of one frame judged differently; a decoder writing past
 * the raw size, or allocating more than the window bound allows.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/fuzz/toast_fuzz.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zstd.h>

#include "access/toast_zstd_format.h"
#include "varatt.h"

extern void toast_fuzz_value(const uint8_t *data, size_t size);
extern void toast_fuzz_external(const uint8_t *data, size_t size, bool fixup);

/* Bytes after a decoder's output buffer that it must leave alone */
#define FUZZ_CANARY			64
#define FUZZ_CANARY_BYTE	0xA5

/* Largest raw size decoded whole, and largest window decoded as a slice */
#define FUZZ_MAX_WHOLE		(1024 * 1024)
#define FUZZ_MAX_SLICE_LOG	24

/* Longest slice read, as substr() of the first bytes of a value does */
#define FUZZ_SLICE			1000

/*
 * What a streaming decoder may hold besides its window: input and output
 * block buffers (a block is at most 128 kB) and the context itself.
 */
#define FUZZ_DCTX_SLACK		(4 * ZSTD_BLOCKSIZE_MAX + 256 * 1024)

/* Report a property the header checks or the decoder broke, and stop */
static void
toast_fail(const char *what)
{
	fprintf(stderr, "toast_fuzz: %s\n", what);
	abort();
}

/* Read a little-endian uint32 from unaligned input */
static uint32
toast_get_u32(const uint8_t *p)
{
	return (uint32) p[0] | ((uint32) p[1] << 8) | ((uint32) p[2] << 16) |
		((uint32) p[3] << 24);
}

/* A copy of len bytes in a heap block of exactly that size */
static char *
exact_copy(const void *src, size_t len)
{
	char	   *copy = malloc(Max(len, 1));

	memcpy(copy, src, len);
	return copy;
}

/* Fail unless the canary after len bytes of buf is intact */
static void
check_canary(const char *buf, size_t len, const char *what)
{
	for (int i = 0; i < FUZZ_CANARY; i++)
	{
		if ((uint8) buf[len + i] != FUZZ_CANARY_BYTE)
			toast_fail(what);
	}
}

/*
 * The window a value of rawsize bytes can need, worked out here rather than
 * taken from the header check: the smallest power of two, at least zstd's
 * minimum, that holds the value.
 */
static size_t
needed_window(int32 rawsize)
{
	size_t		window = (size_t) 1 << TOAST_ZSTD_MIN_WINDOW_LOG;

	while (window < (size_t) rawsize)
		window <<= 1;
	return window;
}

/* A fresh decompression context bounded to a window, as zstd_get_dctx() */
static ZSTD_DCtx *
bounded_dctx(int window_log)
{
	ZSTD_DCtx  *dctx = ZSTD_createDCtx();

	if (dctx == NULL)
		toast_fail("out of memory for a decompression context");
	if (ZSTD_isError(ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax,
											window_log)))
		toast_fail("the window log the header check chose is refused by zstd");
	return dctx;
}

/*
 * Decode an accepted value's frame the two ways toast_zstd.c does: whole
 * (zstd_decompress_datum) and its first bytes (zstd_decompress_datum_slice).
 */
static void
decode_accepted(const char *frame_src, const ToastZstdHeader *h)
{
	char	   *frame = exact_copy(frame_src, h->frame_len);
	ZSTD_DCtx  *dctx;
	char	   *out;

	if (h->rawsize <= FUZZ_MAX_WHOLE)
	{
		size_t		ret;

		out = malloc(h->rawsize + FUZZ_CANARY);
		memset(out, FUZZ_CANARY_BYTE, h->rawsize + FUZZ_CANARY);
		dctx = bounded_dctx(h->window_log);
		ret = ZSTD_decompressDCtx(dctx, out, h->rawsize, frame, h->frame_len);
		if (!ZSTD_isError(ret) && ret > (size_t) h->rawsize)
			toast_fail("whole decoding returned more than the raw size");
		check_canary(out, h->rawsize, "whole decoding wrote past the raw size");
		ZSTD_freeDCtx(dctx);
		free(out);
	}

	if (needed_window(h->rawsize) <= ((size_t) 1 << FUZZ_MAX_SLICE_LOG))
	{
		size_t		wanted = Min(h->rawsize, FUZZ_SLICE);
		ZSTD_inBuffer in = {frame, h->frame_len, 0};
		ZSTD_outBuffer o;

		out = malloc(wanted + FUZZ_CANARY);
		memset(out, FUZZ_CANARY_BYTE, wanted + FUZZ_CANARY);
		o.dst = out;
		o.size = wanted;
		o.pos = 0;
		dctx = bounded_dctx(h->window_log);
		while (o.pos < o.size)
		{
			size_t		in_before = in.pos;
			size_t		out_before = o.pos;

			if (ZSTD_isError(ZSTD_decompressStream(dctx, &o, &in)))
				break;
			if (in.pos == in_before && o.pos == out_before)
				break;
		}
		if (o.pos > wanted)
			toast_fail("slice decoding returned more than the slice");
		check_canary(out, wanted, "slice decoding wrote past the slice");
		/* a frame asking for a wider window must not have got it */
		if (ZSTD_sizeof_DCtx(dctx) > needed_window(h->rawsize) + FUZZ_DCTX_SLACK)
			toast_fail("the streaming decoder allocated past the window bound");
		ZSTD_freeDCtx(dctx);
		free(out);
	}
	free(frame);
}

/*
 * What a sound header must satisfy for toast_zstd.c to use it: a zstd
 * pattern, zstd's method byte in the extended encoding, a frame that is
 * the rest of the bytes and no longer than the raw size, a raw size a
 * varlena can hold, the smallest window that holds the raw size.
 */
static void
verify_sound_header(const ToastZstdHeader *h, size_t len)
{
	if (h->cmid == TOAST_EXTENDED_COMPRESSION_ID)
	{
		if (h->method != TOAST_EXTENDED_METHOD_ZSTD)
			toast_fail("accepted an extended header with a method other than zstd");
		if (h->frame_offset != sizeof(uint32) + 1)
			toast_fail("an extended header's frame does not follow its method byte");
	}
	else if (h->cmid == TOAST_ZSTD_LEGACY_COMPRESSION_ID)
	{
		if (h->method != -1 || h->frame_offset != sizeof(uint32))
			toast_fail("a legacy header's frame does not follow va_tcinfo");
	}
	else
		toast_fail("accepted a header whose bit pattern is not zstd's");
	if ((size_t) h->frame_offset + h->frame_len != len)
		toast_fail("the frame is not the rest of the value");
	if (h->frame_len == 0 || h->frame_len > (uint32) h->rawsize)
		toast_fail("accepted a frame that is empty or longer than the raw size");
	if (h->rawsize < 0 || h->rawsize > (int32) (VARLENA_EXTSIZE_MASK - VARHDRSZ))
		toast_fail("accepted a raw size no varlena can have");
	if (h->window_log < TOAST_ZSTD_MIN_WINDOW_LOG ||
		h->window_log > TOAST_ZSTD_MAX_WINDOW_LOG ||
		((int64) 1 << h->window_log) < h->rawsize ||
		(h->window_log > TOAST_ZSTD_MIN_WINDOW_LOG &&
		 ((int64) 1 << (h->window_log - 1)) >= h->rawsize))
		toast_fail("the window log is not the smallest that holds the raw size");
}

/*
 * The same frame in the other encoding (pattern 3 with the method byte,
 * or pattern 2 without) must be judged alike: sound, with the same raw
 * size, frame and window.
 */
static void
verify_other_encoding(const char *data, const ToastZstdHeader *h)
{
	bool		to_legacy = (h->cmid == TOAST_EXTENDED_COMPRESSION_ID);
	uint32		hdrsz = to_legacy ? sizeof(uint32) : sizeof(uint32) + 1;
	uint32		tcinfo;
	size_t		len = hdrsz + h->frame_len;
	char	   *other = malloc(len);
	ToastZstdHeader oh;

	tcinfo = (uint32) h->rawsize |
		((uint32) (to_legacy ? TOAST_ZSTD_LEGACY_COMPRESSION_ID :
				   TOAST_EXTENDED_COMPRESSION_ID) << VARLENA_EXTSIZE_BITS);
	memcpy(other, &tcinfo, sizeof(uint32));
	if (!to_legacy)
		other[sizeof(uint32)] = TOAST_EXTENDED_METHOD_ZSTD;
	memcpy(other + hdrsz, data + h->frame_offset, h->frame_len);

	if (toast_zstd_parse(other, len, &oh) != TOAST_ZSTD_SOUND)
		toast_fail("the other encoding of an accepted value is refused");
	if (oh.rawsize != h->rawsize || oh.frame_len != h->frame_len ||
		oh.window_log != h->window_log ||
		memcmp(other + oh.frame_offset, data + h->frame_offset,
			   h->frame_len) != 0)
		toast_fail("the two encodings of one value disagree");
	free(other);
}

/*
 * Check what toast_zstd_parse() said of len bytes against the bytes
 * themselves; returns true if the header was sound.
 */
static bool
verify_parse(const char *data, size_t len, ToastZstdProblem problem,
			 const ToastZstdHeader *h)
{
	uint32		tcinfo;
	uint32		pattern;

	if (len < sizeof(uint32))
	{
		if (problem != TOAST_ZSTD_TRUNCATED)
			toast_fail("did not call a value shorter than va_tcinfo truncated");
		return false;
	}
	memcpy(&tcinfo, data, sizeof(uint32));
	pattern = tcinfo >> VARLENA_EXTSIZE_BITS;
	if ((pattern == TOAST_PGLZ_COMPRESSION_ID ||
		 pattern == TOAST_LZ4_COMPRESSION_ID) != (problem == TOAST_ZSTD_NOT_ZSTD))
		toast_fail("took a pglz or lz4 value for zstd, or the reverse");
	if (pattern == TOAST_EXTENDED_COMPRESSION_ID && len > sizeof(uint32) &&
		(uint8) data[sizeof(uint32)] != TOAST_EXTENDED_METHOD_ZSTD &&
		problem != TOAST_ZSTD_UNKNOWN_METHOD)
		toast_fail("did not refuse an unknown method byte");
	if (problem != TOAST_ZSTD_SOUND)
		return false;
	verify_sound_header(h, len);
	if ((uint32) h->rawsize != (tcinfo & VARLENA_EXTSIZE_MASK))
		toast_fail("the raw size is not va_tcinfo's");
	verify_other_encoding(data, h);
	return true;
}

/* Operation toast value: the bytes of an in-line value from va_tcinfo on */
void
toast_fuzz_value(const uint8_t *data, size_t size)
{
	char	   *value = exact_copy(data, size);
	ToastZstdHeader h;

	if (verify_parse(value, size, toast_zstd_parse(value, size, &h), &h))
		decode_accepted(value + h.frame_offset, &h);
	free(value);
}

/*
 * Operation toast external: a TOAST pointer's va_rawsize and va_extinfo,
 * then the bytes of the value's chunks.
 */
void
toast_fuzz_external(const uint8_t *data, size_t size, bool fixup)
{
	int32		va_rawsize;
	uint32		va_extinfo;
	char	   *chunks;
	size_t		len;
	ToastZstdHeader h;
	ToastZstdHeader ph;
	ToastZstdProblem problem;
	ToastZstdProblem pointer_problem;
	bool		pointer_zstd;

	if (size < 8)
		return;
	va_rawsize = (int32) toast_get_u32(data);
	va_extinfo = toast_get_u32(data + 4);
	len = size - 8;
	chunks = exact_copy(data + 8, len);

	problem = toast_zstd_parse(chunks, len, &h);
	(void) verify_parse(chunks, len, problem, &h);
	if (fixup && len >= sizeof(uint32))
	{
		uint32		tcinfo;

		/* the pointer toast_save_datum() would have written for the chunks */
		memcpy(&tcinfo, chunks, sizeof(uint32));
		va_rawsize = (int32) (tcinfo & VARLENA_EXTSIZE_MASK) + VARHDRSZ;
		va_extinfo = (uint32) Min(len, VARLENA_EXTSIZE_MASK) |
			(tcinfo & ~VARLENA_EXTSIZE_MASK);
	}

	pointer_problem = toast_zstd_check_pointer(va_rawsize, va_extinfo,
											   chunks, len, &ph);
	pointer_zstd = (va_extinfo >> VARLENA_EXTSIZE_BITS) ==
		TOAST_ZSTD_LEGACY_COMPRESSION_ID ||
		(va_extinfo >> VARLENA_EXTSIZE_BITS) == TOAST_EXTENDED_COMPRESSION_ID;

	/* neither says zstd: not zstd's business; one says it: damage */
	if (!pointer_zstd && (len < sizeof(uint32) || problem == TOAST_ZSTD_NOT_ZSTD))
	{
		if (pointer_problem != TOAST_ZSTD_NOT_ZSTD)
			toast_fail("judged a pglz or lz4 external value as zstd");
	}
	else if (pointer_problem == TOAST_ZSTD_NOT_ZSTD)
		toast_fail("took a value that one side calls zstd for another method");
	else if (pointer_zstd && problem == TOAST_ZSTD_NOT_ZSTD &&
			 pointer_problem != TOAST_ZSTD_POINTER_MISMATCH)
		toast_fail("accepted a zstd pointer to chunks of another method");

	if (pointer_problem == TOAST_ZSTD_SOUND)
	{
		if (problem != TOAST_ZSTD_SOUND)
			toast_fail("accepted a pointer to chunks whose header is refused");
		verify_sound_header(&ph, len);
		if ((va_extinfo >> VARLENA_EXTSIZE_BITS) != (uint32) ph.cmid ||
			(va_extinfo & VARLENA_EXTSIZE_MASK) != len ||
			(int64) va_rawsize != (int64) ph.rawsize + VARHDRSZ)
			toast_fail("accepted a pointer that disagrees with its chunks");
		if (ph.rawsize != h.rawsize || ph.frame_offset != h.frame_offset ||
			ph.frame_len != h.frame_len || ph.window_log != h.window_log)
			toast_fail("the pointer check and the value check read the chunks differently");
		decode_accepted(chunks + ph.frame_offset, &ph);
	}
	free(chunks);
}
