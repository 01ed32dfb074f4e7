#!/usr/bin/env bash
#
# tablespace.sh: what TOAST values that are already compressed cost when
# their table lives in a compressed tablespace, against a plain one, side by
# side in one run.
#
#   test/bench/toast/tablespace.sh [OUTPUT.md]
#
# A staging table in pg_default holds PostgreSQL's documentation sources,
# COPIES times over (each copy a distinct value), as zstd TOAST values.  For
# ROUNDS rounds, alternating plain and compressed, a new table in each
# tablespace gets the same values by INSERT ... SELECT (which keeps them
# compressed as they are), then a CHECKPOINT writes its pages: that is where
# the storage manager tries to compress each page, fails on the TOAST chunks
# (they are zstd output already) and stores them raw.  Reported: median
# wall time of the INSERT and of the CHECKPOINT, and the checkpointer's CPU
# time per page written (from /proc/PID/schedstat, in nanoseconds), with the
# compressed / plain ratio; how the TOAST relation is stored
# (pgstrata_compression); and, on the plain copy's TOAST pages
# (test/bench/toast/page_estimate.c, built against the format layer), the CPU time
# of one zstd level-1 compression attempt and of the incompressibility
# estimate that now comes before it, so that the extra CPU time per page of
# the compressed tablespace can be told in attempts.
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
# cpu: the checkpointer's CPU time (user and system) in nanoseconds
cpu() { awk '{ print $1 }' "/proc/$checkpointer/schedstat"; }
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
		cpu_us[$ts]+="$(awk -v c=$((c1 - c0)) -v p="$pages" 'BEGIN { printf "%.2f", c / 1000 / p }') "
	done
done

pgc=$BIN/pg_config
# shellcheck disable=SC2046
$("$pgc" --cc) $("$pgc" --cflags) $("$pgc" --cppflags) -I"$TOP/src/include" \
	-I"$("$pgc" --includedir-server)" -o "$WORK/page_estimate" \
	"$TOP/test/bench/toast/page_estimate.c" $PCS_FORMAT_SOURCES \
	"$TOP/test/common/pcs_frontend.c" \
	-L"$("$pgc" --libdir)" -lpgcommon -lpgport $("$pgc" --libs | tr ' ' '\n' | grep -E '^-l(zstd|lz4|m)$')
toastfile=$WORK/data/$(psql -c "SELECT pg_relation_filepath(reltoastrelid) FROM pg_class WHERE relname = 't_pg_default'")
read -r est_pages est_skipped est_compressible est_wrong estimate_ns attempt_ns < <("$WORK/page_estimate" 1 "$toastfile"*)

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
	echo "CPU: the checkpointer's CPU time (/proc/PID/schedstat) per page it wrote."
	echo
	echo "| step | plain | compressed | compressed / plain |"
	echo "|---|---:|---:|---:|"
	row "INSERT ... SELECT" ms insert_ms
	row "CHECKPOINT" ms checkpoint_ms
	row "checkpointer CPU per page" "µs" cpu_us
	echo
	p=$(median ${cpu_us[pg_default]})
	c=$(median ${cpu_us[cts]})
	echo "On the $est_pages pages of that TOAST relation (page_estimate.c, the plain copy's files):"
	echo
	echo "- one zstd level-1 compression attempt: $(awk -v n="$attempt_ns" 'BEGIN { printf "%.1f", n / 1000 }') µs of CPU per page; $est_compressible of the pages would compress by a unit or more"
	echo "- the incompressibility estimate (pcs_page_incompressible()): $(awk -v n="$estimate_ns" 'BEGIN { printf "%.1f", n / 1000 }') µs per page, $(awk -v a="$estimate_ns" -v b="$attempt_ns" 'BEGIN { printf "%.2f", a / b }') attempts; it skips $est_skipped pages (stores them raw without trying), $est_wrong of them compressible"
	echo "- **the compressed tablespace's extra checkpointer CPU per page: $(awk -v p="$p" -v c="$c" 'BEGIN { printf "%.1f", c - p }') µs = $(awk -v p="$p" -v c="$c" -v a="$attempt_ns" 'BEGIN { printf "%.2f", (c - p) * 1000 / a }') attempts** (medians above)"
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
