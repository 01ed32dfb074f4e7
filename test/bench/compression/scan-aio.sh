#!/usr/bin/env bash
#
# scan-aio.sh: cold sequential scans and VACUUMs of a compressed table and
# its plain twin, on PostgreSQL 17 and on 18 with each io_method, side by
# side in one run, with reads from the disk throttled.
#
#   test/bench/compression/scan-aio.sh [OUTPUT.md]
#
# Needs root (a control group throttles the servers' reads from the root
# file system's device to RIG_READ_MBPS) and both builds (make, make
# PG=18).  One cluster per major release (build/bench/scan-aio/17, 18), each
# with the same rows: "p" in pg_default, "c" in a zstd tablespace, both
# frozen and checkpointed.  Each measurement starts cold: the table's
# buffers are evicted (pg_buffercache) and its files dropped from the page
# cache (POSIX_FADV_DONTNEED), so every block comes from the disk through
# the throttle.  The operations are "scan" (SELECT sum(length(note))) and
# "vacuum" (VACUUM (DISABLE_PAGE_SKIPPING), which reads every block).  For
# each round the configurations run in an order rotated by one, so none
# always runs first.  Reported: each measurement, then the median time per
# configuration, table and operation, compressed / plain, and each 18
# configuration / 17.
#
# Environment: ROUNDS (3), ROWS (400000), RIG_READ_MBPS (100; 0 reads at
# the device's own speed, still counted),
# CONFIGS ("17 18:sync 18:worker 18:io_uring"), SHARED_BUFFERS (128MB),
# TABLES ("c p"; "c" measures the compressed table only, for more rounds
# in the same time: its plain ratios are then 0), DATA_CHECKSUMS (on: on both clusters, as
# both initdbs default to; off: on neither).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
OUT=${1:-/dev/stdout}
ROUNDS=${ROUNDS:-3}
ROWS=${ROWS:-400000}
MBPS=${RIG_READ_MBPS:-100}
CONFIGS=(${CONFIGS:-17 18:sync 18:worker 18:io_uring})
SHARED_BUFFERS=${SHARED_BUFFERS:-128MB}
TABLES=${TABLES:-"c p"}
DATA_CHECKSUMS=${DATA_CHECKSUMS:-on}
WORK=$TOP/build/bench/scan-aio
CG=/sys/fs/cgroup/blkio/pgscan

[ "$(id -u)" = 0 ] || { echo "error: run as root: the read throttle is a control group" >&2; exit 1; }
[ -d /sys/fs/cgroup/blkio ] || { echo "error: no cgroup v1 blkio controller" >&2; exit 1; }
ensure_test_user
bin_of()
{
	if [ "$1" = 18 ]; then echo "$TOP/build/18/install/bin"; else echo "$TOP/build/install/bin"; fi
}
for major in 17 18; do
	[ -x "$(bin_of $major)/postgres" ] || { echo "error: no $major build at $(bin_of $major) (make PG=$major)" >&2; exit 1; }
done

dev=$(lsblk -no MAJ:MIN "$(findmnt -no SOURCE /)" | head -1 | tr -d ' ')
rmdir "$CG" 2>/dev/null || true
mkdir -p "$CG"
# RIG_READ_MBPS=0: no limit, the device's own speed (the group still counts)
[ "$MBPS" -gt 0 ] && echo "$dev $((MBPS * 1024 * 1024))" >"$CG/blkio.throttle.read_bps_device"

as_user() { runuser -u "$TEST_USER" -- "$@"; }
psql_of()
{
	local major=$1
	shift
	as_user "$(bin_of "$major")/psql" -X -q -At -h 127.0.0.1 -p "${port[$major]}" \
		-v ON_ERROR_STOP=1 -d postgres "$@"
}
start()
{
	local major=$1
	(
		echo "$BASHPID" >"$CG/cgroup.procs"
		exec runuser -u "$TEST_USER" -- "$(bin_of "$major")/pg_ctl" \
			-D "$WORK/$major/data" -l "$WORK/$major/server.log" -w start >/dev/null
	)
}
stop()
{
	as_user "$(bin_of "$1")/pg_ctl" -D "$WORK/$1/data" -m fast -w stop >/dev/null 2>&1 || true
}
cleanup()
{
	stop 17
	stop 18
	rmdir "$CG" 2>/dev/null || true
}
trap cleanup EXIT

# A cluster per major release, with the same rows: numbers, a date, 32 hex
# digits that do not compress much and a comment of 10 to 80 words from a
# small vocabulary (rows of varying length)
declare -A port method
rm -rf "$WORK"
mkdir -p "$WORK"
chown "$TEST_USER" "$WORK"
for major in 17 18; do
	as_user mkdir -p "$WORK/$major/cts"
	# data checksums set, not left to each initdb's default, so that both
	# clusters verify every page read or neither does
	if [ "$DATA_CHECKSUMS" = on ]; then checksums=--data-checksums; else checksums=--no-data-checksums; fi
	[ "$major" = 17 ] && [ "$DATA_CHECKSUMS" = off ] && checksums=
	as_user "$(bin_of $major)/initdb" -D "$WORK/$major/data" -A trust --no-sync $checksums >"$WORK/$major/initdb.log"
	port[$major]=$(free_port)
	as_user tee -a "$WORK/$major/data/postgresql.conf" >/dev/null <<CONF
listen_addresses = '127.0.0.1'
port = ${port[$major]}
unix_socket_directories = ''
shared_buffers = $SHARED_BUFFERS
autovacuum = off
max_wal_size = 8GB
include_if_exists = 'method.conf'
CONF
	start $major
	psql_of $major -c "CREATE EXTENSION pg_buffercache" \
		-c "CREATE TABLESPACE cts LOCATION '$WORK/$major/cts' WITH (compression = 'zstd')" \
		-c "CREATE TABLE p AS SELECT g AS id, (g::bigint * 7919 % 100000) / 100.0 AS qty,
				date '1992-01-01' + (g * 31 % 2500) AS placed, md5(g::text) AS code,
				(SELECT string_agg((ARRAY['carefully','final','deposits','detect',
					'slyly','furiously','regular','accounts','ironic','packages',
					'quickly','pending','requests','express','theodolites','boost'])
					[1 + (g::bigint * k * 13) % 16], ' ')
				 FROM generate_series(1, 10 + g % 70) k) AS note
			FROM generate_series(1, $ROWS) g" \
		-c "CREATE TABLE c TABLESPACE cts AS SELECT * FROM p" \
		-c "VACUUM (FREEZE) p" -c "VACUUM (FREEZE) c" -c "CHECKPOINT"
	method[$major]=
done

# cold MAJOR TABLE: the table's blocks leave shared buffers and the page cache
cold()
{
	local major=$1 t=$2 path
	psql_of "$major" -c "CHECKPOINT" \
		-c "SELECT count(pg_buffercache_evict(bufferid)) FROM pg_buffercache
			WHERE relfilenode = pg_relation_filenode('$t')" >/dev/null
	path=$WORK/$major/data/$(psql_of "$major" -c "SELECT pg_relation_filepath('$t')")
	python3 - "$path" <<'PY'
import glob, os, sys
for f in glob.glob(sys.argv[1] + "*"):
    fd = os.open(f, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
PY
}

# read_bytes: the bytes the servers' control group has read from the disk
read_bytes()
{
	awk '$2 == "Read" {s += $3} END {printf "%.0f\n", s}' "$CG/blkio.throttle.io_service_bytes"
}

# use CONFIG: its server runs with its io_method
use()
{
	local major=${1%%:*} m=
	[ "$1" != "$major" ] && m=${1#*:}
	if [ "$major" = 18 ] && [ "${method[18]}" != "$m" ]; then
		stop 18
		echo "io_method = $m" | as_user tee "$WORK/18/data/method.conf" >/dev/null
		start 18
		method[18]=$m
	fi
}

declare -A times
{
	echo "## scan-aio.sh, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "- command: \`ROUNDS=$ROUNDS ROWS=$ROWS RIG_READ_MBPS=$MBPS CONFIGS=\"${CONFIGS[*]}\" SHARED_BUFFERS=$SHARED_BUFFERS TABLES=\"$TABLES\" DATA_CHECKSUMS=$DATA_CHECKSUMS test/bench/compression/scan-aio.sh\` (as root)"
	echo "- machine: $(nproc) CPUs, $(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1048576)) GiB, $(uname -sr); load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ "$MBPS" -gt 0 ]; then throttle="throttled to $MBPS MiB/s"; else throttle="not throttled"; fi
	echo "- reads from device $dev ($(findmnt -no SOURCE /)) $throttle; ROWS=$ROWS, ROUNDS=$ROUNDS, shared_buffers=$SHARED_BUFFERS"
	for major in 17 18; do
		echo "- $major: p $(psql_of $major -c "SELECT pg_size_pretty(pg_table_size('p'))"), c $(psql_of $major -c "SELECT pg_size_pretty(pg_table_size('c'))") ($(psql_of $major -c "SELECT version()" | cut -d, -f1); data_checksums $(psql_of $major -c "SHOW data_checksums"))"
	done
	echo
	echo "| round | config | table | op | ms | kB read from the disk |"
	echo "| ---: | --- | --- | --- | ---: | ---: |"
} >"$OUT"

n=${#CONFIGS[@]}
for ((r = 1; r <= ROUNDS; r++)); do
	for ((i = 0; i < n; i++)); do
		cfg=${CONFIGS[$(((i + r - 1) % n))]}
		major=${cfg%%:*}
		use "$cfg"
		for t in $TABLES; do
			for op in scan vacuum; do
				case $op in
					scan) sql="SELECT sum(length(note)) FROM $t" ;;
					vacuum) sql="VACUUM (DISABLE_PAGE_SKIPPING) $t" ;;
				esac
				cold "$major" "$t"
				b0=$(read_bytes)
				t0=$(date +%s%N)
				psql_of "$major" -c "$sql" >/dev/null
				ms=$((($(date +%s%N) - t0) / 1000000))
				kb=$((($(read_bytes) - b0) / 1024))
				times[$cfg $t $op]="${times[$cfg $t $op]:-} $ms"
				echo "| $r | $cfg | $t | $op | $ms | $kb |" >>"$OUT"
			done
		done
	done
done

{
	echo
	echo "Medians (ms), compressed / plain, and compressed on 18 / compressed on 17:"
	echo
	echo "| config | op | plain | compressed | c / p | c / c on 17 |"
	echo "| --- | --- | ---: | ---: | ---: | ---: |"
	for op in scan vacuum; do
		c17=$(median ${times[17 c $op]:-0})
		for cfg in "${CONFIGS[@]}"; do
			p=$(median ${times[$cfg p $op]:-0})
			c=$(median ${times[$cfg c $op]})
			echo "| $cfg | $op | $p | $c | $(awk -v a="$c" -v b="$p" 'BEGIN {printf "%.2f", b ? a / b : 0}') | $(awk -v a="$c" -v b="$c17" 'BEGIN {printf "%.2f", b ? a / b : 0}') |"
		done
	done
	echo
	echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$OUT"
