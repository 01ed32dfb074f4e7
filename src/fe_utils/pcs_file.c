/*-------------------------------------------------------------------------
 *
 * pcs_file.c
 *	  Recognising page-compressed (pcs) segment files in frontend programs.
 *
 * A compressed segment (src/backend/storage/smgr/README.pcs) has the name
 * of a relation segment but is not a sequence of 8 kB blocks: it starts
 * with a header, then a map, then page images in 512-byte units.  Programs
 * that read or write relation files block by block (pg_checksums,
 * pg_rewind) ask here first, and treat such files differently.  As in the
 * server, a file is compressed exactly when it begins with the pcs magic;
 * nothing is read from the catalog or from the tablespace's marker file,
 * since compressed files stay compressed wherever they are copied.
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
#include <unistd.h>

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
