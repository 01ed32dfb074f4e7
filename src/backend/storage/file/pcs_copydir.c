/*-------------------------------------------------------------------------
 *
 * pcs_copydir.c
 *	  Verbatim copies of page-compressed (pcs) segments that stay sparse.
 *
 * CREATE DATABASE ... STRATEGY FILE_COPY and ALTER DATABASE ... SET
 * TABLESPACE copy a database's files byte for byte (copydir.c).  That is
 * right for compressed segments: their format is read from their own first
 * bytes, so a copy stays compressed and readable wherever it lands.  But
 * the storage manager leaves the part of a segment between its header and
 * its data area sparse: in versions 2 to 4 a map with an entry for each of
 * its RELSEG_SIZE blocks (2 MB), of which only the 4 kB pages that hold
 * entries in use take space (version 5 has no such part: its map's pages
 * and their directory lie in the data area).  A copy that writes every
 * byte makes each fork of version 4 take at least 2 MB, so copy_file()
 * hands the chunks of compressed segments to this file, which writes them
 * with the zero pages of that part left out.  Where it ends depends on the
 * segment's version (pcs_copy_sparse_end()).  Zeros
 * of the data area (allocated ahead on purpose; in version 5 it also holds
 * the map's pages and directory) are written like any other bytes.
 *
 * PostgreSQL 18's file_copy_method = clone copies files with
 * copy_file_range() instead.  Where the file system cannot share extents
 * (ext4), the kernel then copies every byte, holes included, and each
 * compressed fork would again take its whole map; so clone_file() hands
 * compressed segments to pcs_clone_file(), which clones the header and the
 * data area whole and of the sparse part only the ranges that hold data.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/file/pcs_copydir.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/pcs_copydir.h"
#include "storage/pcs_format.h"

/* The copy pcs_copy_write() writes into */
typedef struct PcsCopyTarget
{
	int			fd;
	const char *path;
} PcsCopyTarget;

/* Write len bytes of buf at offset of the copy, or raise an error */
static void
pcs_copy_write(void *arg, const char *buf, int len, off_t offset)
{
	PcsCopyTarget *target = (PcsCopyTarget *) arg;

	errno = 0;
	pgstat_report_wait_start(WAIT_EVENT_COPY_FILE_WRITE);
	if (pg_pwrite(target->fd, buf, len, offset) != len)
	{
		/* if write didn't set errno, assume problem is no disk space */
		if (errno == 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write to file \"%s\": %m", target->path)));
	}
	pgstat_report_wait_end();
}

/*
 * The copy copy_file() is making, as the chunk at its offset 0 told: which
 * file it writes (dstfd), and where the part of the segment that may stay
 * sparse ends (pcs_copy_sparse_end()).  Only that first chunk holds the
 * segment's version, and copy_file() hands over the chunks of one file in
 * order, from offset 0, one file at a time, so this is all the state a
 * copy needs.  It is left behind when a copy fails; the next one starts
 * at offset 0 and replaces it.
 */
static int	pcs_copy_fd = -1;
static off_t pcs_copy_end;

/*
 * Write the nbytes of buf read at offset of a compressed segment into its
 * copy at the same offset, leaving out the 4 kB pages of zeros between its
 * header and its data area.
 */
void
pcs_copy_write_chunk(int dstfd, const char *tofile, const char *buf,
					 int nbytes, off_t offset)
{
	PcsCopyTarget target = {dstfd, tofile};
	off_t		sparse_end;

	if (offset == 0)
	{
		pcs_copy_fd = dstfd;
		pcs_copy_end = pcs_copy_sparse_end(buf, nbytes);
	}

	/*
	 * A chunk of a copy whose start was not seen here: version 5's end, the
	 * header's, keeps every byte past the header, so every byte of any data
	 * area.  Only space is at stake, never the copy's bytes: what is left out
	 * reads as zeros.
	 */
	if (dstfd == pcs_copy_fd)
		sparse_end = pcs_copy_end;
	else
		sparse_end = PCS_V5_DATA_OFFSET;

	pcs_copy_sparse(buf, nbytes, offset, sparse_end, pcs_copy_write, &target);
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

#if PG_VERSION_NUM >= 180000 && defined(HAVE_COPY_FILE_RANGE)

/* Clone the bytes [start, end) of fromfile into tofile at the same offsets */
static void
pcs_clone_range(int srcfd, int dstfd, const char *fromfile,
				const char *tofile, off_t start, off_t end)
{
	off_t		in = start;
	off_t		out = start;

	while (in < end)
	{
		ssize_t		nbytes;

		/* a file system that cannot share extents copies: stay cancellable */
		CHECK_FOR_INTERRUPTS();
		pgstat_report_wait_start(WAIT_EVENT_COPY_FILE_COPY);
		nbytes = copy_file_range(srcfd, &in, dstfd, &out,
								 Min(end - in, 1024 * 1024), 0);
		pgstat_report_wait_end();
		if (nbytes < 0 && errno == EINTR)
			continue;
		if (nbytes < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not clone file \"%s\" to \"%s\": %m",
							fromfile, tofile)));
		/* nothing writes the source while it is copied: never cut it short */
		if (nbytes == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("could not clone file \"%s\" to \"%s\": it ended at offset %lld of %lld",
							fromfile, tofile, (long long) in,
							(long long) end)));
	}
}

/*
 * Clone the parts of [PCS_HEADER_SIZE, sparse_end) of a compressed segment
 * that hold data (pcs_next_data_range())
 */
static void
pcs_clone_sparse(int srcfd, int dstfd, const char *fromfile,
				 const char *tofile, off_t sparse_end)
{
	off_t		data;
	off_t		hole;

	for (off_t pos = PCS_HEADER_SIZE;
		 pcs_next_data_range(srcfd, pos, sparse_end, &data, &hole);
		 pos = hole)
		pcs_clone_range(srcfd, dstfd, fromfile, tofile, data, hole);
}

/*
 * Clone fromfile into tofile if it is a compressed segment, keeping the
 * holes between its header and its data area; false, having done nothing,
 * for any other file.
 */
bool
pcs_clone_file(const char *fromfile, const char *tofile)
{
	char		head[offsetof(PcsHeader, version) + sizeof(uint32)];
	struct stat st;
	int			srcfd;
	int			dstfd;
	ssize_t		nread;
	off_t		sparse_end;

	srcfd = OpenTransientFile(fromfile, O_RDONLY | PG_BINARY);
	if (srcfd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", fromfile)));
	nread = pg_pread(srcfd, head, sizeof(head), 0);
	if (nread < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", fromfile)));
	if (!pcs_is_segment_start(head, nread))
	{
		CloseTransientFile(srcfd);
		return false;
	}
	if (fstat(srcfd, &st) < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", fromfile)));

	dstfd = OpenTransientFile(tofile, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (dstfd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", tofile)));

	/*
	 * The header whole, the parts of the sparse map (versions 2 to 4) that
	 * hold data, the data area whole (in version 5 all that follows the
	 * header)
	 */
	sparse_end = Min(st.st_size, pcs_copy_sparse_end(head, nread));
	pcs_clone_range(srcfd, dstfd, fromfile, tofile, 0,
					Min(st.st_size, PCS_HEADER_SIZE));
	pcs_clone_sparse(srcfd, dstfd, fromfile, tofile, sparse_end);
	if (st.st_size > sparse_end)
		pcs_clone_range(srcfd, dstfd, fromfile, tofile, sparse_end,
						st.st_size);
	pcs_copy_finish(dstfd, tofile, st.st_size);

	if (CloseTransientFile(dstfd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", tofile)));
	if (CloseTransientFile(srcfd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", fromfile)));
	return true;
}

#endif							/* PG_VERSION_NUM >= 180000 &&
								 * HAVE_COPY_FILE_RANGE */
