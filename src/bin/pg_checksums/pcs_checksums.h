/*-------------------------------------------------------------------------
 *
 * pcs_checksums.h
 *	  pg_checksums for page-compressed (pcs) segments.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/bin/pg_checksums/pcs_checksums.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PCS_CHECKSUMS_H
#define PCS_CHECKSUMS_H

/* What one compressed segment contributed to pg_checksums' counters */
typedef struct PcsChecksumCounts
{
	int64		blocks_scanned; /* pages with an image */
	int64		bad_blocks;		/* damaged images, wrong page checksums */
	int64		blocks_written; /* images rewritten with a new checksum */
	int64		bytes;			/* size of the file, for progress reports */
} PcsChecksumCounts;

extern PcsChecksumCounts pcs_checksum_segment(int fd, const char *fn,
											  int segmentno, bool enable,
											  bool do_sync);

#endif							/* PCS_CHECKSUMS_H */
