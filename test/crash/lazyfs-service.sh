#!/usr/bin/env bash
#
# lazyfs-service.sh: mount and unmount LazyFS file systems for the test
# user, from root.
#
#   lazyfs-service.sh start DIR     (as root) start the service in DIR
#   lazyfs-service.sh stop DIR      (as root) stop it, unmount everything
#
# The OS-crash harness (test/crash/) runs as the test user, because
# PostgreSQL refuses root, but each of its cycles unmounts and mounts a
# LazyFS file system, and /dev/fuse is root's only on our machines (and
# fusermount3 is refused it too).  So root runs this small service for the
# length of a run: it reads one request a line from the fifo DIR/requests
# (writable by the test user only) and writes the answer, "ok" or
# "error: ...", to DIR/replies/TOKEN.  Requests (PgStrata/LazyFS.pm sends
# them):
#
#   TOKEN mount NAME CACHE_MB    mount LazyFS at DIR/fs/NAME/mnt over
#                                DIR/fs/NAME/under, its fifos and log in
#                                DIR/fs/NAME/ctl, the daemon running as
#                                the test user
#   TOKEN umount NAME            kill -9 its daemon, unmount (lazily)
#   TOKEN destroy NAME           umount, then remove DIR/fs/NAME
#
# NAME and TOKEN are [A-Za-z0-9_]; the service creates every path it
# mounts on itself, in directories only root can write, so a request can
# mount nothing elsewhere.  The directories the daemon writes (mnt, under,
# ctl) belong to the test user.
#
# Portions Copyright (c) 2026, pgstrata developers
#
# test/crash/lazyfs-service.sh

set -uo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
TEST_USER=${PGSTRATA_TEST_USER:-pgstrata}
LAZYFS_DIR=${LAZYFS_DIR:-$TOP/build/lazyfs}
LAZYFS_BIN=$LAZYFS_DIR/lazyfs/build/lazyfs
MOUNT_BIN=$LAZYFS_DIR/lazyfs_mount

# fs_umount DIR NAME: kill the daemon, unmount, quietly
fs_umount()
{
	local fs=$1/fs/$2 pid
	if [ -f "$fs/lazyfs.pid" ]; then
		pid=$(cat "$fs/lazyfs.pid")
		# only our daemon: the pid must still be a lazyfs process
		if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = lazyfs ]; then
			kill -KILL "$pid" 2>/dev/null
			for _ in $(seq 50); do
				[ -d "/proc/$pid" ] || break
				sleep 0.1
			done
		fi
		rm -f "$fs/lazyfs.pid"
	fi
	if grep -qs " $fs/mnt fuse" /proc/mounts; then
		umount -l "$fs/mnt" 2>/dev/null || fusermount3 -u -z "$fs/mnt" 2>/dev/null
	fi
	! grep -qs " $fs/mnt fuse" /proc/mounts
}

# fs_mount DIR NAME CACHE_MB
fs_mount()
{
	local dir=$1 name=$2 mb=$3 fs=$1/fs/$2 i
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
	rm -f "$fs/ctl/faults.fifo" "$fs/ctl/done.fifo"
	# The cache holds everything not yet fsynced: no eviction, so that
	# nothing reaches the underlying directory but what was synced.
	cat >"$fs/lazyfs.toml" <<TOML
[faults]
fifo_path="$fs/ctl/faults.fifo"
fifo_path_completed="$fs/ctl/done.fifo"
[cache]
apply_eviction=false
[cache.simple]
custom_size="${mb}mb"
blocks_per_page=1
[filesystem]
log_all_operations=false
logfile="$fs/ctl/lazyfs.log"
TOML
	chmod 0644 "$fs/lazyfs.toml"
	setsid "$MOUNT_BIN" --user "$TEST_USER" "$fs/mnt" -- "$LAZYFS_BIN" @FD@ \
		--config-path "$fs/lazyfs.toml" -f -o modules=subdir \
		-o subdir="$fs/under" </dev/null >>"$fs/lazyfs.out" 2>&1 &
	echo $! >"$fs/lazyfs.pid"
	# mounted, and the daemon has made its fifo: it is serving
	for i in $(seq 100); do
		if grep -qs " $fs/mnt fuse" /proc/mounts && [ -p "$fs/ctl/faults.fifo" ]; then
			echo ok
			return
		fi
		if ! [ -d "/proc/$(cat "$fs/lazyfs.pid")" ]; then
			break
		fi
		sleep 0.1
	done
	fs_umount "$dir" "$name"
	echo "error: LazyFS did not come up: $(tail -n 3 "$fs/lazyfs.out" | tr '\n' ' ')"
}

serve()
{
	local dir=$1 token cmd name mb extra reply
	while :; do
		while read -r token cmd name mb extra; do
			[[ "$token" =~ ^[A-Za-z0-9_]+$ ]] || continue
			if ! [[ "$name" =~ ^[A-Za-z0-9_]+$ ]]; then
				reply="error: bad name"
			else
				case "$cmd" in
					mount)
						if [[ "$mb" =~ ^[0-9]+$ ]]; then
							reply=$(fs_mount "$dir" "$name" "$mb")
						else
							reply="error: bad cache size"
						fi
						;;
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
		[ "$(id -u)" = 0 ] || { echo "error: lazyfs-service.sh start must run as root" >&2; exit 1; }
		[ -x "$LAZYFS_BIN" ] || { echo "error: no LazyFS at $LAZYFS_BIN (test/crash/build-lazyfs.sh)" >&2; exit 1; }
		if [ ! -x "$MOUNT_BIN" ] || [ "$TOP/test/crash/lazyfs_mount.c" -nt "$MOUNT_BIN" ]; then
			gcc -O2 -Wall -o "$MOUNT_BIN" "$TOP/test/crash/lazyfs_mount.c" || exit 1
		fi
		"$0" stop "$dir"
		mkdir -p "$dir/replies" "$dir/fs"
		chown root: "$dir" "$dir/replies" "$dir/fs"
		chmod 0755 "$dir" "$dir/replies" "$dir/fs"
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
			if grep -qs lazyfs-service "/proc/$pid/cmdline"; then
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
