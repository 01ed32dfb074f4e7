/*-------------------------------------------------------------------------
 *
 * pcs_file.c
 *	  Recognising page-compressed (pcs) segment files in frontend programs.
 *
 * A compressed segment (src/backend/storage/smgr/README.pcs) has the name
 * of a relation segment but is not a sequence of 8 kB blocks: it starts
 * with a header, then a map (versions 2 to 4), then page images in units
 * of 128 bytes (512 in version 2); in version 5 the images follow the
 * header at once, and the map's pages and their directory lie among them.
 * Programs that read or write relation files block by block (pg_checksums,
 * pg_rewind) ask here first, and treat such files differently.  As in the
 * server, a file is compressed exactly when it begins with the pcs magic;
 * nothing is read from the catalog or from the tablespace's marker file,
 * since compressed files stay compressed wherever they are copied.
 *
 * The server leaves the part of a segment between its header and its data
 * area sparse: the 2 MB map of versions 2 to 4 (version 5 has no such
 * part).  Copies that write every byte of a segment fill it, 2 MB per
 * segment of version 4; pcs_sparse_write() lets a program that writes files
 * from a stream (pg_basebackup, pg_upgrade --copy, pg_combinebackup) leave
 * its pages of zeros out, and pcs_copy_file_range() does the same for
 * copies made with copy_file_range(), which copies holes as zeros on file
 * systems that cannot share extents (ext4).  Where that part ends depends
 * on the segment's version, which both read from its first bytes
 * (pcs_copy_sparse_end()).
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/fe_utils/pcs_file.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_perm.h"
#include "common/logging.h"
#include "fe_utils/pcs_file.h"
#include "storage/pcs_format.h"

/* Does the open file begin with the pcs magic?  Fails on a read error. */
bool
pcs_fd_is_segment(int fd, const char *path)
{
	char		head[sizeof(uint64)];
	ssize_t		r;

	r = pg_pread(fd, head, sizeof(head), 0);
	if (r < 0)
		pg_fatal("could not read file \"%s\": %m", path);
	return pcs_is_segment_start(head, r);
}

/*
 * Does the file at path (relative to dir, unless dir is NULL) begin with the
 * pcs magic?  A file that does not exist (any more) is not a compressed
 * segment.
 */
bool
pcs_path_is_segment(const char *dir, const char *relpath)
{
	char		path[MAXPGPATH];
	int			fd;
	bool		result;

	if (dir != NULL)
		snprintf(path, sizeof(path), "%s/%s", dir, relpath);
	else
		strlcpy(path, relpath, sizeof(path));
	fd = open(path, O_RDONLY | PG_BINARY, 0);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return false;
		pg_fatal("could not open file \"%s\": %m", path);
	}
	result = pcs_fd_is_segment(fd, path);
	close(fd);
	return result;
}

/* The file pcs_write_at() writes into */
typedef struct PcsWriteTarget
{
	int			fd;
	const char *path;
} PcsWriteTarget;

/* Write len bytes at offset of the target file, or fail */
static void
pcs_write_at(void *arg, const char *data, int len, off_t offset)
{
	PcsWriteTarget *target = (PcsWriteTarget *) arg;

	errno = 0;
	if (pg_pwrite(target->fd, data, len, offset) != len)
	{
		/* if write didn't set errno, assume problem is no disk space */
		if (errno == 0)
			errno = ENOSPC;
		pg_fatal("could not write to file \"%s\": %m", target->path);
	}
}

/*
 * Write the next len bytes of a file that arrives as a stream (state zeroed
 * when it starts) into fd.  For a compressed segment, write them at their
 * offset with the 4 kB pages of zeros between the header and the data area
 * left out, and return true; for any other file return false, and the
 * caller writes them as usual.  A caller that writes through stdio must not
 * have written to the file yet: once the first bytes say it is a compressed
 * segment, all of it is written here.
 *
 * Where the data area begins depends on the segment's version, which only
 * the first bytes tell: they are kept in state, as they may come in more
 * than one piece, and where the part that may stay sparse ends is judged
 * from them (pcs_copy_sparse_end()).  Until the version has come whole,
 * that is the header's end, as for version 5: nothing may stay sparse; but
 * those pieces all lie in the header, which is never left out, so the
 * guess never matters.
 */
bool
pcs_sparse_write(PcsSparseFile *state, int fd, const char *path,
				 const char *data, int len)
{
	PcsWriteTarget target = {fd, path};
	off_t		start = state->offset;

	StaticAssertStmt(PCS_SPARSE_HEAD ==
					 offsetof(PcsHeader, version) + sizeof(uint32),
					 "PCS_SPARSE_HEAD must take in the version");

	if (start == 0)
		state->segment = pcs_is_segment_start(data, len);
	state->offset += len;
	if (!state->segment)
		return false;

	if (start < PCS_SPARSE_HEAD)
	{
		int			n = Min(len, PCS_SPARSE_HEAD - (int) start);

		memcpy(state->head + start, data, n);
		state->sparse_end = pcs_copy_sparse_end(state->head, start + n);
	}

	pcs_copy_sparse(data, len, start, state->sparse_end, pcs_write_at,
					&target);
	return true;
}

/* Give a compressed segment written by pcs_sparse_write() its full length */
void
pcs_sparse_finish(PcsSparseFile *state, int fd, const char *path)
{
	if (state->segment && ftruncate(fd, state->offset) != 0)
		pg_fatal("could not write to file \"%s\": %m", path);
}

#ifdef HAVE_COPY_FILE_RANGE

/* Copy the bytes [start, end) of src into dest at the same offsets */
static void
pcs_copy_range(int src_fd, int dest_fd, const char *src, const char *dest,
			   off_t start, off_t end)
{
	off_t		in = start;
	off_t		out = start;

	while (in < end)
	{
		ssize_t		nbytes;

		nbytes = copy_file_range(src_fd, &in, dest_fd, &out,
								 Min(end - in, 1024 * 1024 * 1024), 0);
		if (nbytes < 0)
			pg_fatal("error while copying file range from \"%s\" to \"%s\": %m",
					 src, dest);
		if (nbytes == 0)
			pg_fatal("file \"%s\" ended at offset %lld while it was copied, expected %lld",
					 src, (long long) in, (long long) end);
	}
}

/*
 * Copy the open file src into the empty file dest with copy_file_range() if
 * it is a compressed segment: its header whole, of the part below its data
 * area that the server leaves sparse (pcs_copy_sparse_end(): the map of
 * versions 2 to 4; nothing in version 5) only the ranges that hold
 * data (pcs_next_data_range()), and from there on the rest of the file
 * whole, its data area being allocated ahead on purpose.  Leaves src_fd's
 * offset at its end, so that a caller's loop copying from the current
 * offset to the end finds nothing more to copy.  Returns false, having
 * copied nothing, for any other file.
 */
bool
pcs_copy_file_range(int src_fd, int dest_fd, const char *src,
					const char *dest)
{
	char		head[offsetof(PcsHeader, version) + sizeof(uint32)];
	struct stat st;
	ssize_t		r;
	off_t		sparse_end;
	off_t		pos;
	off_t		data;
	off_t		hole;

	r = pg_pread(src_fd, head, sizeof(head), 0);
	if (r < 0)
		pg_fatal("could not read file \"%s\": %m", src);
	if (!pcs_is_segment_start(head, r))
		return false;
	if (fstat(src_fd, &st) < 0)
		pg_fatal("could not stat file \"%s\": %m", src);
	sparse_end = Min(st.st_size, pcs_copy_sparse_end(head, r));

	pcs_copy_range(src_fd, dest_fd, src, dest, 0,
				   Min(st.st_size, PCS_HEADER_SIZE));
	for (pos = PCS_HEADER_SIZE;
		 pcs_next_data_range(src_fd, pos, sparse_end, &data, &hole);
		 pos = hole)
		pcs_copy_range(src_fd, dest_fd, src, dest, data, hole);
	if (st.st_size > sparse_end)
		pcs_copy_range(src_fd, dest_fd, src, dest, sparse_end, st.st_size);

	/* the copy may end in a hole below the data area */
	if (ftruncate(dest_fd, st.st_size) != 0)
		pg_fatal("could not write to file \"%s\": %m", dest);
	if (lseek(src_fd, st.st_size, SEEK_SET) < 0)
		pg_fatal("could not seek in file \"%s\": %m", src);
	return true;
}

#endif							/* HAVE_COPY_FILE_RANGE */

/*
 * Copy the file that says compressed forks may exist (PCS_IN_USE_FILE) from
 * one data directory to another, if the first has it: pg_upgrade moves the
 * relation files, compressed ones included, and the new cluster must keep
 * protecting them (README.pcs, "Hint bits and full-page images").  The
 * caller makes the new data directory durable afterwards.
 */
void
pcs_copy_in_use_file(const char *old_pgdata, const char *new_pgdata)
{
	char		path[MAXPGPATH];
	int			fd;

	snprintf(path, sizeof(path), "%s/%s", old_pgdata, PCS_IN_USE_FILE);
	if (access(path, F_OK) != 0)
	{
		if (errno != ENOENT)
			pg_fatal("could not access file \"%s\": %m", path);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", new_pgdata, PCS_IN_USE_FILE);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY,
			  pg_file_create_mode);
	if (fd < 0)
		pg_fatal("could not create file \"%s\": %m", path);
	if (close(fd) != 0)
		pg_fatal("could not close file \"%s\": %m", path);
}
