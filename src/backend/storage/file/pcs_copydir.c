/*-------------------------------------------------------------------------
 *
 * pcs_copydir.c
 *	  Verbatim copies of page-compressed (pcs) segments that stay sparse.
 *
 * CREATE DATABASE ... STRATEGY FILE_COPY and ALTER DATABASE ... SET
 * TABLESPACE copy a database's files byte for byte (copydir.c).  That is
 * right for compressed segments: their format is read from their own first
 * bytes, so a copy stays compressed and readable wherever it lands.  But a
 * segment holds a map with an entry for each of its RELSEG_SIZE blocks
 * (2 MB), which the storage manager leaves sparse: only the 4 kB pages of
 * the map that hold entries in use take space.  A copy that writes every
 * byte makes each fork take at least 2 MB, so copy_file() hands the chunks
 * of compressed segments to this file, which writes them with the map's
 * zero pages left out.  Zeros outside the map (the data area is allocated
 * ahead on purpose) are written like any other bytes.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/file/pcs_copydir.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "pgstat.h"
#include "storage/pcs_copydir.h"
#include "storage/pcs_format.h"

/* Write len bytes of buf at offset of the copy, or raise an error */
static void
pcs_copy_write(int dstfd, const char *tofile, const char *buf, int len,
			   off_t offset)
{
	errno = 0;
	pgstat_report_wait_start(WAIT_EVENT_COPY_FILE_WRITE);
	if (pg_pwrite(dstfd, buf, len, offset) != len)
	{
		/* if write didn't set errno, assume problem is no disk space */
		if (errno == 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write to file \"%s\": %m", tofile)));
	}
	pgstat_report_wait_end();
}

/*
 * Write the nbytes of buf read at offset of a compressed segment into its
 * copy at the same offset, leaving out the map's 4 kB pages of zeros.
 */
void
pcs_copy_write_chunk(int dstfd, const char *tofile, const char *buf,
					 int nbytes, off_t offset)
{
	int			run = 0;		/* start of the bytes still to write */
	int			done = 0;

	while (done < nbytes)
	{
		off_t		pos = offset + done;
		int			len = Min(nbytes - done,
							  PCS_HEADER_SIZE - (int) (pos % PCS_HEADER_SIZE));

		if (pcs_copy_can_skip(buf + done, pos, len))
		{
			if (done > run)
				pcs_copy_write(dstfd, tofile, buf + run, done - run,
							   offset + run);
			run = done + len;
		}
		done += len;
	}
	if (nbytes > run)
		pcs_copy_write(dstfd, tofile, buf + run, nbytes - run, offset + run);
}

/* Give the copy the length of its original: it may end in a hole */
void
pcs_copy_finish(int dstfd, const char *tofile, off_t length)
{
	if (ftruncate(dstfd, length) < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not truncate file \"%s\": %m", tofile)));
}
