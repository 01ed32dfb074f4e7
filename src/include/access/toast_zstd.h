/*-------------------------------------------------------------------------
 *
 * toast_zstd.h
 *	  zstd as a TOAST compression method (pgstrata).
 *
 * New values are written with the extended header: TOAST_EXTENDED_COMPRESSION_ID
 * (bit pattern 3) in the top two bits of va_tcinfo (in-line values) or
 * va_extinfo (external values), then one method byte,
 * TOAST_EXTENDED_METHOD_ZSTD, right after va_tcinfo.  Values written by
 * earlier pgstrata builds carry TOAST_ZSTD_LEGACY_COMPRESSION_ID (bit
 * pattern 2) and no method byte; they stay readable, and anything that
 * compresses a value anew writes the extended header.  pg_attribute stores
 * the method as TOAST_ZSTD_COMPRESSION ('z').  The bytes are described in
 * the on-disk encoding section of pgstrata's patches/README.md.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/access/toast_zstd.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOAST_ZSTD_H
#define TOAST_ZSTD_H

/* the method byte and the header's parsing */
#include "access/toast_zstd_format.h"

/* Range and default of the toast_zstd_level GUC */
#define TOAST_ZSTD_LEVEL_MIN		1
#define TOAST_ZSTD_LEVEL_MAX		19
#define TOAST_ZSTD_LEVEL_DEFAULT	3

/* GUC: the zstd level new TOAST values are compressed with */
extern PGDLLIMPORT int toast_zstd_level;

/* GUC: write the legacy encoding (bit pattern 2), for tests only */
extern PGDLLIMPORT bool toast_zstd_debug_legacy_encoding;

struct TupleDescData;
struct varatt_external;

extern void zstd_check_support(void);
extern struct varlena *zstd_compress_datum(const struct varlena *value,
										   ToastCompressionId *cmid);
extern struct varlena *zstd_decompress_datum(const struct varlena *value);
extern struct varlena *zstd_decompress_datum_slice(const struct varlena *value,
												   int32 slicelength);
extern void toast_zstd_check_fetched(const struct varatt_external *toast_pointer,
									 const struct varlena *fetched);
extern bool toast_zstd_is_legacy(const struct varlena *attr);
extern bool *toast_zstd_expand_legacy(struct TupleDescData *tupdesc,
									  Datum *values, bool *isnull);
extern void toast_zstd_free_expanded(int natts, Datum *values,
									 bool *expanded);

#endif							/* TOAST_ZSTD_H */
