/*-------------------------------------------------------------------------
 *
 * lazyfs_mount.c
 *	  Start LazyFS as an ordinary user on a machine where /dev/fuse is
 *	  root's only.
 *
 * PostgreSQL must run as the test user and refuses a data directory
 * owned by root, so the FUSE daemon, which owns the files it creates, must
 * run as that user too; but /dev/fuse is root's only on our machines
 * (mode 0600), and libfuse, when it cannot open the device, fails ("failed
 * to open /dev/fuse") instead of asking fusermount3.  Even fusermount3,
 * setuid root, is refused the device in our containers.  So root mounts:
 *
 *	  lazyfs_mount --user USER MOUNTPOINT -- DAEMON [ARGS...]
 *
 * run as root, opens /dev/fuse, mounts it at MOUNTPOINT for USER
 * (user_id, group_id, allow_other so that root can look in too), becomes
 * USER and executes the daemon with the mountpoint "/dev/fd/N", which
 * libfuse (3.3 and later) takes as an already mounted descriptor.  Root
 * unmounts (umount -l) when the daemon is gone.
 *
 *	  lazyfs_mount MOUNTPOINT -- DAEMON [ARGS...]
 *
 * run by anyone, asks fusermount3 to mount (it sends the descriptor back
 * over the socket named by _FUSE_COMMFD, as libfuse does), for machines
 * where the setuid helper may open the device; unmount with
 * "fusermount3 -u -z DIR" as the same user.
 *
 * The daemon's arguments must contain the word "@FD@", which is replaced
 * by "/dev/fd/N".  Give the daemon -f: it is this process, so its pid is
 * the one the caller started, and the caller can kill it.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/crash/lazyfs_mount.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <pwd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef FUSERMOUNT
#define FUSERMOUNT "fusermount3"
#endif

/* the descriptor fusermount3 sends over SOCK, or -1 */
static int
receive_fd(int sock)
{
	struct msghdr msg;
	struct iovec iov;
	char		buf[1];
	char		ccmsg[CMSG_SPACE(sizeof(int))];
	struct cmsghdr *cmsg;
	ssize_t		rv;

	memset(&msg, 0, sizeof(msg));
	iov.iov_base = buf;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = ccmsg;
	msg.msg_controllen = sizeof(ccmsg);

	do
		rv = recvmsg(sock, &msg, 0);
	while (rv == -1 && errno == EINTR);
	if (rv <= 0)
		return -1;
	cmsg = CMSG_FIRSTHDR(&msg);
	if (cmsg == NULL || cmsg->cmsg_type != SCM_RIGHTS)
		return -1;
	return *(int *) CMSG_DATA(cmsg);
}

/* as root: mount /dev/fuse at MOUNTPOINT for USER; the descriptor, or -1 */
static int
mount_as_root(const char *user, const char *mountpoint, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(user);
	struct stat st;
	char		opts[256];
	int			devfd;

	if (pw == NULL)
	{
		fprintf(stderr, "lazyfs_mount: no user %s\n", user);
		return -1;
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	if (stat(mountpoint, &st) != 0 || !S_ISDIR(st.st_mode))
	{
		fprintf(stderr, "lazyfs_mount: %s is not a directory\n", mountpoint);
		return -1;
	}
	devfd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (devfd < 0)
	{
		fprintf(stderr, "lazyfs_mount: could not open /dev/fuse: %s\n",
				strerror(errno));
		return -1;
	}
	snprintf(opts, sizeof(opts),
			 "fd=%i,rootmode=%o,user_id=%u,group_id=%u,allow_other",
			 devfd, st.st_mode & S_IFMT, (unsigned) *uid, (unsigned) *gid);
	if (mount("lazyfs", mountpoint, "fuse.lazyfs", MS_NOSUID | MS_NODEV,
			  opts) != 0)
	{
		fprintf(stderr, "lazyfs_mount: could not mount %s: %s\n",
				mountpoint, strerror(errno));
		return -1;
	}
	return devfd;
}

/* as anyone: let fusermount3 mount; the descriptor, or -1 */
static int
mount_with_fusermount(const char *mountpoint)
{
	int			fds[2];
	int			devfd;
	int			status;
	pid_t		pid;
	char		env[32];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
	{
		perror("socketpair");
		return -1;
	}
	pid = fork();
	if (pid < 0)
	{
		perror("fork");
		return -1;
	}
	if (pid == 0)
	{
		/* fusermount3 -o OPTIONS -- MOUNTPOINT, told where to send the fd */
		close(fds[1]);
		fcntl(fds[0], F_SETFD, 0);
		snprintf(env, sizeof(env), "%i", fds[0]);
		setenv("_FUSE_COMMFD", env, 1);
		execlp(FUSERMOUNT, FUSERMOUNT, "-o", "fsname=lazyfs,subtype=lazyfs",
			   "--", mountpoint, (char *) NULL);
		perror("exec " FUSERMOUNT);
		_exit(127);
	}
	close(fds[0]);
	devfd = receive_fd(fds[1]);
	close(fds[1]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
		WEXITSTATUS(status) != 0 || devfd < 0)
	{
		fprintf(stderr, "lazyfs_mount: %s could not mount %s\n",
				FUSERMOUNT, mountpoint);
		return -1;
	}
	return devfd;
}

int
main(int argc, char **argv)
{
	const char *user = NULL;
	int			first = 1;
	int			devfd;
	int			sep;
	uid_t		uid;
	gid_t		gid;
	char		fdpath[32];

	if (argc > 2 && strcmp(argv[1], "--user") == 0)
	{
		user = argv[2];
		first = 3;
	}
	for (sep = first; sep < argc && strcmp(argv[sep], "--") != 0; sep++)
		;
	if (sep != first + 1 || sep + 1 >= argc)
	{
		fprintf(stderr, "usage: %s [--user USER] MOUNTPOINT -- DAEMON [ARGS...]\n",
				argv[0]);
		return 2;
	}

	if (user != NULL)
	{
		devfd = mount_as_root(user, argv[first], &uid, &gid);
		if (devfd < 0)
			return 1;
		if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
		{
			fprintf(stderr, "lazyfs_mount: could not become %s: %s\n",
					user, strerror(errno));
			return 1;
		}
	}
	else
	{
		devfd = mount_with_fusermount(argv[first]);
		if (devfd < 0)
			return 1;
	}

	/* the daemon inherits the descriptor */
	fcntl(devfd, F_SETFD, 0);
	snprintf(fdpath, sizeof(fdpath), "/dev/fd/%i", devfd);
	for (int i = sep + 1; i < argc; i++)
		if (strcmp(argv[i], "@FD@") == 0)
			argv[i] = fdpath;
	execv(argv[sep + 1], &argv[sep + 1]);
	fprintf(stderr, "lazyfs_mount: could not execute %s: %s\n",
			argv[sep + 1], strerror(errno));
	return 1;
}
