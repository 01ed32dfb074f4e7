/*-------------------------------------------------------------------------
 *
 * pcs_backup.c
 *	  Base backups of page-compressed (pcs) segments.
 *
 * A base backup reads relation files as sequences of 8 kB blocks in two
 * places: it verifies the page checksum of each block when the cluster has
 * data checksums, and an incremental backup sends only the blocks the WAL
 * summaries name, by their offset.  Neither means anything for a compressed
 * segment (a header, a map and page images in 512-byte units, see
 * src/backend/storage/smgr/README.pcs): its "blocks" would all fail their
 * checksums, and blocks copied by offset would be pieces of images.  So the
 * backup sends compressed segments whole, as it sends files that are not
 * relation files, and does not verify their page checksums; every image
 * carries a CRC32C that the server checks on each read, and pg_checksums
 * verifies the page checksums inside the images of a stopped cluster.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/backup/pcs_backup.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "backup/pcs_backup.h"
#include "storage/fd.h"
#include "storage/pcs_format.h"

/*
 * Is the file at path a compressed segment?  As in the server, the file's
 * first bytes decide; a file that is gone is not one (the backup skips it).
 */
bool
pcs_backup_is_segment(const char *path)
{
	char		head[sizeof(uint64)];
	int			fd;
	int			nread;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return false;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	nread = pg_pread(fd, head, sizeof(head), 0);
	if (nread < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", path)));
	CloseTransientFile(fd);
	return pcs_is_segment_start(head, nread);
}
