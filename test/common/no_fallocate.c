/*-------------------------------------------------------------------------
 *
 * no_fallocate.c
 *	  Preloaded into a test server (LD_PRELOAD), this makes the file
 *	  systems of the data directory look like ones without fallocate():
 *	  each call fails with EOPNOTSUPP, as on file systems that do not
 *	  implement it.  Files on tmpfs are let through: the server sizes its
 *	  POSIX shared memory (/dev/shm) with posix_fallocate() and cannot
 *	  start without it.
 *
 * test/pcs/016_compression_full_disk.pl builds it with the server's compiler.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  test/common/no_fallocate.c
 *
 *-------------------------------------------------------------------------
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <unistd.h>

#define TMPFS_MAGIC_NUMBER 0x01021994

/* Is fd a file on tmpfs, which keeps its fallocate()? */
static int
on_tmpfs(int fd)
{
	struct statfs st;

	return fstatfs(fd, &st) == 0 && st.f_type == TMPFS_MAGIC_NUMBER;
}

/* fallocate(2) itself, for the files let through */
static int
real_fallocate(int fd, int mode, off_t offset, off_t len)
{
	return syscall(SYS_fallocate, fd, mode, offset, len);
}

int			fallocate(int fd, int mode, off_t offset, off_t len);
int			fallocate64(int fd, int mode, off_t offset, off_t len);
int			posix_fallocate(int fd, off_t offset, off_t len);
int			posix_fallocate64(int fd, off_t offset, off_t len);

/* fallocate(2): not supported here */
int
fallocate(int fd, int mode, off_t offset, off_t len)
{
	if (on_tmpfs(fd))
		return real_fallocate(fd, mode, offset, len);
	errno = EOPNOTSUPP;
	return -1;
}

/* its large-file name */
int
fallocate64(int fd, int mode, off_t offset, off_t len)
{
	return fallocate(fd, mode, offset, len);
}

/* posix_fallocate(3) returns the error number rather than setting errno */
int
posix_fallocate(int fd, off_t offset, off_t len)
{
	if (on_tmpfs(fd))
		return real_fallocate(fd, 0, offset, len) == 0 ? 0 : errno;
	return EOPNOTSUPP;
}

/* its large-file name */
int
posix_fallocate64(int fd, off_t offset, off_t len)
{
	return posix_fallocate(fd, offset, len);
}
