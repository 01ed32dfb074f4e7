# lib.sh: shell helpers shared by the test runners (sourced, not run).

# The build under test: the release build (build/obj, build/install), or with
# PGSTRATA_FLAVOUR=cassert the assert-enabled one (build/obj-cassert, ...).
# PGSTRATA_PG=18 (make PG=18) selects PostgreSQL 18's builds, under build/18.
FLAVOUR_SUFFIX=${PGSTRATA_FLAVOUR:+-$PGSTRATA_FLAVOUR}
case "${PGSTRATA_PG:-17}" in
	17) BUILD_ROOT=$TOP/build ;;
	*) BUILD_ROOT=$TOP/build/$PGSTRATA_PG ;;
esac
PG_OBJ=$BUILD_ROOT/obj$FLAVOUR_SUFFIX
PG_INSTALL=$BUILD_ROOT/install$FLAVOUR_SUFFIX

# The zstd TOAST header checks, which the fuzz target builds from source.
TOAST_FORMAT_SOURCES="$TOP/src/backend/access/common/toast_zstd_format.c"
# The format layer of compressed segments, which programs outside the
# server (unit tests, the fuzz target, benchmarks) build from source.
PCS_FORMAT_SOURCES="$TOP/src/backend/storage/smgr/pcs_codec.c $TOP/src/backend/storage/smgr/pcs_estimate.c $TOP/src/backend/storage/smgr/pcs_format.c $TOP/src/backend/storage/smgr/pcs_transform.c"

# build_page_codec DIR: build test/bench/compression/page_codec.c (the
# storage manager's codec against plain zstd, page by page) into
# DIR/page_codec, against the installed server and the format layer.
build_page_codec()
{
	local pgc=$PG_INSTALL/bin/pg_config
	# shellcheck disable=SC2046,SC2086
	gcc -O2 $("$pgc" --cppflags) -I"$TOP/src/include" -I"$("$pgc" --includedir-server)" \
		-o "$1/page_codec" "$TOP/test/bench/compression/page_codec.c" \
		$PCS_FORMAT_SOURCES "$TOP/test/common/pcs_frontend.c" \
		-L"$("$pgc" --libdir)" -lpgcommon -lpgport -lzstd -llz4
}

# count_results LOG: add up the tests a pg_regress or prove log reports.
# Prints "passed failed skipped".  A TAP script counts once: passed when
# prove says "ok", skipped when it says "skipped", failed otherwise.
count_results()
{
	local log=$1 p f s files tp
	# pg_regress (17 prints TAP): "ok 1  - name  12 ms", "not ok 2 + name ..."
	p=$(grep -cE '^ok [0-9]+ +[-+] ' "$log")
	f=$(grep -cE '^not ok [0-9]+ +[-+] ' "$log")
	# prove: "pcs/001_x.pl .. ok", "t/002_y.pl .. skipped: why", "Files=3,
	# ..." (a group of test/, or t/ of a contrib module or upstream suite)
	# (unanchored: with make -j, another job's output may precede it on
	# the same line)
	tp=$(grep -oE '[A-Za-z0-9_]+/[0-9]+_[A-Za-z0-9_]+\.pl \.+ ok' "$log" | wc -l)
	s=$(grep -oE '[A-Za-z0-9_]+/[0-9]+_[A-Za-z0-9_]+\.pl \.+ skipped' "$log" | wc -l)
	files=$(sed -n 's/^Files=\([0-9]*\), Tests=.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	echo "$((p + tp)) $((f + files - tp - s)) $s"
}

# PostgreSQL refuses to run as root, so when the suites are started by root
# (as in CI) they run as this unprivileged user.
TEST_USER=${PGSTRATA_TEST_USER:-pgstrata}

# ensure_test_user: create the test user if it does not exist (as root).
ensure_test_user()
{
	id "$TEST_USER" >/dev/null 2>&1 && return 0
	useradd --system --user-group --home-dir /nonexistent \
		--shell /usr/sbin/nologin "$TEST_USER" ||
		{ echo "error: cannot create user $TEST_USER to run the tests as" >&2; return 1; }
}

# small_fs_mount DIR: mount a small file system of its own at DIR (a 16 MB
# tmpfs, as root), owned by the test user, for the tests that fill one up
# (test/pcs/016_compression_full_disk.pl); small_fs_umount DIR undoes it.
small_fs_mount()
{
	local dir=$1
	mkdir -p "$dir" || return 1
	if ! mountpoint -q "$dir"; then
		mount -t tmpfs -o size=16m,mode=0700 pgstrata-smallfs "$dir" || return 1
	fi
	chown "$TEST_USER:" "$dir"
}
small_fs_umount()
{
	if mountpoint -q "$1" 2>/dev/null; then
		umount "$1"
	fi
}

# reflink_fs_mount DIR: mount at DIR a file system whose copy_file_range()
# shares extents (XFS with reflinks, in a 512 MB sparse image DIR.img on a
# loop device, as root), owned by the test user, for the test of
# file_copy_method = clone (test/pcs/028_compression_clone_reflink.pl);
# reflink_fs_umount DIR undoes it and removes the image.
reflink_fs_mount()
{
	local dir=$1 img=$1.img
	mkdir -p "$dir" || return 1
	if ! mountpoint -q "$dir"; then
		rm -f "$img"
		truncate -s 512M "$img" &&
			mkfs.xfs -q -m reflink=1 "$img" &&
			mount -o loop "$img" "$dir" || return 1
	fi
	chown "$TEST_USER:" "$dir"
	chmod 0700 "$dir"
}
reflink_fs_umount()
{
	if mountpoint -q "$1" 2>/dev/null; then
		umount "$1"
	fi
	rm -f "$1.img"
}

# as_test_user WORKDIR COMMAND...: run COMMAND as a user PostgreSQL accepts,
# with WORKDIR (made writable for it) as its home.
as_test_user()
{
	local work=$1
	shift
	mkdir -p "$work"
	if [ "$(id -u)" != 0 ]; then
		HOME=$work "$@"
		return
	fi
	ensure_test_user || return 1
	if ! runuser -u "$TEST_USER" -- test -r "$TOP/test/Makefile" -a -x "$PG_INSTALL/bin/postgres"; then
		echo "error: the tests run as user $TEST_USER, who cannot read $TOP; clone into a directory other users can read, or run make check as a normal user" >&2
		return 1
	fi
	chown -R "$TEST_USER:" "$work"
	# A compiler cache root set up (CCACHE_DIR) is root's and not writable
	# by the test user, who also compiles (test modules, programs built
	# against the format layer): the test user gets one under its home.
	runuser -u "$TEST_USER" -- env -u CCACHE_DIR HOME="$work" \
		PGSTRATA_CACHE="${PGSTRATA_CACHE:-/var/cache/pgstrata}" "$@"
}

# free_port: a free TCP port on the loopback interface, as the kernel hands one out.
free_port()
{
	perl -MIO::Socket::INET -e \
		'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0)->sockport'
}

# median NUMBER...: the median of the arguments.
median()
{
	printf '%s\n' "$@" | sort -n |
		awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'
}

# bench_as_test_user_with_plot WORK OUT BASE SCRIPT: run SCRIPT again as
# the test user (bench_as_test_user, with gnuplot-nox installed for
# test/bench/plot.sh), copy the CSV and PNG it wrote in WORK (as
# WORK/results.*) next to BASE, and exit with its status.
bench_as_test_user_with_plot()
{
	local work=$1 out=$2 base=$3 script=$4 rc=0

	bench_as_test_user "$work" "$out" "$script" gnuplot-nox || rc=$?
	if [ "$base" != "$work/results" ]; then
		for ext in csv png; do
			if [ -f "$work/results.$ext" ]; then
				cp "$work/results.$ext" "$base.$ext"
			fi
		done
	fi
	exit $rc
}

# bench_as_test_user WORK OUT SCRIPT [PACKAGE...]: for a benchmark started by
# root: install the Debian packages it needs, run SCRIPT again as the test
# user (PostgreSQL refuses root) with WORK/results.md as its output, copy
# that to OUT.  Returns SCRIPT's exit status.
bench_as_test_user()
{
	local work=$1 out=$2 script=$3 rc=0
	shift 3
	"$TOP/patches/tools/install-deps.sh" "$@"
	rm -rf "$work"
	mkdir -p "$work"
	touch "$work/results.md"
	as_test_user "$work" "$script" "$work/results.md" || rc=$?
	cat "$work/results.md" >"$out"
	return $rc
}

# server_cpu_ticks DATADIR: CPU time (user + system, in clock ticks) the
# server of DATADIR has used so far: its running processes' own time plus
# the time of the children the postmaster has reaped, which includes every
# backend of a session that has ended.  Differences between two calls with
# only long-lived processes running in between (no session open at either
# call but the caller's) are the server's CPU for what ran in between; the
# load of other programs on the machine does not count.
server_cpu_ticks()
{
	local pm
	pm=$(head -1 "$1/postmaster.pid")
	{
		awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat"
		for child in $(cat "/proc/$pm/task/$pm/children" 2>/dev/null); do
			awk '{print $14 + $15}' "/proc/$child/stat" 2>/dev/null || true
		done
	} | awk '{s += $1} END {print s}'
}

# server_process_ticks DATADIR TITLE: CPU time (user + system, in clock
# ticks) used so far by the server's running processes whose process title
# begins with "postgres: TITLE" (such as "background writer" or "io worker"),
# summed; for long-lived processes, whose differences over a run are theirs.
server_process_ticks()
{
	local pm child
	pm=$(head -1 "$1/postmaster.pid")
	for child in $(cat "/proc/$pm/task/$pm/children" 2>/dev/null); do
		if tr '\0' ' ' <"/proc/$child/cmdline" 2>/dev/null | grep -q "^postgres: $2"; then
			awk '{print $14 + $15}' "/proc/$child/stat" 2>/dev/null || true
		fi
	done | awk '{s += $1} END {print s + 0}'
}

# rig_make GROUP MEM_MB READ_MBPS: the I/O-bound rig of the benchmarks
# (as root; doc/building-and-testing.md): control groups memory/GROUP and blkio/GROUP
# (cgroup v1) limiting memory, page cache included, to MEM_MB MiB and reads
# from the root file system's device to READ_MBPS MiB/s, joinable by the
# test user.  Sets RIG_DEV (the device) and RIG_DESC (a line for results).
# Callers remove the groups with rig_remove GROUP (trap it on EXIT).
rig_make()
{
	local group=$1 mem=$2 mbps=$3 cg=/sys/fs/cgroup

	[ -d "$cg/memory" ] && [ -d "$cg/blkio" ] || return 1
	ensure_test_user
	RIG_DEV=$(lsblk -no MAJ:MIN "$(findmnt -no SOURCE /)" | head -1 | tr -d ' ')
	rig_remove "$group"
	mkdir -p "$cg/memory/$group" "$cg/blkio/$group"
	echo $((mem * 1024 * 1024)) >"$cg/memory/$group/memory.limit_in_bytes"
	echo "$RIG_DEV $((mbps * 1024 * 1024))" >"$cg/blkio/$group/blkio.throttle.read_bps_device"
	chown "$TEST_USER" "$cg/memory/$group/cgroup.procs" "$cg/blkio/$group/cgroup.procs"
	RIG_DESC="memory (with page cache) $mem MiB, reads from device $RIG_DEV ($(findmnt -no SOURCE /)) throttled to $mbps MiB/s"
}

# rig_remove GROUP: remove the rig's control groups, if there are any.
rig_remove()
{
	local g

	for g in memory blkio; do
		rmdir "/sys/fs/cgroup/$g/$1" 2>/dev/null || true
	done
}

# bench_start WORK: start the server of WORK/data (log WORK/server.log),
# inside the I/O-bound rig's control groups when there is one (PGSTRATA_RIG:
# "memory/GROUP blkio/GROUP", set by the scripts that make the rig), so that
# its page cache is the rig's too; bench_stop WORK stops it (fast).
bench_start()
{
	(
		for g in ${PGSTRATA_RIG:-}; do
			echo "$BASHPID" >"/sys/fs/cgroup/$g/cgroup.procs"
		done
		exec "$PG_INSTALL/bin/pg_ctl" -D "$1/data" -l "$1/server.log" -w start >/dev/null
	)
}

bench_stop()
{
	"$PG_INSTALL/bin/pg_ctl" -D "$1/data" -m fast -w stop >/dev/null 2>&1 || true
}

# bench_cluster WORK: initdb a new cluster in WORK/data that listens on a free
# port of 127.0.0.1 only (set in $port), with the settings compressed
# tablespaces require, and an empty WORK/cts for one.  Callers append their
# own settings to WORK/data/postgresql.conf.  Without data checksums
# (wal_log_hints serves compressed tablespaces), as the recorded results
# were measured before initdb enabled them by default.
bench_cluster()
{
	local work=$1
	rm -rf "$work/data" "$work/cts"
	mkdir -p "$work/cts"
	port=$(free_port)
	"$PG_INSTALL/bin/initdb" -D "$work/data" -A trust --no-sync --no-data-checksums >"$work/initdb.log"
	cat >>"$work/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = ''
wal_log_hints = on
max_wal_size = 8GB
CONF
}

# The throwaway clusters of the side-by-side benchmarks (unlink.sh,
# read-path.sh), under $WORK: bench_named_cluster NAME BIN [CONF] runs
# initdb for cluster NAME in $WORK/NAME/data with the programs of BIN (an
# installation's bin directory), adds CONF to its configuration, starts it
# on a free port of 127.0.0.1, makes $WORK/NAME/cts for a tablespace, and
# records it in clusters, port_of[NAME] and bin_of[NAME], which the caller
# declares (declare -A port_of bin_of; clusters=()).  bench_stop_clusters
# stops them all (an EXIT trap); bench_psql NAME runs psql on one, the
# script on stdin.
bench_named_cluster()
{
	local c=$1 bin=$2 conf=${3:-}

	rm -rf "${WORK:?}/$c"
	mkdir -p "$WORK/$c/cts"
	port_of[$c]=$(free_port)
	bin_of[$c]=$bin
	"$bin/initdb" -D "$WORK/$c/data" -A trust --no-sync >"$WORK/$c/initdb.log"
	cat >>"$WORK/$c/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = ${port_of[$c]}
unix_socket_directories = ''
autovacuum = off
$conf
CONF
	"$bin/pg_ctl" -D "$WORK/$c/data" -l "$WORK/$c/server.log" -w start >/dev/null
	clusters+=("$c")
}
bench_stop_clusters()
{
	local c

	for c in "${clusters[@]}"; do
		"${bin_of[$c]}/pg_ctl" -D "$WORK/$c/data" -m fast -w stop >/dev/null 2>&1 || true
	done
}
bench_psql()
{
	"${bin_of[$1]}/psql" -X -q -At -h 127.0.0.1 -p "${port_of[$1]}" -d postgres -v ON_ERROR_STOP=1
}

# oltp_bench_cluster BIN WORK: initdb a cluster in WORK/data with the
# settings of the refdata OLTP benchmarks (tpcc.sh, neworder.sh), start it
# (log WORK/server.log) on a free port of 127.0.0.1 (set in $port), and stop
# it when the script exits.  No checkpoint inside a run (each run starts
# right after one, so both access methods pay the same full-page images),
# no autovacuum, the WAL of a run kept until pg_walinspect has read it, and
# log_lock_waits with a small deadlock_timeout, so that every lock wait
# longer than 20 ms is logged.
oltp_bench_cluster()
{
	OLTP_BIN=$1
	OLTP_WORK=$2
	port=$(free_port)
	trap '"$OLTP_BIN/pg_ctl" -D "$OLTP_WORK/data" -m fast -w stop >/dev/null 2>&1 || true' EXIT
	"$OLTP_BIN/initdb" -D "$OLTP_WORK/data" -A trust -U postgres --no-sync >"$OLTP_WORK/initdb.log"
	cat >>"$OLTP_WORK/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = ''
max_connections = 100
shared_buffers = 1GB
max_wal_size = 16GB
wal_keep_size = 4GB
checkpoint_timeout = 1h
synchronous_commit = off
autovacuum = off
log_lock_waits = on
deadlock_timeout = 20ms
log_line_prefix = '%m [%p] %d '
CONF
	"$OLTP_BIN/pg_ctl" -D "$OLTP_WORK/data" -l "$OLTP_WORK/server.log" -w start >/dev/null
}
