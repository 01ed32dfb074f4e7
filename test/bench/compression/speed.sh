#!/usr/bin/env bash
#
# speed.sh: sysbench throughput on a compressed tablespace against plain
# storage, side by side in one run.
#
#   test/bench/compression/speed.sh [OUTPUT.md]
#
# One throwaway cluster (build/bench/speed) with two databases holding the
# same sysbench data (TABLES x TABLE_SIZE rows): "plain" in pg_default and
# "compressed" created in a tablespace WITH (compression = ALGORITHM).  For each
# scenario the server restarts with its shared_buffers, then oltp_read_only,
# oltp_write_only and oltp_read_write run for SECONDS each, alternating plain
# and compressed ROUNDS times, the order rotating each round (A B, B A, ...)
# so that neither database always runs first.  With CONTROL=1 a third
# database "control", plain like the first, joins the rotation: the
# control / plain ratio shows how far two identical databases differ in the
# same run, the floor under which a compressed / plain ratio is noise.
# Reported: median TPS and the
# compressed / plain ratio, the server's CPU seconds per 1,000 transactions
# (server_cpu_ticks of test/lib.sh: backends and background processes, not
# the client, and not what else runs on the machine) and the part of it the
# background writer and 18's I/O workers used, and blocks the server
# read from the kernel (pg_stat_io); in the I/O-bound rig also the bytes
# read from the disk per 1,000 transactions (the rig's blkio counters).
#
# Scenarios:
#   shared_buffers  shared_buffers holds both databases (1 GB): compression
#                   only costs at checkpoints and evictions
#   page_cache      shared_buffers 64 MB: most reads come from the OS page
#                   cache and are decompressed
#   io_bound        shared_buffers 64 MB in a small-memory, slow-disk rig of
#                   control groups; run through speed-io-bound.sh, which
#                   makes the rig (rig_make in test/lib.sh)
#
# Environment: ROUNDS (3), SECONDS_PER_RUN (30), THREADS (2), TABLES (4),
# TABLE_SIZE (250000), SCENARIOS ("shared_buffers page_cache"), CONTROL (0),
# WORKLOADS ("oltp_read_only oltp_write_only oltp_read_write"), RAND_TYPE
# (sysbench's --rand-type: special, its default, where a few rows are hot;
# uniform, where most reads miss shared buffers), PGSTRATA_PG (17; 18 runs
# PostgreSQL 18's build), IO_METHOD (18's io_method; its default if
# unset), ALGORITHM (zstd; or lz4), CONF (lines added to the server's
# configuration, such as background writer settings; none by default) and
# DICTIONARIES (1: a fourth database "dictionary", compressed like the
# second, joins the rotation, and after loading each of its sysbench
# tables and indexes is given a trained dictionary where one pays and
# recompressed with it, pgstrata_train_dictionary(rel, true); 0 by default).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
BIN=$PG_INSTALL/bin
WORK=$BUILD_ROOT/bench/speed
OUT=${1:-/dev/stdout}
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-30}
THREADS=${THREADS:-2}
TABLES=${TABLES:-4}
TABLE_SIZE=${TABLE_SIZE:-250000}
SCENARIOS=${SCENARIOS:-"shared_buffers page_cache"}
CONTROL=${CONTROL:-0}
WORKLOADS=${WORKLOADS:-"oltp_read_only oltp_write_only oltp_read_write"}
RAND_TYPE=${RAND_TYPE:-special}
IO_METHOD=${IO_METHOD:-}
ALGORITHM=${ALGORITHM:-zstd}
CONF=${CONF:-}
DICTIONARIES=${DICTIONARIES:-0}
export DICTIONARIES ROUNDS SECONDS_PER_RUN THREADS TABLES TABLE_SIZE SCENARIOS CONTROL WORKLOADS \
	RAND_TYPE IO_METHOD ALGORITHM PGSTRATA_PG CONF
DBS=(plain compressed)
[ "$CONTROL" = 1 ] && DBS+=(control)
[ "$DICTIONARIES" = 1 ] && DBS+=(dictionary)

if [ "$(id -u)" = 0 ]; then
	bench_as_test_user "$WORK" "$OUT" "$0" sysbench
	exit
fi

mkdir -p "$WORK"
bench_cluster "$WORK"
cat >>"$WORK/data/postgresql.conf" <<EOF
checkpoint_timeout = 5min
max_connections = 50
include_if_exists = 'scenario.conf'
EOF
[ -z "$IO_METHOD" ] || echo "io_method = $IO_METHOD" >>"$WORK/data/postgresql.conf"
[ -z "$CONF" ] || printf '%s\n' "$CONF" >>"$WORK/data/postgresql.conf"

start() { bench_start "$WORK"; }
stop() { bench_stop "$WORK"; }
trap stop EXIT
psql() { "$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -v ON_ERROR_STOP=1 "$@"; }
sb()
{
	local db=$1
	shift
	sysbench "$@" --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$port" \
		--pgsql-user="$(id -un)" --pgsql-db="$db" --tables="$TABLES" \
		--table-size="$TABLE_SIZE"
}

start
psql -d postgres -c "CREATE TABLESPACE cts LOCATION '$WORK/cts' WITH (compression = '$ALGORITHM')"
psql -d postgres -c "CREATE DATABASE plain" -c "CREATE DATABASE compressed TABLESPACE cts"
[ "$CONTROL" = 1 ] && psql -d postgres -c "CREATE DATABASE control"
[ "$DICTIONARIES" = 1 ] && psql -d postgres -c "CREATE DATABASE dictionary TABLESPACE cts"
for db in "${DBS[@]}"; do
	sb "$db" oltp_read_only prepare >"$WORK/prepare-$db.log"
	psql -d "$db" -c "VACUUM ANALYZE" -c "CREATE EXTENSION pg_prewarm"
done
dictionaries=0
if [ "$DICTIONARIES" = 1 ]; then
	dictionaries=$(psql -d dictionary -c "CREATE EXTENSION pgstrata" -c "
SELECT count(*) FROM pg_class c, pgstrata_train_dictionary(c.oid, true) d
WHERE c.relname ~ '^(sbtest|k_)[0-9]' AND c.relkind IN ('r', 'i')" 2>"$WORK/dictionaries.log")
fi
psql -d postgres -c CHECKPOINT

# server_reads DB: blocks the server has read from the kernel, all contexts
server_reads() { psql -d "$1" -c "SELECT coalesce(sum(reads), 0) FROM pg_stat_io"; }

# disk_read_bytes: bytes read from the disk by the rig's processes so far
# (blkio accounting of its control group), 0 without the rig
disk_read_bytes()
{
	local f=/sys/fs/cgroup/blkio/pgrig/blkio.throttle.io_service_bytes

	if [ -n "${PGSTRATA_RIG:-}" ] && [ -r "$f" ]; then
		awk '$2 == "Read" {s += $3} END {printf "%.0f\n", s}' "$f"
	else
		echo 0
	fi
}

declare -A tps cpu bgw iow reads disk

# per_tx TICKS TPS: CPU ms per transaction of TICKS over a run
per_tx() { awk -v c="$1" -v hz="$hz" -v t="$2" -v s="$SECONDS_PER_RUN" 'BEGIN { printf "%.3f", c / hz / (t * s / 1000) }'; }
hz=$(getconf CLK_TCK)

for scenario in $SCENARIOS; do
	case $scenario in
		shared_buffers) echo "shared_buffers = 1GB" >"$WORK/data/scenario.conf" ;;
		page_cache) echo "shared_buffers = 64MB" >"$WORK/data/scenario.conf" ;;
		io_bound)
			[ -n "${PGSTRATA_RIG:-}" ] || { echo "io_bound needs the rig: run speed-io-bound.sh" >&2; exit 1; }
			echo "shared_buffers = 64MB" >"$WORK/data/scenario.conf" ;;
		*) echo "unknown scenario $scenario" >&2; exit 1 ;;
	esac
	stop
	start
	for db in "${DBS[@]}"; do
		# read everything once: into shared buffers or at least the page
		# cache (not with the rig: its memory is smaller than the data)
		[ "$scenario" = io_bound ] && continue
		psql -d "$db" -c "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c WHERE relname LIKE 'sbtest%'" >/dev/null
	done
	for workload in $WORKLOADS; do
		for ((r = 1; r <= ROUNDS; r++)); do
			# this round's order: DBS rotated by r - 1
			order=("${DBS[@]:$(((r - 1) % ${#DBS[@]}))}" "${DBS[@]:0:$(((r - 1) % ${#DBS[@]}))}")
			for db in "${order[@]}"; do
				key="$scenario $workload $db"
				r0=$(server_reads "$db")
				d0=$(disk_read_bytes)
				c0=$(server_cpu_ticks "$WORK/data")
				b0=$(server_process_ticks "$WORK/data" "background writer")
				i0=$(server_process_ticks "$WORK/data" "io worker")
				t=$(sb "$db" "$workload" run --threads="$THREADS" --time="$SECONDS_PER_RUN" \
					--rand-type="$RAND_TYPE" \
					--report-interval=0 2>&1 | awk '/transactions:/ {gsub(/[()]/, "", $3); print $3}')
				sleep 1	# the postmaster reaps the run's backends
				c1=$(server_cpu_ticks "$WORK/data")
				b1=$(server_process_ticks "$WORK/data" "background writer")
				i1=$(server_process_ticks "$WORK/data" "io worker")
				r1=$(server_reads "$db")
				tps[$key]="${tps[$key]:-} $t"
				cpu[$key]="${cpu[$key]:-} $(per_tx $((c1 - c0)) "$t")"
				bgw[$key]="${bgw[$key]:-} $(per_tx $((b1 - b0)) "$t")"
				iow[$key]="${iow[$key]:-} $(per_tx $((i1 - i0)) "$t")"
				reads[$key]="${reads[$key]:-} $((r1 - r0))"
				d1=$(disk_read_bytes)
				disk[$key]="${disk[$key]:-} $(awk -v d=$((d1 - d0)) -v t="$t" -v s="$SECONDS_PER_RUN" 'BEGIN { printf "%.1f", d / 1048576 / (t * s / 1000) }')"
			done
		done
	done
done

# compare OTHER: the table of medians, plain against database OTHER
compare()
{
	local other=$1 p c

	echo "| scenario | workload | plain TPS | $other TPS | ratio | server CPU s / 1000 tx plain | $other | server block reads plain | $other | disk MB read / 1000 tx plain | $other |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for scenario in $SCENARIOS; do
		for workload in $WORKLOADS; do
			p="$scenario $workload plain"
			c="$scenario $workload $other"
			awk -v s="$scenario" -v w="$workload" \
				-v tp="$(median ${tps[$p]})" -v tc="$(median ${tps[$c]})" \
				-v cp="$(median ${cpu[$p]})" -v cc="$(median ${cpu[$c]})" \
				-v rp="$(median ${reads[$p]})" -v rc="$(median ${reads[$c]})" \
				-v dp="$(median ${disk[$p]})" -v dc="$(median ${disk[$c]})" \
				'BEGIN { printf "| %s | %s | %.1f | %.1f | %.3f | %.3f | %.3f | %d | %d | %.1f | %.1f |\n", s, w, tp, tc, tc / tp, cp, cc, rp, rc, dp, dc }'
		done
	done
}

# cpu_split: the server's CPU per transaction split by process (medians)
cpu_split()
{
	local k

	echo "| scenario | workload | database | server CPU ms / tx | background writer | I/O workers | the rest (backends, autovacuum, ...) |"
	echo "|---|---|---|---:|---:|---:|---:|"
	for scenario in $SCENARIOS; do
		for workload in $WORKLOADS; do
			for db in "${DBS[@]}"; do
				k="$scenario $workload $db"
				awk -v s="$scenario" -v w="$workload" -v d="$db" \
					-v a="$(median ${cpu[$k]})" -v b="$(median ${bgw[$k]})" \
					-v i="$(median ${iow[$k]})" \
					'BEGIN { printf "| %s | %s | %s | %.3f | %.3f | %.3f | %.3f |\n", s, w, d, a, b, i, a - b - i }'
			done
		done
	done
}

{
	echo "# Compressed tablespaces: sysbench throughput"
	echo
	echo "- command: \`test/bench/compression/speed.sh\` (ROUNDS=$ROUNDS SECONDS_PER_RUN=$SECONDS_PER_RUN THREADS=$THREADS TABLES=$TABLES TABLE_SIZE=$TABLE_SIZE CONTROL=$CONTROL SCENARIOS=\"$SCENARIOS\" WORKLOADS=\"$WORKLOADS\" RAND_TYPE=$RAND_TYPE ALGORITHM=$ALGORITHM PGSTRATA_PG=${PGSTRATA_PG:-17} IO_METHOD=$IO_METHOD DICTIONARIES=$DICTIONARIES${CONF:+ CONF=\"${CONF//$'\n'/; }\"})"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -sr); sysbench and the server on the same machine"
	echo "- server: $("$BIN/postgres" --version); wal_log_hints on; tablespace WITH (compression = '$ALGORITHM'), its default level"
	[ "$DICTIONARIES" = 1 ] && echo "- dictionaries: in the database \"dictionary\", $dictionaries segments of the sysbench tables and indexes took a trained dictionary and were recompressed with it (DICTIONARIES=1)"
	if [ -n "${PGSTRATA_RIG:-}" ]; then
		echo "- the server ran in the I/O-bound rig for all scenarios: ${PGSTRATA_RIG_DESC:-}"
	else
		echo "- the server ran without the I/O-bound rig"
	fi
	echo "- sizes: plain $(psql -d postgres -c "SELECT pg_size_pretty(pg_database_size('plain'))"), compressed $(psql -d postgres -c "SELECT pg_size_pretty(pg_database_size('compressed'))")$([ "$DICTIONARIES" = 1 ] && echo ", dictionary $(psql -d postgres -c "SELECT pg_size_pretty(pg_database_size('dictionary'))")") (after the runs)"
	echo
	compare compressed
	if [ "$CONTROL" = 1 ]; then
		echo
		echo "A/A control: a second plain database in the same rotation, in place of compressed."
		echo
		compare control
	fi
	if [ "$DICTIONARIES" = 1 ]; then
		echo
		echo "With dictionaries: the database \"dictionary\" in the same rotation, in place of compressed."
		echo
		compare dictionary
	fi
	echo
	echo "Server CPU per transaction by process (medians of the runs; the rest is the median total less the two medians):"
	echo
	cpu_split
	echo
	echo "Raw TPS per run (in the order of the rounds):"
	echo
	for key in "${!tps[@]}"; do echo "- $key:${tps[$key]}"; done | sort
	echo
	echo "Server CPU ms per transaction per run:"
	echo
	for key in "${!cpu[@]}"; do echo "- $key:${cpu[$key]}"; done | sort
	echo
	echo "Background writer CPU ms per transaction per run:"
	echo
	for key in "${!bgw[@]}"; do echo "- $key:${bgw[$key]}"; done | sort
} >"$OUT"
