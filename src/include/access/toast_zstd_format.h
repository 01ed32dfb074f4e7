/*-------------------------------------------------------------------------
 *
 * toast_zstd_format.h
 *	  Parsing and validation of the header of a zstd TOAST value (pgstrata),
 *	  without I/O, memory allocation or errors.
 *
 * The bytes a zstd value keeps from va_tcinfo on, in line after its varlena
 * length word and external in its chunks: va_tcinfo (raw size in the low 30
 * bits, the compression method's bit pattern in the top two), then, in the
 * extended encoding (pattern 3), one method byte, then one zstd frame.  The
 * legacy encoding (pattern 2) has no method byte.  The backend
 * (toast_zstd.c) turns a ToastZstdProblem into an ERROR with
 * ERRCODE_DATA_CORRUPTED; the fuzz target (test/fuzz) feeds the same
 * functions arbitrary bytes.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/access/toast_zstd_format.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOAST_ZSTD_FORMAT_H
#define TOAST_ZSTD_FORMAT_H

#include "access/toast_compression.h"

/*
 * The method byte of the extended header that names zstd (the numbering of
 * the pgsql-hackers series pgstrata follows), and the size of the header of
 * an in-line value with that byte.
 */
#define TOAST_EXTENDED_METHOD_ZSTD	2
#define TOAST_EXTENDED_HDRSZ		(VARHDRSZ_COMPRESSED + 1)

/*
 * Smallest and largest window log the decoder is given: zstd's own minimum
 * (ZSTD_WINDOWLOG_ABSOLUTEMIN), and the log of the largest raw size a
 * varlena can have.
 */
#define TOAST_ZSTD_MIN_WINDOW_LOG	10
#define TOAST_ZSTD_MAX_WINDOW_LOG	30

/* What is wrong with a value's header; TOAST_ZSTD_SOUND if nothing */
typedef enum ToastZstdProblem
{
	TOAST_ZSTD_SOUND = 0,
	TOAST_ZSTD_NOT_ZSTD,		/* bit pattern 0 or 1: pglz or lz4 */
	TOAST_ZSTD_TRUNCATED,		/* too short for va_tcinfo and method byte */
	TOAST_ZSTD_UNKNOWN_METHOD,	/* extended header naming another method */
	TOAST_ZSTD_RAWSIZE_RANGE,	/* raw size no varlena can have */
	TOAST_ZSTD_FRAME_LENGTH,	/* no frame, or one longer than the raw size */
	TOAST_ZSTD_POINTER_MISMATCH,	/* TOAST pointer and chunks disagree */
} ToastZstdProblem;

/* A value's header, as toast_zstd_parse() reads it */
typedef struct ToastZstdHeader
{
	ToastCompressionId cmid;	/* bit pattern of va_tcinfo */
	int			method;			/* method byte, or -1 if there is none */
	int32		rawsize;		/* size once decompressed, without header */
	uint32		frame_offset;	/* where the frame starts, from va_tcinfo */
	uint32		frame_len;		/* bytes of the frame */
	int			window_log;		/* ZSTD_d_windowLogMax for this value */
} ToastZstdHeader;

extern int	toast_zstd_window_log(int32 rawsize);
extern ToastZstdProblem toast_zstd_parse(const char *data, size_t len,
										 ToastZstdHeader *header);
extern ToastZstdProblem toast_zstd_check_pointer(int32 va_rawsize,
												 uint32 va_extinfo,
												 const char *data,
												 size_t len,
												 ToastZstdHeader *header);

#endif							/* TOAST_ZSTD_FORMAT_H */
