/*-------------------------------------------------------------------------
 *
 * pcs_reserve.c
 *	  Space held back in each compressed tablespace, so that pages already
 *	  extended can still be written back when its file system is full.
 *
 * md.c allocates a block's 8 kB when the relation is extended, so writing
 * the block back later never needs new space: a full file system is an
 * ERROR for the statement that extends, and checkpoints, the end-of-recovery
 * checkpoint and redo go on.  A compressed block takes only what its image
 * needs; an image that grows (a page filled after its extension, a hint
 * bit that makes it compress worse) needs new units when it is written
 * back, possibly by the checkpointer.  Without a reserve, a full file system
 * then fails every checkpoint, WAL piles up, and after a crash the server
 * cannot start, because the end-of-recovery checkpoint fails the same way.
 *
 * So each compressed tablespace keeps a file of compressed_tablespace_reserve
 * megabytes of allocated space (by default as much as shared_buffers),
 * PCS_RESERVE_FILE in the temporary-files directory of its version
 * directory (pcs_format.h says why there).
 * When a segment cannot grow for want of space (ENOSPC, EDQUOT) while a
 * block is written back (never while one is extended: that is where md
 * fails too, and new data must not eat what old data needs), the writer
 * gives back part of the reserve by truncating the file and tries again.
 * The checkpointer and the startup process may use all of it; other
 * processes (backends and the background writer evicting dirty buffers)
 * only the first half, so that what the next checkpoint needs is kept for
 * it.  The checkpointer restores the reserve at the end of each checkpoint
 * or restartpoint, and CREATE TABLESPACE makes it first.
 *
 * The reserve is for pages that exist.  Extending a compressed fork
 * allocates nothing (a new block has no image until it is written), so
 * without a check the statements that add data would go on succeeding on
 * a full file system and leave the write-backs to spend the reserve; md
 * fails such a statement instead, since it allocates a block's space when
 * it extends.  So does an extension here: pcs_reserve_check_extension()
 * refuses one that the file system's free space cannot back at a block
 * per new page, as md would need.  Redo is not refused (the reserve
 * covers it): a server that cannot replay its WAL cannot start.
 *
 * The reserve is not crash-safe and need not be: an OS crash that loses its
 * growth leaves a smaller reserve until the next checkpoint.  It is not
 * WAL-logged either: every server, standbys included, keeps its own.  Backup
 * tools, pg_rewind and pg_tablespace_size() leave it out, and pg_checksums
 * skips it.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_reserve.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "catalog/pg_tablespace_d.h"
#include "common/relpath.h"
#include "access/xlogutils.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/pcs.h"
#include "utils/timestamp.h"

/*
 * compressed_tablespace_reserve: megabytes held back per tablespace; -1,
 * the default, holds back as much as shared_buffers (pcs_reserve_target())
 */
int			compressed_tablespace_reserve = -1;

/*
 * What is given back is rounded up to this: the space a truncation frees
 * is free for every process on the file system, extensions included, so
 * the writer gives back little more than it needs.
 */
#define PCS_RESERVE_STEP	((off_t) 64 * 1024)

/* How often a process says that it takes from a reserve, at most */
#define PCS_RESERVE_WARN_MS	60000

/*
 * The size of the reserve, in bytes.  What it must cover is what the pages
 * written between two checkpoints may grow by, at most a block each, and
 * the pages that can wait to be written are at most the buffer pool: by
 * default it is as large as shared_buffers.
 */
static off_t
pcs_reserve_target(void)
{
	if (compressed_tablespace_reserve < 0)
		return (off_t) NBuffers * BLCKSZ;
	return (off_t) compressed_tablespace_reserve * 1024 * 1024;
}

/*
 * Path of the reserve of the tablespace whose version directory is given;
 * where builds before December 2026 kept it, if old
 */
static void
pcs_reserve_path(char *path, const char *versiondir, bool old)
{
	if (old)
		snprintf(path, MAXPGPATH, "%s/%s", versiondir, PCS_RESERVE_FILE);
	else
		snprintf(path, MAXPGPATH, "%s/%s/%s", versiondir, PCS_RESERVE_DIR,
				 PCS_RESERVE_FILE);
}

/*
 * Give a file storage up to size bytes; 0 or an error number.  Where the
 * file system has no fallocate(), zeros are written: only this module
 * writes the file, and a concurrent truncation only makes it smaller.
 */
static int
pcs_reserve_allocate(int fd, off_t size)
{
	int			ret;

	do
	{
#if defined(HAVE_POSIX_FALLOCATE)
		ret = posix_fallocate(fd, 0, size);
#else
		ret = EOPNOTSUPP;
#endif
	} while (ret == EINTR);
	if (ret == EOPNOTSUPP || ret == EINVAL)
	{
		static const PGIOAlignedBlock zeros;
		struct stat st;
		off_t		off;

		if (fstat(fd, &st) != 0)
			return errno;
		for (off = st.st_size; off < size; off += BLCKSZ)
		{
			ssize_t		len = Min((off_t) BLCKSZ, size - off);

			errno = 0;
			if (pg_pwrite(fd, zeros.data, len, off) != len)
				return errno ? errno : ENOSPC;
		}
		ret = 0;
	}
	return ret;
}

/*
 * Make the reserve of the tablespace whose version directory is given
 * exactly compressed_tablespace_reserve megabytes, creating it if need be.
 * What fails is reported at elevel (at most WARNING) and changes nothing
 * else: a full file system is the very case the reserve is for, and it is
 * restored at a later checkpoint.
 */
void
pcs_reserve_fill(const char *versiondir, int elevel)
{
	char		path[MAXPGPATH];
	off_t		target = pcs_reserve_target();
	struct stat st;
	int			fd;
	int			ret = 0;

	Assert(elevel <= WARNING);

	/* the reserve of an earlier build goes first: its space is needed */
	pcs_reserve_path(path, versiondir, true);
	if (unlink(path) != 0 && errno != ENOENT)
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", path)));

	/* PostgreSQL makes the directory for temporary files too, on demand */
	snprintf(path, sizeof(path), "%s/%s", versiondir, PCS_RESERVE_DIR);
	if (MakePGDirectory(path) != 0 && errno != EEXIST)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", path)));
		return;
	}

	pcs_reserve_path(path, versiondir, false);
	fd = OpenTransientFile(path, O_RDWR | O_CREAT | PG_BINARY);
	if (fd < 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
		return;
	}
	if (fstat(fd, &st) != 0)
		ret = errno;
	else if (st.st_size > target)
	{
		if (ftruncate(fd, target) != 0)
			ret = errno;
	}
	else if (st.st_size < target || st.st_blocks * 512 < target)
	{
		/* also where a crash lost storage the file had */
		ret = pcs_reserve_allocate(fd, target);
		if (ret == 0 && pg_fsync(fd) != 0)
			ret = errno;
	}
	CloseTransientFile(fd);

	if (ret != 0)
	{
		errno = ret;
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not allocate %lld MB for the reserve \"%s\": %m",
						(long long) (target / (1024 * 1024)), path),
				 errdetail("Pages of compressed relations that need more space when they are written back can use only what is left of the reserve."),
				 errhint("Free disk space in the tablespace.")));
	}
}

/*
 * Restore the reserve of every compressed tablespace: at the end of each
 * checkpoint and restartpoint, once the pages it needed space for are
 * written and synced.
 */
void
pcs_reserve_fill_all(void)
{
	DIR		   *dir;
	struct dirent *de;

	dir = AllocateDir("pg_tblspc");
	while ((de = ReadDirExtended(dir, "pg_tblspc", LOG)) != NULL)
	{
		char		versiondir[MAXPGPATH];
		char		marker[MAXPGPATH];
		struct stat st;

		if (strspn(de->d_name, "0123456789") != strlen(de->d_name))
			continue;
		snprintf(versiondir, sizeof(versiondir), "pg_tblspc/%s/%s",
				 de->d_name, TABLESPACE_VERSION_DIRECTORY);
		snprintf(marker, sizeof(marker), "%s/%s", versiondir,
				 PCS_MARKER_FILE);
		if (stat(marker, &st) == 0)
			pcs_reserve_fill(versiondir, LOG);
	}
	FreeDir(dir);
}

/*
 * A segment of the tablespace spcOid could not grow by need bytes for want
 * of space, while a block was being written back: give back part of the
 * reserve, need bytes where it has them, and say so (once a minute at
 * most: every write-back on a full file system comes here).  Returns
 * false when this process may take nothing more from it (the caller then
 * raises its ERROR).
 */
bool
pcs_reserve_release(Oid spcOid, off_t need)
{
	char		versiondir[MAXPGPATH];
	char		path[MAXPGPATH];
	off_t		target = pcs_reserve_target();
	off_t		floor;
	off_t		size;
	struct stat st;
	int			fd;
	static TimestampTz last_warning = 0;
	TimestampTz now;

	if (spcOid == DEFAULTTABLESPACE_OID || spcOid == GLOBALTABLESPACE_OID)
		return false;

	/* the checkpointer's share is the second half */
	floor = (AmCheckpointerProcess() || AmStartupProcess()) ? 0 : target / 2;

	/* an earlier build's reserve serves until a checkpoint moves it */
	snprintf(versiondir, sizeof(versiondir), "pg_tblspc/%u/%s", spcOid,
			 TABLESPACE_VERSION_DIRECTORY);
	pcs_reserve_path(path, versiondir, false);
	fd = OpenTransientFile(path, O_RDWR | PG_BINARY);
	if (fd < 0 && errno == ENOENT)
	{
		pcs_reserve_path(path, versiondir, true);
		fd = OpenTransientFile(path, O_RDWR | PG_BINARY);
	}
	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0 || st.st_size <= floor)
	{
		CloseTransientFile(fd);
		return false;
	}
	need = TYPEALIGN(PCS_RESERVE_STEP, need);
	size = Max(floor, st.st_size - need);
	if (ftruncate(fd, size) != 0)
	{
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not truncate file \"%s\" to %lld bytes: %m",
						path, (long long) size)));
		CloseTransientFile(fd);
		return false;
	}
	CloseTransientFile(fd);

	now = GetCurrentTimestamp();
	if (last_warning != 0 &&
		!TimestampDifferenceExceeds(last_warning, now, PCS_RESERVE_WARN_MS))
		return true;
	last_warning = now;
	ereport(WARNING,
			(errcode(ERRCODE_DISK_FULL),
			 errmsg("file system of tablespace %u is full, compressed pages written back take space from its reserve",
					spcOid),
			 errdetail("%lld kB of the reserve are left.",
					   (long long) (size / 1024)),
			 errhint("Free disk space in the tablespace; the checkpointer restores the reserve of %lld MB when it can.",
					 (long long) (target / (1024 * 1024)))));
	return true;
}

/*
 * Remove the reserve of a tablespace being dropped, wherever a build put it
 * (no error in redo).  Called before the version directory's subdirectories
 * are removed: the temporary-files directory must be empty by then.
 */
void
pcs_reserve_remove(const char *versiondir, bool redo)
{
	char		path[MAXPGPATH];

	for (int old = 0; old <= 1; old++)
	{
		pcs_reserve_path(path, versiondir, old);
		if (unlink(path) < 0 && errno != ENOENT)
			ereport(redo ? LOG : ERROR,
					(errcode_for_file_access(),
					 errmsg("could not remove file \"%s\": %m", path)));
	}
}

/*
 * Free space at or above which an extension in the same tablespace less
 * than PCS_EXTENSION_RECHECK_MS after the last look needs no new look
 */
#define PCS_EXTENSION_MARGIN	((uint64) 64 * 1024 * 1024)
#define PCS_EXTENSION_RECHECK_MS	1000

/*
 * Refuse to extend the compressed fork of tablespace spcOid whose segment
 * is the file at path by nblocks blocks if its file system cannot back
 * them at a block each, as md.c's extension would need: the statement that
 * adds data is then the one that meets a full file system, as on md, and
 * not the write-backs of the pages already there, which the reserve is
 * for.  Bulk writes extend one block at a time, so a statvfs() per call
 * would be a system call per page: while the last look found plenty of
 * space (PCS_EXTENSION_MARGIN beyond what this process has extended
 * since) and is recent, it is trusted; near a full file system every
 * extension looks again.
 */
void
pcs_reserve_check_extension(Oid spcOid, const char *path, int nblocks)
{
	static Oid	seen_spc = InvalidOid;
	static uint64 seen_avail = 0;
	static TimestampTz seen_at = 0;
	struct statvfs fs;
	uint64		avail;
	uint64		need = (uint64) nblocks * BLCKSZ;
	TimestampTz now;

	if (InRecovery)
		return;
	now = GetCurrentTimestamp();
	if (spcOid == seen_spc && seen_avail >= need + PCS_EXTENSION_MARGIN &&
		!TimestampDifferenceExceeds(seen_at, now, PCS_EXTENSION_RECHECK_MS))
	{
		seen_avail -= need;
		return;
	}

	/*
	 * Nothing to go by (some FUSE file systems report no size at all): as
	 * before, the write-backs meet the full file system
	 */
	if (statvfs(path, &fs) != 0 || fs.f_blocks == 0)
		return;
	avail = (uint64) fs.f_bavail * fs.f_frsize;
	seen_spc = spcOid;
	seen_avail = avail >= need ? avail - need : 0;
	seen_at = now;
	if (avail >= need)
		return;
	errno = ENOSPC;
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not extend file \"%s\": %m", path),
			 errdetail("The file system has %llu kB free, less than the %d new blocks may need when they are written.",
					   (unsigned long long) (avail / 1024), nblocks),
			 errhint("Check free disk space.")));
}
