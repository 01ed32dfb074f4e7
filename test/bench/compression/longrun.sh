#!/usr/bin/env bash
#
# longrun.sh: how a compressed tablespace's size behaves under a long
# update-heavy load, and what reclaiming garbage brings back.
#
#   test/bench/compression/longrun.sh [OUTPUT.md]
#
# One throwaway cluster (build/bench/longrun): pgbench tables and indexes of
# scale SCALE in a tablespace WITH (compression = 'zstd'), then pgbench's
# built-in TPC-B-like script (three UPDATEs and an INSERT per transaction)
# from CLIENTS clients for DURATION seconds, autovacuum on.  Every SAMPLE
# seconds the physical bytes of the tablespace, the logical bytes, the
# garbage bytes (units referenced by no block, from the pgstrata extension)
# and the transactions so far are recorded.  At the end: a checkpoint, the
# sizes, VACUUM FULL of the four tables (the documented way to reclaim
# garbage), the sizes again, and the same rows loaded afresh into new
# compressed tables for comparison.  Between the end of the run and VACUUM
# FULL, the four tables and their indexes are moved (ALTER ... SET
# TABLESPACE, which writes each page afresh) into a second compressed
# tablespace and then into the default one, and back: the same pages
# without the history of their segments (slack of pages that grew, garbage)
# say what the storage adds, and plain zstd on each of those pages (the
# default tablespace's files, page_ideal.c) against the same on the rows
# loaded afresh says what the pages' content adds, for any compressor that
# works page by page.
#
# The curve's raw numbers (bytes) go to the CSV of OUTPUT's name
# (OUTPUT.csv; build/bench/longrun/results.csv for standard output), and
# when gnuplot is there (as root, the script installs gnuplot-nox) its plot
# to OUTPUT.png, drawn by test/bench/plot.sh.
#
# Environment: SCALE (20), CLIENTS (8), DURATION (1800), SAMPLE (60);
# PGSTRATA_FLAVOUR runs the build of that flavour (build/install-FLAVOUR),
# in build/bench/longrun-FLAVOUR, so that two builds can run side by side.

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
BIN=$PG_INSTALL/bin
WORK=$TOP/build/bench/longrun$FLAVOUR_SUFFIX
OUT=${1:-/dev/stdout}
SCALE=${SCALE:-20}
CLIENTS=${CLIENTS:-8}
DURATION=${DURATION:-1800}
SAMPLE=${SAMPLE:-60}
export SCALE CLIENTS DURATION SAMPLE

# the CSV and PNG next to OUTPUT.md
case $OUT in
	/dev/*) BASE=$WORK/results ;;
	*) BASE=${OUT%.md} ;;
esac
RESULT_NAME=${RESULT_NAME:-$(basename "$BASE")}
export RESULT_NAME

if [ "$(id -u)" = 0 ]; then
	bench_as_test_user_with_plot "$WORK" "$OUT" "$BASE" "$0"
fi

mkdir -p "$WORK"
gcc -O2 -o "$WORK/page_ideal" "$TOP/test/bench/compression/page_ideal.c" -lzstd
bench_cluster "$WORK"
cat >>"$WORK/data/postgresql.conf" <<EOF
shared_buffers = 256MB
checkpoint_timeout = 5min
max_connections = 50
EOF
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
stop() { "$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true; }
trap stop EXIT
psql() { "$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -v ON_ERROR_STOP=1 "$@" postgres; }

psql -c "CREATE TABLESPACE cts LOCATION '$WORK/cts' WITH (compression = 'zstd')" \
	-c "CREATE EXTENSION pgstrata"
"$BIN/pgbench" -h 127.0.0.1 -p "$port" -i -q -s "$SCALE" --tablespace=cts \
	--index-tablespace=cts postgres >"$WORK/init.log" 2>&1

# sizes: "physical logical garbage slack stored" in bytes over the
# tablespace's relations (SIZES), after a checkpoint
SIZES="SELECT pg_tablespace_size('cts'), sum(logical_bytes), sum(garbage_bytes),
	sum(slack_bytes), sum(stored_bytes)
FROM pgstrata_compression WHERE tablespace = 'cts'"
sizes() { psql -F ' ' -c "CHECKPOINT" -c "$SIZES"; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
xacts() { psql -c "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'"; }

read -r fresh_phys fresh_log fresh_garb fresh_slack fresh_stored < <(sizes)
start_xacts=$(xacts)
{
	echo "seconds,transactions,physical_bytes,logical_bytes,stored_bytes,slack_bytes,garbage_bytes,physical_over_fresh,physical_over_stored"
	echo "0,0,$fresh_phys,$fresh_log,$fresh_stored,$fresh_slack,$fresh_garb,1.000,$(ratio "$fresh_phys" "$fresh_stored")"
} >"$BASE.csv"

"$BIN/pgbench" -h 127.0.0.1 -p "$port" -c "$CLIENTS" -j 2 -T "$DURATION" \
	postgres >"$WORK/pgbench.log" 2>&1 &
bench=$!

curve=""
t=0
while kill -0 "$bench" 2>/dev/null; do
	sleep "$SAMPLE"
	t=$((t + SAMPLE))
	kill -0 "$bench" 2>/dev/null || break
	read -r phys log garb slack stored < <(psql -F ' ' -c "$SIZES")
	x=$(($(xacts) - start_xacts))
	curve+="| $t | $x | $(mb "$log") | $(mb "$phys") | $(mb "$stored") | $(mb "$slack") | $(mb "$garb") | $(awk -v p="$phys" -v f="$fresh_phys" 'BEGIN { printf "%.2f", p / f }') |"$'\n'
	echo "$t,$x,$phys,$log,$stored,$slack,$garb,$(ratio "$phys" "$fresh_phys"),$(ratio "$phys" "$stored")" >>"$BASE.csv"
done
wait "$bench"
tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$WORK/pgbench.log" | head -1)

read -r end_phys end_log end_garb end_slack end_stored < <(sizes)

relsize()
{
	psql -c "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname = '$1'"
}
# move SCHEMA TABLESPACE: its tables and indexes, each page written afresh
move()
{
	psql -c "DO \$\$DECLARE r record; BEGIN
	FOR r IN SELECT c.oid::regclass AS rel, c.relkind FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = '$1' AND c.relkind IN ('r', 'i') ORDER BY c.relkind DESC LOOP
		EXECUTE format('ALTER %s %s SET TABLESPACE %I',
			CASE r.relkind WHEN 'r' THEN 'TABLE' ELSE 'INDEX' END, r.rel, '$2');
	END LOOP; END\$\$" -c "CHECKPOINT"
}
# ideal SCHEMA: plain zstd-1 bytes of each page of its tables and indexes
# (main forks; they must be in the default tablespace, uncompressed)
ideal()
{
	local files=() p
	shopt -s nullglob
	for p in $(psql -c "SELECT pg_relation_filepath(c.oid) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = '$1' AND c.relkind IN ('r', 'i')"); do
		files+=("$WORK/data/$p" "$WORK/data/$p".[0-9]*)
	done
	shopt -u nullglob
	"$WORK/page_ideal" 1 "${files[@]}" | awk '{ print $3 }'
}

ended=$(relsize public)
rm -rf "$WORK/cts2"
mkdir "$WORK/cts2"
psql -c "CREATE TABLESPACE cts2 LOCATION '$WORK/cts2' WITH (compression = 'zstd')"
move public cts2
rewritten=$(relsize public)
move public pg_default
ideal_end=$(ideal public)
move public cts

psql -c "VACUUM FULL pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history"
read -r full_phys full_log full_garb full_slack full_stored < <(sizes)

# The same rows loaded afresh into new compressed tables, with the same indexes.
psql -c "CREATE SCHEMA fresh" -c "
CREATE TABLE fresh.a TABLESPACE cts AS SELECT * FROM pgbench_accounts;
CREATE TABLE fresh.b TABLESPACE cts AS SELECT * FROM pgbench_branches;
CREATE TABLE fresh.t TABLESPACE cts AS SELECT * FROM pgbench_tellers;
CREATE TABLE fresh.h TABLESPACE cts AS SELECT * FROM pgbench_history;
ALTER TABLE fresh.a ADD PRIMARY KEY (aid) USING INDEX TABLESPACE cts;
ALTER TABLE fresh.b ADD PRIMARY KEY (bid) USING INDEX TABLESPACE cts;
ALTER TABLE fresh.t ADD PRIMARY KEY (tid) USING INDEX TABLESPACE cts;
CHECKPOINT"
reclaimed=$(relsize public)
reloaded=$(relsize fresh)
move fresh pg_default
ideal_fresh=$(ideal fresh)

if command -v gnuplot >/dev/null; then
	"$TOP/test/bench/plot.sh" "$BASE.csv" "$BASE.png" \
		"longrun.sh: pgbench scale $SCALE, $CLIENTS clients" \
		"MiB=physical_bytes:physical,stored_bytes:stored,slack_bytes:slack,garbage_bytes:garbage" \
		"physical / stored=physical_over_stored:physical / stored images@$(awk -v p="$rewritten" -v s="$end_stored" 'BEGIN { printf "%.3f", 1.15 * p / s }'):1.15 x (pages written afresh / stored) at the end"
	png="![The curve]($RESULT_NAME.png)"
else
	png="(gnuplot was not found: no PNG; test/bench/plot.sh draws it from the CSV)"
fi

{
	echo "# Compressed tablespace under a long update-heavy load"
	echo
	echo "- command: \`test/bench/compression/longrun.sh\` (SCALE=$SCALE CLIENTS=$CLIENTS DURATION=$DURATION SAMPLE=$SAMPLE)"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, Linux $(uname -r); pgbench and the server on the same machine"
	echo "- server: $("$BIN/postgres" --version); shared_buffers 256MB, checkpoint_timeout 5min, autovacuum on; tablespace WITH (compression = 'zstd'), level 1"
	echo "- load: pgbench built-in TPC-B-like, $CLIENTS clients, $DURATION s, $tps TPS"
	echo
	echo "Sizes in MiB. physical: pg_tablespace_size('cts'); logical: blocks x 8 kB;"
	echo "the rest from pgstrata_compression: stored, the bytes of the page images;"
	echo "slack, units allocated to images beyond their size (rounding to the unit,"
	echo "and the quarter more a page gets once it has grown); garbage, units no"
	echo "block references.  Physical also counts the maps and the growth reserve."
	echo
	echo "| when | physical | logical | stored | slack | garbage |"
	echo "|---|---:|---:|---:|---:|---:|"
	echo "| fresh load | $(mb "$fresh_phys") | $(mb "$fresh_log") | $(mb "$fresh_stored") | $(mb "$fresh_slack") | $(mb "$fresh_garb") |"
	echo "| end of run | $(mb "$end_phys") | $(mb "$end_log") | $(mb "$end_stored") | $(mb "$end_slack") | $(mb "$end_garb") |"
	echo "| after VACUUM FULL | $(mb "$full_phys") | $(mb "$full_log") | $(mb "$full_stored") | $(mb "$full_slack") | $(mb "$full_garb") |"
	echo
	echo "After VACUUM FULL, the four tables with their indexes take $(mb "$reclaimed") MiB;"
	echo "the same rows loaded afresh into new compressed tables with the same"
	echo "primary keys take $(mb "$reloaded") MiB: ratio $(awk -v a="$reclaimed" -v b="$reloaded" 'BEGIN { printf "%.3f", a / b }')."
	echo
	echo "Where the end of run's size comes from (the four tables with their"
	echo "indexes, pg_total_relation_size):"
	echo
	echo "| | MiB | ratio |"
	echo "|---|---:|---|"
	echo "| end of run (A) | $(mb "$ended") | A / F = $(ratio "$ended" "$reloaded") (the update-heavy size target's measure) |"
	echo "| its pages written afresh into a second compressed tablespace (P) | $(mb "$rewritten") | A / P = $(ratio "$ended" "$rewritten"): what the segments' history adds |"
	echo "| the same rows loaded afresh (F) | $(mb "$reloaded") | P / F = $(ratio "$rewritten" "$reloaded"): what the pages' content adds |"
	echo "| plain zstd-1 on each page: end-of-run pages (Z) against the fresh load's (Z0) | $(mb "$ideal_end") / $(mb "$ideal_fresh") | Z / Z0 = $(ratio "$ideal_end" "$ideal_fresh"): the content, for any per-page compressor |"
	echo
	echo "The curve (every $SAMPLE s; no checkpoint forced, so recent writes may"
	echo "still sit in shared buffers; raw numbers in [$RESULT_NAME.csv]($RESULT_NAME.csv))."
	echo "Below the sizes, physical over the stored images; its dashed line is"
	echo "1.15 times P over the stored images at the end of the run, so the curve"
	echo "is above it where the segments' history adds more than 1.15, if the"
	echo "pages' maps, forks and rounding cost the same per stored byte all along"
	echo "(an estimate; the table above measures it at the end only):"
	echo
	echo "$png"
	echo
	echo "| seconds | transactions | logical | physical | stored | slack | garbage | physical / fresh |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s' "$curve"
} >"$OUT"
