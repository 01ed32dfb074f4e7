/*-------------------------------------------------------------------------
 *
 * toast_zstd.h
 *	  zstd as a TOAST compression method (pgstrata).
 *
 * The method is stored as TOAST_ZSTD_COMPRESSION_ID (2) in the two method
 * bits of va_tcinfo and va_extinfo, and as TOAST_ZSTD_COMPRESSION ('z') in
 * pg_attribute.attcompression; see toast_compression.h and the on-disk
 * encoding section of pgstrata's patches/README.md.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/access/toast_zstd.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOAST_ZSTD_H
#define TOAST_ZSTD_H

/* Range and default of the toast_zstd_level GUC */
#define TOAST_ZSTD_LEVEL_MIN		1
#define TOAST_ZSTD_LEVEL_MAX		19
#define TOAST_ZSTD_LEVEL_DEFAULT	3

/* GUC: the zstd level new TOAST values are compressed with */
extern PGDLLIMPORT int toast_zstd_level;

extern void zstd_check_support(void);
extern struct varlena *zstd_compress_datum(const struct varlena *value);
extern struct varlena *zstd_decompress_datum(const struct varlena *value);
extern struct varlena *zstd_decompress_datum_slice(const struct varlena *value,
												   int32 slicelength);

#endif							/* TOAST_ZSTD_H */
