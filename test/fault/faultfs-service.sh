#!/usr/bin/env bash
#
# faultfs-service.sh: mount and unmount fault-injecting file systems
# (faultfs) for the test user, from root.
#
#   faultfs-service.sh start DIR     (as root) start the service in DIR
#   faultfs-service.sh stop DIR      (as root) stop it, unmount everything
#
# The I/O-error tests (test/fault/) run as the test user, because
# PostgreSQL refuses root, but they need a file system whose reads of
# chosen byte ranges of a file fail with EIO, as a disk's bad sectors do:
# for read() and pread() an error, for the page fault of a shared mapping
# SIGBUS.  Device-mapper's error target would do it under ext4, but the
# kernels we run on often have no device-mapper (and no modules to load),
# so the file system is faultfs (faultfs.c, next to this script), a FUSE
# pass-through over a directory, and /dev/fuse is root's only on our
# machines.  So root runs this small service for the length of a run, as
# test/crash/lazyfs-service.sh does for LazyFS: it reads one request a
# line from the fifo DIR/requests (writable by the test user only) and
# writes the answer, "ok" or "error: ...", to DIR/replies/TOKEN.
# Requests (PgStrata/FaultFS.pm sends them):
#
#   TOKEN mount NAME      mount faultfs at DIR/fs/NAME/mnt over
#                         DIR/fs/NAME/under; its control socket
#                         DIR/fs/NAME/ctl/control.sock, its log
#                         DIR/fs/NAME/faultfs.out; the daemon runs as the
#                         test user
#   TOKEN umount NAME     kill the daemon, unmount (lazily)
#   TOKEN destroy NAME    umount, then remove DIR/fs/NAME
#   TOKEN dropcaches -    sync, then echo 3 > /proc/sys/vm/drop_caches
#
# The faults themselves need no root: the test user talks to the daemon's
# control socket (fail RELPATH OFFSET LENGTH, clear, drop RELPATH, count;
# see faultfs.c).  NAME and TOKEN are [A-Za-z0-9_]; the service creates
# every path it mounts on itself, in directories only root can write, so a
# request can mount nothing elsewhere.  The directories the daemon uses
# (mnt, under, ctl) belong to the test user.  The programs (faultfs, and
# test/crash/lazyfs_mount.c, which mounts for another user) are built into
# DIR/bin at start; they need gcc and libfuse3-dev.
#
# Portions Copyright (c) 2026, pgstrata developers
#
# test/fault/faultfs-service.sh

set -uo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
TEST_USER=${PGSTRATA_TEST_USER:-pgstrata}

# fs_umount DIR NAME: kill the daemon, unmount, quietly
fs_umount()
{
	local fs=$1/fs/$2 pid
	if [ -f "$fs/faultfs.pid" ]; then
		pid=$(cat "$fs/faultfs.pid")
		# only our daemon: the pid must still be a faultfs process
		if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = faultfs ]; then
			kill -TERM "$pid" 2>/dev/null
			for _ in $(seq 50); do
				[ -d "/proc/$pid" ] || break
				sleep 0.1
			done
			kill -KILL "$pid" 2>/dev/null
		fi
		rm -f "$fs/faultfs.pid"
	fi
	if grep -qs " $fs/mnt fuse" /proc/mounts; then
		umount -l "$fs/mnt" 2>/dev/null
	fi
	! grep -qs " $fs/mnt fuse" /proc/mounts
}

# fs_mount DIR NAME
fs_mount()
{
	local dir=$1 name=$2 fs=$1/fs/$2 i
	if grep -qs " $fs/mnt fuse" /proc/mounts; then
		echo "error: $name is mounted"
		return
	fi
	mkdir -p "$fs"
	chown root: "$fs"
	chmod 0755 "$fs"
	for d in mnt under ctl; do
		[ -L "$fs/$d" ] && rm -f "$fs/$d"
		mkdir -p "$fs/$d"
		chown "$TEST_USER:" "$fs/$d"
		chmod 0700 "$fs/$d"
	done
	chmod 0755 "$fs/mnt"
	rm -f "$fs/ctl/control.sock"
	setsid "$dir/bin/fault_mount" --user "$TEST_USER" "$fs/mnt" -- \
		"$dir/bin/faultfs" "$fs/under" "$fs/ctl/control.sock" @FD@ -f \
		</dev/null >>"$fs/faultfs.out" 2>&1 &
	echo $! >"$fs/faultfs.pid"
	# mounted, and the daemon listens on its socket: it is serving
	for i in $(seq 100); do
		if grep -qs " $fs/mnt fuse" /proc/mounts && [ -S "$fs/ctl/control.sock" ]; then
			echo ok
			return
		fi
		if ! [ -d "/proc/$(cat "$fs/faultfs.pid")" ]; then
			break
		fi
		sleep 0.1
	done
	fs_umount "$dir" "$name"
	echo "error: faultfs did not come up: $(tail -n 3 "$fs/faultfs.out" | tr '\n' ' ')"
}

serve()
{
	local dir=$1 token cmd name extra reply
	while :; do
		while read -r token cmd name extra; do
			[[ "$token" =~ ^[A-Za-z0-9_]+$ ]] || continue
			if [ "$cmd" = dropcaches ]; then
				sync
				if echo 3 >/proc/sys/vm/drop_caches; then reply=ok; else reply="error: drop_caches"; fi
			elif ! [[ "$name" =~ ^[A-Za-z0-9_]+$ ]]; then
				reply="error: bad name"
			else
				case "$cmd" in
					mount) reply=$(fs_mount "$dir" "$name") ;;
					umount)
						if fs_umount "$dir" "$name"; then reply=ok; else reply="error: still mounted"; fi
						;;
					destroy)
						if fs_umount "$dir" "$name"; then
							rm -rf "${dir:?}/fs/$name"
							reply=ok
						else
							reply="error: still mounted"
						fi
						;;
					*) reply="error: unknown request $cmd" ;;
				esac
			fi
			echo "$reply" >"$dir/replies/$token.tmp"
			mv -f "$dir/replies/$token.tmp" "$dir/replies/$token"
		done <"$dir/requests"
		[ -p "$dir/requests" ] || break
	done
}

case "${1:-}" in
	start)
		dir=${2:?directory}
		[ "$(id -u)" = 0 ] || { echo "error: faultfs-service.sh start must run as root" >&2; exit 1; }
		[ -c /dev/fuse ] || { echo "error: no /dev/fuse" >&2; exit 1; }
		"$0" stop "$dir"
		mkdir -p "$dir/replies" "$dir/fs" "$dir/bin"
		chown root: "$dir" "$dir/replies" "$dir/fs" "$dir/bin"
		chmod 0755 "$dir" "$dir/replies" "$dir/fs" "$dir/bin"
		if [ ! -x "$dir/bin/faultfs" ] || [ "$TOP/test/fault/faultfs.c" -nt "$dir/bin/faultfs" ]; then
			# a machine that never built it gets what the build needs
			"$TOP/patches/tools/install-deps.sh" gcc pkg-config libfuse3-dev fuse3 >&2 ||
				exit 1
			# shellcheck disable=SC2046
			gcc -O2 -Wall -o "$dir/bin/faultfs" "$TOP/test/fault/faultfs.c" \
				$(pkg-config --cflags --libs fuse3) -lpthread ||
				{ echo "error: cannot build faultfs (gcc, libfuse3-dev)" >&2; exit 1; }
		fi
		if [ ! -x "$dir/bin/fault_mount" ] || [ "$TOP/test/crash/lazyfs_mount.c" -nt "$dir/bin/fault_mount" ]; then
			gcc -O2 -Wall -o "$dir/bin/fault_mount" "$TOP/test/crash/lazyfs_mount.c" || exit 1
		fi
		rm -f "$dir/requests"
		mkfifo -m 0600 "$dir/requests"
		chown "$TEST_USER:" "$dir/requests"
		setsid "$0" serve "$dir" </dev/null >>"$dir/service.log" 2>&1 &
		echo $! >"$dir/service.pid"
		;;
	serve)
		serve "$2"
		;;
	stop)
		dir=${2:?directory}
		if [ -f "$dir/service.pid" ]; then
			pid=$(cat "$dir/service.pid")
			if grep -qs faultfs-service "/proc/$pid/cmdline"; then
				kill "$pid" 2>/dev/null
			fi
			rm -f "$dir/service.pid"
		fi
		rm -f "$dir/requests"
		for fs in "$dir"/fs/*/; do
			[ -d "$fs" ] && fs_umount "$dir" "$(basename "$fs")"
		done
		true
		;;
	*)
		echo "usage: $0 start|stop DIR" >&2
		exit 2
		;;
esac
