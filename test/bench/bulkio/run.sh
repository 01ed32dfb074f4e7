#!/usr/bin/env bash
#
# run.sh: the polar_bulk_* settings at 0 against their defaults, side by
# side in one run.
#
#   test/bench/bulkio/run.sh [OUTPUT.md]
#
# One throwaway cluster (build/bench/bulkio) with a table of ROWS rows
# (about 150 bytes each).  Each scenario runs ROUNDS times with its setting
# at 0 and at its default, alternating (off on off on ...):
#
#   seqscan         SELECT count(*) after a restart      polar_bulk_read_size
#   vacuum          VACUUM (DISABLE_PAGE_SKIPPING)        polar_bulk_read_size
#                   after a restart
#   set_tablespace  ALTER TABLE SET TABLESPACE to a        polar_bulk_read_size
#                   second tablespace, after a restart
#   bitmap          a bitmap heap scan of half the table    polar_bulk_read_size
#                   (a range of id), after a restart
#   bitmap_lossy    the same with work_mem = 64kB, so       polar_bulk_read_size
#                   that the bitmap is lossy
#   temp_set_tablespace  ALTER TABLE SET TABLESPACE of a    polar_bulk_read_size
#                   temporary copy of the table (created
#                   in the same session, not measured)
#   create_index    CREATE INDEX on (v)                  polar_index_create_bulk_extend_size
#   copy            COPY FROM a file into a new table    polar_bulk_extend_size
#   copy_4          four sessions at once, each COPYing   polar_bulk_extend_size
#                   a quarter of the file into one new
#                   table
#   insert_N        single-row INSERTs from N = 1, 4, 16 polar_bulk_extend_size
#                   pgbench clients for INSERT_SECONDS
#                   into a table above
#                   polar_min_bulk_extend_table_size
#                   (synchronous_commit off, so that the
#                   disk's flush latency does not drown
#                   the extension path)
#
# Reported: wall time (or TPS and the server's CPU per 1,000 transactions
# for inserts) per run, the medians and the default / 0 ratio, and for the single-session scenarios the read and write
# system calls of the backend (syscr / syscw of /proc/PID/io, read before and
# after in the same session: no tracer needed, and they count preadv and
# pwritev as one call each, like strace -c), plus the pgstrata_bulk_io
# counters.  Parallel workers are off, so that the backend does all the I/O.
#
# The restarts empty shared buffers but not the kernel's page cache: reads
# are system calls served from memory unless the server runs in the
# I/O-bound rig: as root, RIG_MEMORY_MB
# and RIG_READ_MBPS (default 100) make one with test/lib.sh's rig_make, or
# PGSTRATA_RIG="memory/pgrig blkio/pgrig" starts the server inside groups
# made beforehand.  The results say which.
#
# Environment: ROUNDS (3), ROWS (1000000), INSERT_SECONDS (15),
# SCENARIOS (all of them; a list of names such as "bitmap bitmap_lossy
# temp_set_tablespace" runs only those, and the inserts only if it names
# insert).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
BIN=$TOP/build/install/bin
WORK=$TOP/build/bench/bulkio
OUT=${1:-/dev/stdout}
ROUNDS=${ROUNDS:-3}
ROWS=${ROWS:-1000000}
INSERT_SECONDS=${INSERT_SECONDS:-15}
SCENARIOS=${SCENARIOS:-"seqscan vacuum set_tablespace bitmap bitmap_lossy temp_set_tablespace create_index copy copy_4 insert"}
export ROUNDS ROWS INSERT_SECONDS SCENARIOS

if [ "$(id -u)" = 0 ]; then
	# RIG_MEMORY_MB set: make the I/O-bound rig and run the server in it
	if [ -n "${RIG_MEMORY_MB:-}" ]; then
		trap 'rig_remove pgrig' EXIT
		rig_make pgrig "$RIG_MEMORY_MB" "${RIG_READ_MBPS:-100}" ||
			{ echo "error: no cgroup v1 memory and blkio controllers" >&2; exit 1; }
		export PGSTRATA_RIG="memory/pgrig blkio/pgrig"
		sync
		echo 1 >/proc/sys/vm/drop_caches
	fi
	bench_as_test_user "$WORK" "$OUT" "$0"
	exit
fi

mkdir -p "$WORK"
bench_cluster "$WORK"
rm -rf "$WORK/ts2"
mkdir -p "$WORK/ts2"
cat >>"$WORK/data/postgresql.conf" <<EOF
shared_buffers = 128MB
autovacuum = off
checkpoint_timeout = 1h
max_parallel_workers_per_gather = 0
max_parallel_maintenance_workers = 0
max_connections = 50
EOF

start() { bench_start "$WORK"; }
stop() { bench_stop "$WORK"; }
restart() { stop; start; }
trap stop EXIT
psql() { "$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -d postgres -v ON_ERROR_STOP=1 "$@"; }

start
psql <<EOF
CREATE EXTENSION pgstrata;
CREATE TABLESPACE ts2 LOCATION '$WORK/ts2';
SET polar_bulk_extend_size = 0;
CREATE TABLE big (id int, v text);
INSERT INTO big SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, $ROWS) g;
VACUUM big;
COPY big TO '$WORK/big.copy';
COPY (SELECT * FROM big WHERE id % 4 = 0) TO '$WORK/big.copy.0';
COPY (SELECT * FROM big WHERE id % 4 = 1) TO '$WORK/big.copy.1';
COPY (SELECT * FROM big WHERE id % 4 = 2) TO '$WORK/big.copy.2';
COPY (SELECT * FROM big WHERE id % 4 = 3) TO '$WORK/big.copy.3';
CREATE TABLE ins (id bigint, v text);
INSERT INTO ins SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, 70000) g;
CHECKPOINT;
EOF
table_mb=$(psql -c "SELECT pg_relation_size('big') / 1048576")

# measure SETTING VALUE SQL [PRE]: run SQL in one session with SETTING =
# VALUE, after PRE (not measured); prints "seconds syscr syscw bulk_reads
# heap_pre_ext index_pre_ext"
measure()
{
	local setting=$1 value=$2 sql=$3 pre=${4:-}
	psql <<EOF
SET $setting = $value;
\o /dev/null
$pre
\o
SELECT pgstrata_bulk_io_reset();
SELECT pg_read_file('/proc/' || pg_backend_pid() || '/io') AS io0 \gset
SELECT clock_timestamp() AS t0 \gset
\o /dev/null
$sql;
\o
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) AS secs \gset
SELECT pg_read_file('/proc/' || pg_backend_pid() || '/io') AS io1 \gset
SELECT round(:'secs'::numeric, 3),
	   (substring(:'io1' FROM 'syscr: ([0-9]+)'))::bigint -
	   (substring(:'io0' FROM 'syscr: ([0-9]+)'))::bigint,
	   (substring(:'io1' FROM 'syscw: ([0-9]+)'))::bigint -
	   (substring(:'io0' FROM 'syscw: ([0-9]+)'))::bigint,
	   sum(bulk_reads), sum(heap_pre_extensions), sum(index_pre_extensions)
FROM pgstrata_bulk_io;
EOF
}

declare -A raw
record()
{
	local key=$1 line=$2
	raw[$key]="${raw[$key]:-}$line"$'\n'
}

# scenario NAME SETTING DEFAULT RESTART SQL [CLEANUP [PRE]]
scenario()
{
	local name=$1 setting=$2 def=$3 restart_first=$4 sql=$5 cleanup=${6:-} pre=${7:-}
	case " $SCENARIOS " in *" $name "*) ;; *) return 0 ;; esac
	for r in $(seq "$ROUNDS"); do
		for value in 0 "$def"; do
			[ "$restart_first" = yes ] && restart
			local line
			line=$(measure "$setting" "$value" "$sql" "$pre" | tr '|' ' ')
			record "$name/$value" "$line"
			[ -n "$cleanup" ] && psql -c "$cleanup" >/dev/null
			echo "$name $setting=$value round $r: $line" >&2
		done
	done
}

scenario seqscan polar_bulk_read_size 16 yes "SELECT count(*) FROM big"
scenario vacuum polar_bulk_read_size 16 yes "VACUUM (DISABLE_PAGE_SKIPPING) big"
scenario set_tablespace polar_bulk_read_size 16 yes \
	"ALTER TABLE big SET TABLESPACE ts2" "ALTER TABLE big SET TABLESPACE pg_default"
# a bitmap heap scan of the middle half of the table: long runs of
# consecutive blocks, exact or (64kB of work_mem) lossy
bitmap_sql="SET enable_seqscan = off; SET enable_indexscan = off;
SELECT count(*), sum(length(v)) FROM big WHERE id BETWEEN $((ROWS / 4)) AND $((3 * ROWS / 4))"
psql -c "CREATE INDEX big_id ON big (id)" -c "CHECKPOINT"
scenario bitmap polar_bulk_read_size 16 yes "$bitmap_sql"
scenario bitmap_lossy polar_bulk_read_size 16 yes "SET work_mem = '64kB'; $bitmap_sql"
psql -c "DROP INDEX big_id"
# a temporary copy of the table moved to the second tablespace; the copy is
# made in the same session before the measurement, with 8 MB of local
# buffers, so that most of it is read from the file
scenario temp_set_tablespace polar_bulk_read_size 16 no \
	"ALTER TABLE tbig SET TABLESPACE ts2" "" \
	"CREATE TEMP TABLE tbig AS SELECT * FROM big;"
scenario create_index polar_index_create_bulk_extend_size 512 no \
	"CREATE INDEX big_v ON big (v)" "DROP INDEX big_v"
scenario copy polar_bulk_extend_size 512 no \
	"CREATE TABLE c (id int, v text); COPY c FROM '$WORK/big.copy'" "DROP TABLE c"

# four sessions COPY a quarter of the rows each into one new table at once,
# so that they extend the same relation concurrently: wall time of the
# slowest, and the pre-extensions of all four
case " $SCENARIOS " in *" copy_4 "*) copy4_rounds=$ROUNDS ;; *) copy4_rounds=0 ;; esac
for ((r = 1; r <= copy4_rounds; r++)); do
	for value in 0 512; do
		psql -c "CREATE TABLE c4 (id int, v text)" -c "SELECT pgstrata_bulk_io_reset()" >/dev/null
		t0=$(date +%s.%N)
		for q in 0 1 2 3; do
			psql -c "SET polar_bulk_extend_size = $value" -c "COPY c4 FROM '$WORK/big.copy.$q'" >/dev/null &
		done
		wait
		t1=$(date +%s.%N)
		pre=$(psql -c "SELECT sum(heap_pre_extensions) FROM pgstrata_bulk_io")
		mb=$(psql -c "SELECT pg_relation_size('c4') / 1048576" -c "DROP TABLE c4")
		line=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" $pre $mb"
		record "copy_4/$value" "$line"
		echo "copy_4 polar_bulk_extend_size=$value round $r: seconds, pre-extensions, MB: $line" >&2
	done
done

# single-row inserts from N clients for INSERT_SECONDS: TPS from pgbench,
# the server's CPU per 1,000 transactions (server_cpu_ticks of
# test/lib.sh, which the client's CPU does not inflate) and the
# pre-extensions of the run
case " $SCENARIOS " in *" insert "*) ;; *) INSERT_CLIENTS= ;; esac
echo 'INSERT INTO ins VALUES (:client_id * 100000000 + random(1, 99999999), repeat(md5(random()::text), 3));' >"$WORK/insert.sql"
hz=$(getconf CLK_TCK)
psql -c "ALTER SYSTEM SET synchronous_commit = off" >/dev/null
for clients in ${INSERT_CLIENTS-1 4 16}; do
	for r in $(seq "$ROUNDS"); do
		for value in 0 512; do
			psql -c "ALTER SYSTEM SET polar_bulk_extend_size = $value" -c "SELECT pg_reload_conf()" >/dev/null
			sleep 1
			psql -c "SELECT pgstrata_bulk_io_reset()" >/dev/null
			c0=$(server_cpu_ticks "$WORK/data")
			tps=$("$BIN/pgbench" -n -h 127.0.0.1 -p "$port" -c "$clients" -j "$clients" \
				-T "$INSERT_SECONDS" -f "$WORK/insert.sql" postgres 2>/dev/null |
				sed -n 's/^tps = \([0-9.]*\).*/\1/p')
			sleep 1	# the postmaster reaps the run's backends
			c1=$(server_cpu_ticks "$WORK/data")
			cpu=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v t="$tps" -v s="$INSERT_SECONDS" \
				'BEGIN { printf "%.3f", c / hz / (t * s / 1000) }')
			pre=$(psql -c "SELECT sum(heap_pre_extensions) FROM pgstrata_bulk_io")
			record "insert_$clients/$value" "$tps $pre $cpu"
			echo "insert_$clients polar_bulk_extend_size=$value round $r: tps $tps pre-extensions $pre cpu $cpu" >&2
		done
	done
done
psql -c "ALTER SYSTEM RESET polar_bulk_extend_size" -c "ALTER SYSTEM RESET synchronous_commit" \
	-c "SELECT pg_reload_conf()" >/dev/null

# column COL KEY: the COLth field of every run of KEY
column() { printf '%s' "${raw[$2]}" | awk -v c="$1" 'NF {print $c}'; }
med() { median $(column "$1" "$2"); }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

{
	echo "# polar_bulk_* settings: 0 against the default"
	echo
	echo "- command: \`test/bench/bulkio/run.sh\` (ROUNDS=$ROUNDS ROWS=$ROWS INSERT_SECONDS=$INSERT_SECONDS SCENARIOS=\"$SCENARIOS\")"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr); load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
	echo "- table: $ROWS rows, $table_mb MB; shared_buffers 128MB; restarts empty shared buffers, not the page cache"
	if [ -n "${PGSTRATA_RIG:-}" ]; then
		echo "- server inside the control groups $PGSTRATA_RIG (I/O-bound rig)"
	else
		echo "- no I/O-bound rig: reads come from the kernel's page cache"
	fi
	echo
	echo "Medians of $ROUNDS runs each, alternating 0 and default."
	echo
	echo "| scenario | setting | seconds at 0 | seconds at default | default / 0 | read calls at 0 | at default | write calls at 0 | at default | bulk reads at default |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for s in "seqscan polar_bulk_read_size 16" "vacuum polar_bulk_read_size 16" \
		"set_tablespace polar_bulk_read_size 16" \
		"bitmap polar_bulk_read_size 16" "bitmap_lossy polar_bulk_read_size 16" \
		"temp_set_tablespace polar_bulk_read_size 16" \
		"create_index polar_index_create_bulk_extend_size 512" \
		"copy polar_bulk_extend_size 512"; do
		set -- $s
		[ -n "${raw[$1/0]:-}" ] || continue
		t0=$(med 1 "$1/0"); t1=$(med 1 "$1/$3")
		echo "| $1 | $2 | $t0 | $t1 | $(ratio "$t1" "$t0") | $(med 2 "$1/0") | $(med 2 "$1/$3") | $(med 3 "$1/0") | $(med 3 "$1/$3") | $(med 4 "$1/$3") |"
	done
	echo
	if [ -n "${raw[copy_4/0]:-}" ]; then
		echo "| COPY from 4 sessions into one table | seconds at polar_bulk_extend_size 0 | at 4MB | 4MB / 0 | pre-extensions at 4MB | table MB at 0 | at 4MB |"
		echo "| --- | --- | --- | --- | --- | --- | --- |"
		t0=$(med 1 copy_4/0); t1=$(med 1 copy_4/512)
		echo "| copy_4 | $t0 | $t1 | $(ratio "$t1" "$t0") | $(med 2 copy_4/512) | $(med 3 copy_4/0) | $(med 3 copy_4/512) |"
		echo
	fi
	if [ -n "${INSERT_CLIENTS-1 4 16}" ]; then
		echo "| single-row INSERT, $INSERT_SECONDS s | TPS at polar_bulk_extend_size 0 | TPS at 4MB | 4MB / 0 | server CPU s / 1000 tx at 0 | at 4MB | 4MB / 0 | pre-extensions per run at 4MB |"
		echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
		for clients in ${INSERT_CLIENTS-1 4 16}; do
			t0=$(med 1 "insert_$clients/0"); t1=$(med 1 "insert_$clients/512")
			u0=$(med 3 "insert_$clients/0"); u1=$(med 3 "insert_$clients/512")
			echo "| $clients clients | $t0 | $t1 | $(ratio "$t1" "$t0") | $u0 | $u1 | $(ratio "$u1" "$u0") | $(med 2 "insert_$clients/512") |"
		done
		echo
	fi
	echo "Raw runs (seconds or TPS, then read calls, write calls, bulk reads, heap pre-extensions, index pre-extensions; copy_4: seconds, pre-extensions, MB; inserts: TPS, pre-extensions, server CPU s / 1000 tx):"
	echo
	echo '```'
	for k in $(printf '%s\n' "${!raw[@]}" | sort); do
		printf '%s\n' "${raw[$k]}" | awk -v k="$k" 'NF {print k ": " $0}'
	done
	echo '```'
} >"$OUT"
