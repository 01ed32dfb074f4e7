/*-------------------------------------------------------------------------
 *
 * faultfs.c
 *	  A pass-through FUSE file system whose reads of chosen byte ranges of
 *	  chosen files fail with EIO, on command.
 *
 *	  faultfs UNDER CONTROL_SOCKET [FUSE OPTIONS] MOUNTPOINT
 *
 * Every operation is passed to the directory UNDER.  A read request
 * (read(), pread(), readahead, or the page fault of a mapping: the kernel
 * sends them all as FUSE reads, since nothing is mounted with direct_io)
 * that overlaps a failed range of its file gets EIO, which read() returns
 * as an error and a page fault of a mapping turns into SIGBUS, as a disk's
 * bad sector would.  Writes are not failed.
 *
 * The Unix socket CONTROL_SOCKET takes one command a connection, one line,
 * and answers "ok" or "error: ...":
 *
 *	  fail RELPATH OFFSET LENGTH   fail reads of [OFFSET, OFFSET + LENGTH) of
 *	                               RELPATH (relative to the mount point),
 *	                               then drop the kernel's cached pages of
 *	                               the file (mapped ones included), so that
 *	                               the next read or page fault asks us
 *	  clear                        fail nothing any more
 *	  drop RELPATH                 drop the kernel's cached pages of RELPATH
 *	  count                        the number of reads failed so far
 *
 * test/fault/faultfs-service.sh builds it and starts it, as the test user,
 * on a mount root made (test/PgStrata/FaultFS.pm drives both).
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/fault/faultfs.c
 *
 *-------------------------------------------------------------------------
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <fuse.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_RANGES 64

typedef struct
{
	char		path[PATH_MAX];	/* "/relative/path", as FUSE names it */
	off_t		start;
	off_t		end;
} FailRange;

static int	under_fd = -1;
static struct fuse *fuse_handle;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FailRange ranges[MAX_RANGES];
static int	nranges;
static long	nfailed;

/* FUSE paths start with "/"; the *at() calls want them relative */
static const char *
rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

static int
fails(const char *path, off_t off, size_t size)
{
	int			hit = 0;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < nranges; i++)
		if (strcmp(ranges[i].path, path) == 0 &&
			off < ranges[i].end && (off_t) (off + size) > ranges[i].start)
		{
			hit = 1;
			nfailed++;
			break;
		}
	pthread_mutex_unlock(&lock);
	return hit;
}

static void *
ff_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void) conn;
	fuse_handle = fuse_get_context()->fuse;
	cfg->use_ino = 1;
	/* the files change only through us */
	cfg->kernel_cache = 0;
	return NULL;
}

static int
ff_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	int			r;

	if (fi)
		r = fstat(fi->fh, st);
	else
		r = fstatat(under_fd, rel(path), st, AT_SYMLINK_NOFOLLOW);
	return r < 0 ? -errno : 0;
}

static int
ff_access(const char *path, int mask)
{
	return faccessat(under_fd, rel(path), mask, 0) < 0 ? -errno : 0;
}

static int
ff_readlink(const char *path, char *buf, size_t size)
{
	ssize_t		n = readlinkat(under_fd, rel(path), buf, size - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int
ff_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
		   struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	int			fd;
	DIR		   *d;
	struct dirent *e;

	(void) off;
	(void) fi;
	(void) flags;
	fd = openat(under_fd, rel(path), O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (d == NULL)
	{
		close(fd);
		return -errno;
	}
	while ((e = readdir(d)) != NULL)
	{
		struct stat st;

		memset(&st, 0, sizeof(st));
		st.st_ino = e->d_ino;
		st.st_mode = e->d_type << 12;
		if (filler(buf, e->d_name, &st, 0, 0))
			break;
	}
	closedir(d);
	return 0;
}

static int
ff_mknod(const char *path, mode_t mode, dev_t rdev)
{
	return mknodat(under_fd, rel(path), mode, rdev) < 0 ? -errno : 0;
}

static int
ff_mkdir(const char *path, mode_t mode)
{
	return mkdirat(under_fd, rel(path), mode) < 0 ? -errno : 0;
}

static int
ff_unlink(const char *path)
{
	return unlinkat(under_fd, rel(path), 0) < 0 ? -errno : 0;
}

static int
ff_rmdir(const char *path)
{
	return unlinkat(under_fd, rel(path), AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int
ff_symlink(const char *target, const char *path)
{
	return symlinkat(target, under_fd, rel(path)) < 0 ? -errno : 0;
}

static int
ff_rename(const char *from, const char *to, unsigned int flags)
{
	return renameat2(under_fd, rel(from), under_fd, rel(to), flags) < 0 ?
		-errno : 0;
}

static int
ff_link(const char *from, const char *to)
{
	return linkat(under_fd, rel(from), under_fd, rel(to), 0) < 0 ? -errno : 0;
}

static int
ff_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int			r;

	if (fi)
		r = fchmod(fi->fh, mode);
	else
		r = fchmodat(under_fd, rel(path), mode, 0);
	return r < 0 ? -errno : 0;
}

static int
ff_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	int			r;

	if (fi)
		r = fchown(fi->fh, uid, gid);
	else
		r = fchownat(under_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);
	return r < 0 ? -errno : 0;
}

static int
ff_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int			r;

	if (fi)
		r = ftruncate(fi->fh, size);
	else
	{
		int			fd = openat(under_fd, rel(path), O_WRONLY);

		if (fd < 0)
			return -errno;
		r = ftruncate(fd, size);
		if (r < 0)
			r = -errno;
		close(fd);
		return r;
	}
	return r < 0 ? -errno : 0;
}

static int
ff_utimens(const char *path, const struct timespec ts[2],
		   struct fuse_file_info *fi)
{
	int			r;

	if (fi)
		r = futimens(fi->fh, ts);
	else
		r = utimensat(under_fd, rel(path), ts, AT_SYMLINK_NOFOLLOW);
	return r < 0 ? -errno : 0;
}

static int
ff_open(const char *path, struct fuse_file_info *fi)
{
	int			fd = openat(under_fd, rel(path), fi->flags & ~O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	fi->fh = fd;
	return 0;
}

static int
ff_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int			fd = openat(under_fd, rel(path), fi->flags, mode);

	if (fd < 0)
		return -errno;
	fi->fh = fd;
	return 0;
}

static int
ff_read(const char *path, char *buf, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	ssize_t		n;

	if (path != NULL && fails(path, off, size))
		return -EIO;
	n = pread(fi->fh, buf, size, off);
	return n < 0 ? -errno : (int) n;
}

static int
ff_write(const char *path, const char *buf, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	ssize_t		n;

	(void) path;
	n = pwrite(fi->fh, buf, size, off);
	return n < 0 ? -errno : (int) n;
}

static int
ff_statfs(const char *path, struct statvfs *st)
{
	int			fd = openat(under_fd, rel(path), O_RDONLY | O_PATH);
	int			r;

	if (fd < 0)
		return -errno;
	r = fstatvfs(fd, st);
	r = r < 0 ? -errno : 0;
	close(fd);
	return r;
}

static int
ff_flush(const char *path, struct fuse_file_info *fi)
{
	(void) path;
	/* as close() of a duplicate would: nothing to lose here */
	(void) fi;
	return 0;
}

static int
ff_release(const char *path, struct fuse_file_info *fi)
{
	(void) path;
	close(fi->fh);
	return 0;
}

static int
ff_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	int			r;

	(void) path;
	r = datasync ? fdatasync(fi->fh) : fsync(fi->fh);
	return r < 0 ? -errno : 0;
}

static int
ff_fallocate(const char *path, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	(void) path;
	return fallocate(fi->fh, mode, off, len) < 0 ? -errno : 0;
}

static off_t
ff_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
	off_t		r;

	(void) path;
	r = lseek(fi->fh, off, whence);
	return r < 0 ? -errno : r;
}

static const struct fuse_operations ops = {
	.init = ff_init,
	.getattr = ff_getattr,
	.access = ff_access,
	.readlink = ff_readlink,
	.readdir = ff_readdir,
	.mknod = ff_mknod,
	.mkdir = ff_mkdir,
	.unlink = ff_unlink,
	.rmdir = ff_rmdir,
	.symlink = ff_symlink,
	.rename = ff_rename,
	.link = ff_link,
	.chmod = ff_chmod,
	.chown = ff_chown,
	.truncate = ff_truncate,
	.utimens = ff_utimens,
	.open = ff_open,
	.create = ff_create,
	.read = ff_read,
	.write = ff_write,
	.statfs = ff_statfs,
	.flush = ff_flush,
	.release = ff_release,
	.fsync = ff_fsync,
	.fallocate = ff_fallocate,
	.lseek = ff_lseek,
};

/* drop the kernel's pages of PATH; ENOENT from FUSE: it has none */
static int
drop(const char *path)
{
	int			r;

	if (fuse_handle == NULL)
		return -ENOTCONN;
	r = fuse_invalidate_path(fuse_handle, path);
	return r == -ENOENT ? 0 : r;
}

static void
command(char *line, char *reply, size_t len)
{
	char		path[PATH_MAX + 1];
	long long	off,
				n;
	int			r;

	line[strcspn(line, "\r\n")] = '\0';
	if (strcmp(line, "clear") == 0)
	{
		pthread_mutex_lock(&lock);
		nranges = 0;
		pthread_mutex_unlock(&lock);
		snprintf(reply, len, "ok\n");
	}
	else if (strcmp(line, "count") == 0)
	{
		pthread_mutex_lock(&lock);
		snprintf(reply, len, "ok %ld\n", nfailed);
		pthread_mutex_unlock(&lock);
	}
	else if (sscanf(line, "fail %4095s %lld %lld", path + 1, &off, &n) == 3)
	{
		path[0] = '/';
		if (off < 0 || n <= 0)
		{
			snprintf(reply, len, "error: bad range\n");
			return;
		}
		pthread_mutex_lock(&lock);
		if (nranges == MAX_RANGES)
		{
			pthread_mutex_unlock(&lock);
			snprintf(reply, len, "error: too many ranges\n");
			return;
		}
		/* "/./x" and "//x" are not how FUSE names a file */
		snprintf(ranges[nranges].path, PATH_MAX, "/%s", rel(path));
		ranges[nranges].start = off;
		ranges[nranges].end = off + n;
		nranges++;
		pthread_mutex_unlock(&lock);
		r = drop(path);
		if (r < 0)
			snprintf(reply, len, "error: invalidating %s: %s\n", path,
					 strerror(-r));
		else
			snprintf(reply, len, "ok\n");
	}
	else if (sscanf(line, "drop %4095s", path + 1) == 1)
	{
		path[0] = '/';
		r = drop(path);
		if (r < 0)
			snprintf(reply, len, "error: invalidating %s: %s\n", path,
					 strerror(-r));
		else
			snprintf(reply, len, "ok\n");
	}
	else
		snprintf(reply, len, "error: unknown command\n");
}

static void *
control(void *arg)
{
	int			ls = *(int *) arg;

	for (;;)
	{
		char		line[PATH_MAX + 128];
		char		reply[PATH_MAX + 128];
		size_t		got = 0;
		int			c = accept(ls, NULL, NULL);

		if (c < 0)
			continue;
		while (got < sizeof(line) - 1)
		{
			ssize_t		n = read(c, line + got, sizeof(line) - 1 - got);

			if (n <= 0)
				break;
			got += n;
			if (memchr(line, '\n', got))
				break;
		}
		line[got] = '\0';
		command(line, reply, sizeof(reply));
		if (write(c, reply, strlen(reply)) < 0)
			perror("faultfs: reply");
		close(c);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	struct sockaddr_un addr;
	static int	ls;
	pthread_t	t;

	if (argc < 4)
	{
		fprintf(stderr, "usage: %s UNDER CONTROL_SOCKET [FUSE OPTIONS] MOUNTPOINT\n",
				argv[0]);
		return 2;
	}
	under_fd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (under_fd < 0)
	{
		perror(argv[1]);
		return 1;
	}
	ls = socket(AF_UNIX, SOCK_STREAM, 0);
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	if (strlen(argv[2]) >= sizeof(addr.sun_path))
	{
		fprintf(stderr, "faultfs: socket path too long: %s\n", argv[2]);
		return 1;
	}
	strcpy(addr.sun_path, argv[2]);
	unlink(argv[2]);
	if (ls < 0 || bind(ls, (struct sockaddr *) &addr, sizeof(addr)) < 0 ||
		listen(ls, 8) < 0)
	{
		perror(argv[2]);
		return 1;
	}
	umask(0);
	pthread_create(&t, NULL, control, &ls);
	/* the FUSE arguments: argv[0], then what follows the socket */
	argv[2] = argv[0];
	return fuse_main(argc - 2, argv + 2, &ops, NULL);
}
