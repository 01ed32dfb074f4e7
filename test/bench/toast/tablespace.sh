#!/usr/bin/env bash
#
# tablespace.sh: what TOAST values that are already compressed cost when
# their table lives in a compressed tablespace, against a plain one, side by
# side in one run.
#
#   test/bench/toast/tablespace.sh [RESULTS.md]
#
# A staging table in pg_default holds PostgreSQL's documentation sources,
# COPIES times over (each copy a distinct value), as zstd TOAST values.  For
# ROUNDS rounds, alternating plain and compressed, a new table in each
# tablespace gets the same values by INSERT ... SELECT (which keeps them
# compressed as they are), then a CHECKPOINT writes its pages: that is where
# the storage manager tries to compress each page, fails on the TOAST chunks
# (they are zstd output already) and stores them raw.  Reported: median
# wall time of the INSERT and of the CHECKPOINT, and the checkpointer's CPU
# time per page written (from /proc), with the compressed / plain ratio;
# how the TOAST relation is stored (pgstrata_compression); and, for scale,
# the CPU time of one zstd compression attempt on each of the same pages
# (test/bench/compression/page_ideal.c on the plain copy's files).
#
# Environment: ROUNDS (5), COPIES (20).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
BIN=$TOP/build/install/bin
WORK=$TOP/build/bench/toast-tablespace
OUT=${1:-/dev/stdout}
ROUNDS=${ROUNDS:-5}
COPIES=${COPIES:-20}
export ROUNDS COPIES

if [ "$(id -u)" = 0 ]; then
	bench_as_test_user "$WORK" "$OUT" "$0"
	exit
fi

SGML=$TOP/build/postgresql/doc/src/sgml
[ -d "$SGML" ] || { echo "error: no $SGML: run make first" >&2; exit 1; }

mkdir -p "$WORK"
bench_cluster "$WORK"
cat >>"$WORK/data/postgresql.conf" <<EOF
shared_buffers = 1GB
checkpoint_timeout = 1h
autovacuum = off
EOF
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
stop() { "$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true; }
trap stop EXIT
psql() { "$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -v ON_ERROR_STOP=1 "$@" postgres; }

psql -c "CREATE TABLESPACE cts LOCATION '$WORK/cts' WITH (compression = 'zstd')" \
	-c "CREATE EXTENSION pgstrata" \
	-c "CREATE TABLE staging (name text, body text COMPRESSION zstd)" \
	-c "INSERT INTO staging
		SELECT f || '#' || c, pg_read_file('$SGML/' || f) || repeat(' ', c)
		FROM pg_ls_dir('$SGML') f, generate_series(1, $COPIES) c
		WHERE f LIKE '%.sgml'" \
	-c "CHECKPOINT"

checkpointer=$(psql -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
clk=$(getconf CLK_TCK)
# cpu: the checkpointer's user + system CPU time, in clock ticks
cpu() { awk '{ print $14 + $15 }' "/proc/$checkpointer/stat"; }
# ms SQL: wall milliseconds of one statement
ms()
{
	local t0 t1
	t0=$(date +%s%N)
	psql -c "$1" >/dev/null
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

declare -A insert_ms checkpoint_ms cpu_us
for r in $(seq 1 "$ROUNDS"); do
	for ts in pg_default cts; do
		psql -c "DROP TABLE IF EXISTS t_$ts" \
			-c "CREATE TABLE t_$ts (name text, body text COMPRESSION zstd) TABLESPACE $ts" \
			-c "CHECKPOINT"
		insert_ms[$ts]+="$(ms "INSERT INTO t_$ts SELECT * FROM staging") "
		c0=$(cpu)
		checkpoint_ms[$ts]+="$(ms "CHECKPOINT") "
		c1=$(cpu)
		pages=$(psql -c "SELECT pg_relation_size(reltoastrelid) / 8192 + relpages
			FROM pg_class WHERE relname = 't_$ts'")
		[ "$ts" = cts ] && pages=$(psql -c "SELECT sum(logical_pages) FROM pgstrata_compression
			WHERE relation IN ('t_cts'::regclass,
				(SELECT reltoastrelid FROM pg_class WHERE relname = 't_cts')::regclass)
			AND fork = 'main'")
		cpu_us[$ts]+="$(awk -v c=$((c1 - c0)) -v k="$clk" -v p="$pages" 'BEGIN { printf "%.2f", c / k * 1e6 / p }') "
	done
done

gcc -O2 -o "$WORK/page_ideal" "$TOP/test/bench/compression/page_ideal.c" -lzstd
toastfile=$WORK/data/$(psql -c "SELECT pg_relation_filepath(reltoastrelid) FROM pg_class WHERE relname = 't_pg_default'")
read -r _ _ _ _ attempt_ns < <("$WORK/page_ideal" 1 "$toastfile"*)

stats=$(psql -F ' | ' -c "
SELECT fork, logical_pages, stored_pages, raw_pages,
	   round(physical_bytes / 1048576.0, 1), round(logical_bytes / 1048576.0, 1),
	   round(ratio::numeric, 3)
FROM pgstrata_compression
WHERE relation = (SELECT reltoastrelid FROM pg_class WHERE relname = 't_cts')::regclass")
raw_mb=$(psql -c "SELECT round(sum(octet_length(body)) / 1048576.0, 1) FROM staging")
stored_mb=$(psql -c "SELECT round(sum(pg_column_size(body)) / 1048576.0, 1) FROM staging")

row()
{
	local what=$1 unit=$2 p c
	local -n a=$3
	p=$(median ${a[pg_default]})
	c=$(median ${a[cts]})
	echo "| $what ($unit) | $p | $c | $(awk -v p="$p" -v c="$c" 'BEGIN { printf "%.3f", c / p }') |"
}

{
	echo "# zstd TOAST values in a compressed tablespace"
	echo
	echo "- command: \`test/bench/toast/tablespace.sh\` (ROUNDS=$ROUNDS COPIES=$COPIES)"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, Linux $(uname -r)"
	echo "- server: $("$BIN/postgres" --version); shared_buffers 1GB; tablespace WITH (compression = 'zstd'), level 1"
	echo "- data: doc/src/sgml, $COPIES copies: $raw_mb MiB of text, $stored_mb MiB as zstd TOAST values"
	echo
	echo "Medians of $ROUNDS rounds, plain (pg_default) and compressed (cts) alternating."
	echo "CPU: the checkpointer's user + system time per page it wrote."
	echo
	echo "| step | plain | compressed | compressed / plain |"
	echo "|---|---:|---:|---:|"
	row "INSERT ... SELECT" ms insert_ms
	row "CHECKPOINT" ms checkpoint_ms
	row "checkpointer CPU per page" "µs" cpu_us
	echo
	echo "One zstd level-1 compression attempt on a page of that TOAST relation"
	echo "(nearly all fail): $(awk -v n="$attempt_ns" 'BEGIN { printf "%.1f", n / 1000 }') µs of CPU."
	echo
	echo "The TOAST relation in the compressed tablespace:"
	echo
	echo "| fork | logical pages | stored pages | stored raw | physical MiB | logical MiB | ratio |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	echo "$stats" | sed 's/^/| /; s/$/ |/'
	echo
	echo "Raw per round (ms or µs):"
	echo
	for k in insert_ms checkpoint_ms cpu_us; do
		local_p=$(eval "echo \${$k[pg_default]}")
		local_c=$(eval "echo \${$k[cts]}")
		echo "- $k plain: $local_p"
		echo "- $k compressed: $local_c"
	done
} >"$OUT"
