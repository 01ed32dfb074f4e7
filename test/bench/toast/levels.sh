#!/usr/bin/env bash
#
# levels.sh: the zstd TOAST level trade-off.  Sizes, INSERT time and SELECT
# (full detoast) time of zstd at several levels, against pglz and lz4, on
# run.sh's two corpora (sgml, mixed), side by side in one run; and why some
# values of the mixed corpus stay uncompressed.  Written as markdown to
# RESULTS_FILE (default test/bench/toast/runs/results-levels.md).
#
#   test/bench/toast/levels.sh [RESULTS_FILE]
#
# Every round runs every configuration once, in turn (pglz, lz4, zstd at
# each level), for each corpus: TRUNCATE, then pgbench with one client
# inserting the corpus REPS times from an uncompressed staging table (each
# value compressed anew), VACUUM, then one client reading every value of the
# table fully REPS times.  RUNS rounds; medians reported.  Sizes come from a
# last load of one copy of the corpus per configuration.  The level is set per
# connection (PGOPTIONS=-c toast_zstd_level=N), so the same table serves all
# levels.  Heap pre-extension is off (polar_bulk_extend_size = 0): it would
# add up to 4 MB of empty pages to a TOAST relation past 8 MB, and sizes
# would compare windows instead of compression.
#
# Environment: RUNS (5), REPS (3), LEVELS ("1 3 5 7 9 12").

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/build/install/bin
WORK=$TOP/build/bench/toast-levels
OUT=${1:-$TOP/test/bench/toast/runs/results-levels.md}
RUNS=${RUNS:-5}
REPS=${REPS:-3}
LEVELS=${LEVELS:-1 3 5 7 9 12}
. "$TOP/test/lib.sh"

if [ "$(id -u)" = 0 ]; then
	rm -rf "$WORK"
	mkdir -p "$(dirname "$OUT")"
	as_test_user "$WORK" env RUNS="$RUNS" REPS="$REPS" LEVELS="$LEVELS" "$0" "$WORK/results.md"
	cp "$WORK/results.md" "$OUT"
	echo "--- results in $OUT"
	exit
fi

[ -x "$BIN/postgres" ] || { echo "error: no build in $BIN: run make first" >&2; exit 1; }

port=$(free_port)
rm -rf "$WORK"/data "$WORK"/*.list "$WORK"/*.sql "$WORK"/*.log "$WORK"/*.tsv
mkdir -p "$WORK"

stop() { "$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true; }
trap stop EXIT

"$BIN/initdb" -D "$WORK/data" -A trust -U postgres --no-sync >"$WORK/initdb.log"
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w -o "-p $port -k '' \
	-c listen_addresses=127.0.0.1 -c shared_buffers=1GB \
	-c fsync=off -c synchronous_commit=off -c full_page_writes=off \
	-c max_wal_size=4GB -c checkpoint_timeout=30min -c autovacuum=off \
	-c polar_bulk_extend_size=0" start >/dev/null
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres
q() { "$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }

# The corpora, exactly as run.sh makes them.
. "$TOP/test/bench/toast/corpus.sh"
toast_corpus_lists "$WORK"

q <<SQL
CREATE TABLE names (corpus text, name text);
\copy names (name) FROM '$WORK/sgml.list'
UPDATE names SET corpus = 'sgml' WHERE corpus IS NULL;
\copy names (name) FROM '$WORK/mixed.list'
UPDATE names SET corpus = 'mixed' WHERE corpus IS NULL;
CREATE TABLE staging_sgml (id int, name text, body bytea STORAGE EXTERNAL);
CREATE TABLE staging_mixed (LIKE staging_sgml INCLUDING STORAGE);
INSERT INTO staging_sgml
	SELECT row_number() OVER (ORDER BY name), name, pg_read_binary_file(name)
	FROM names WHERE corpus = 'sgml';
INSERT INTO staging_mixed
	SELECT row_number() OVER (ORDER BY name), name, pg_read_binary_file(name)
	FROM names WHERE corpus = 'mixed';
VACUUM ANALYZE staging_sgml, staging_mixed;
SQL
for c in sgml mixed; do
	for m in pglz lz4 zstd; do
		q -c "CREATE TABLE t_${c}_$m (id int, name text, body bytea COMPRESSION $m)"
	done
done
configs="pglz lz4"
for l in $LEVELS; do
	configs="$configs zstd-$l"
done

cat >"$WORK/insert.sql" <<'SQL'
INSERT INTO :tab SELECT id, name, body FROM staging_:corpus;
SQL
cat >"$WORK/select.sql" <<'SQL'
SELECT sum(get_byte(body, octet_length(body) - 1)) FROM :tab;
SQL

# timed SCRIPT TABLE CORPUS LEVEL: one client runs the script REPS times;
# prints the wall time in milliseconds
timed()
{
	local t0 t1
	t0=$(date +%s%N)
	PGOPTIONS="-c toast_zstd_level=$4" "$BIN/pgbench" -n -f "$WORK/$1.sql" -c 1 -t "$REPS" \
		-D tab="$2" -D corpus="$3" >>"$WORK/pgbench.log" 2>&1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

# config NAME: the table method and level of a configuration
method() { echo "${1%%-*}"; }
level() { case $1 in zstd-*) echo "${1#zstd-}" ;; *) echo 3 ;; esac; }

declare -A ins sel
for r in $(seq "$RUNS"); do
	for c in sgml mixed; do
		for cf in $configs; do
			tab=t_${c}_$(method "$cf")
			q -c "TRUNCATE $tab" -c CHECKPOINT
			ins[$c $cf]+="$(timed insert "$tab" "$c" "$(level "$cf")") "
			q -c "VACUUM ANALYZE $tab"
			sel[$c $cf]+="$(timed select "$tab" "$c" "$(level "$cf")") "
			echo "round $r $c $cf: insert ${ins[$c $cf]}/ select ${sel[$c $cf]}" >&2
		done
	done
done

# Sizes after one copy of each corpus; values by how they are stored.
declare -A size vals both bym
for c in sgml mixed; do
	for cf in $configs; do
		tab=t_${c}_$(method "$cf")
		q -c "TRUNCATE $tab"
		PGOPTIONS="-c toast_zstd_level=$(level "$cf")" q \
			-c "INSERT INTO $tab SELECT id, name, body FROM staging_$c" -c "VACUUM ANALYZE $tab"
		size[$c $cf]=$(q -c "SELECT pg_total_relation_size('$tab')")
		vals[$c $cf]=$(q -c "SELECT sum(pg_column_size(body)) FROM $tab")
		# against pglz on the values both compressed (t_${c}_pglz keeps
		# its copy: pglz comes first and no other configuration uses it)
		both[$c $cf]=$(q -c "SELECT to_char((sum(pg_column_size(t.body))::numeric /
				sum(pg_column_size(p.body)) - 1) * 100, 'SG990.0')
			FROM $tab t JOIN t_${c}_pglz p USING (id)
			WHERE pg_column_compression(t.body) IS NOT NULL
			  AND pg_column_compression(p.body) IS NOT NULL")
		bym[$c $cf]=$(q -c "SELECT string_agg(coalesce(m, 'uncompressed') || ': ' || n, ', ' ORDER BY m)
			FROM (SELECT pg_column_compression(body) AS m, count(*) AS n FROM $tab GROUP BY 1) g")
	done
done

# Why values stay uncompressed (zstd at the default level, mixed corpus):
# inline values are too short for TOAST to try to compress them; the rest
# were tried and did not shrink.
lvl_default=$(q -c "SELECT boot_val FROM pg_settings WHERE name = 'toast_zstd_level'")
q -c "TRUNCATE t_mixed_zstd" -c "INSERT INTO t_mixed_zstd SELECT id, name, body FROM staging_mixed"
unc_summary=$(q -c "SELECT count(*) || ' values of ' || (SELECT count(*) FROM t_mixed_zstd) || ', '
		|| sum(octet_length(body)) || ' of ' || (SELECT sum(octet_length(body)) FROM t_mixed_zstd)
		|| ' raw bytes (' || round(100.0 * sum(octet_length(body)) / (SELECT sum(octet_length(body)) FROM t_mixed_zstd), 1)
		|| '%), are stored uncompressed:'
	FROM t_mixed_zstd WHERE pg_column_compression(body) IS NULL")
why=$(q -F ' | ' -c "
SELECT CASE WHEN pg_column_toast_chunk_id(body) IS NULL THEN 'stored inline: the row is too short for TOAST to try'
			ELSE 'stored out of line: compression tried, did not shrink' END,
	   CASE WHEN name ~ '\.(gz|xz|bz2|zst|lz4|zip|png|jpg|gif)$' THEN 'compressed file (' || substring(name from '\.([a-z0-9]+)$') || ')'
			WHEN name LIKE '/usr/bin/%' THEN 'executable'
			WHEN name LIKE '/usr/include/%' THEN 'header'
			ELSE 'other' END,
	   count(*), min(octet_length(body)), max(octet_length(body))
FROM t_mixed_zstd WHERE pg_column_compression(body) IS NULL
GROUP BY 1, 2 ORDER BY 1, 2")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", (a / b - 1) * 100 }'; }
{
	echo "# zstd TOAST levels: size and speed against pglz and lz4"
	echo
	echo "- command: \`test/bench/toast/levels.sh\` (RUNS=$RUNS REPS=$REPS LEVELS=\"$LEVELS\"); the server ran as user $(id -un)"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- server: $("$BIN/postgres" --version); default toast_zstd_level $lvl_default"
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) memory, shared with other jobs while this ran: compare numbers within this file only"
	echo "- settings: shared_buffers=1GB, fsync=off, synchronous_commit=off, full_page_writes=off, autovacuum=off, polar_bulk_extend_size=0 (no pre-extended empty pages in the sizes); all data in memory"
	echo "- corpora (as run.sh): sgml = $(wc -l <"$WORK/sgml.list") files of doc/src/sgml; mixed = $(wc -l <"$WORK/mixed.list") files of /usr/share/doc, /usr/include, /usr/bin"
	echo "- insert: one client, \`INSERT INTO t SELECT id, name, body FROM staging\` $REPS times (every value compressed anew); select: one client, \`SELECT sum(get_byte(body, octet_length(body) - 1)) FROM t\` $REPS times over the $REPS copies; wall ms of the pgbench run, median of $RUNS rounds, configurations in turn within each round"
	echo "- size: pg_total_relation_size after loading one copy; values: sum of pg_column_size(body), the stored size of the values alone; vs pglz: change (negative = smaller); values both compressed: the same over the values that both this method and pglz compressed (leaving out those neither can shrink)"
	echo
	for c in sgml mixed; do
		echo "## $c"
		echo
		echo "| method | size (bytes) | vs pglz | values (bytes) | vs pglz | vs pglz, values both compressed | insert ms | insert vs pglz | select ms | select vs pglz | values by method |"
		echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
		pi=$(median ${ins[$c pglz]})
		ps=$(median ${sel[$c pglz]})
		for cf in $configs; do
			i=$(median ${ins[$c $cf]})
			s=$(median ${sel[$c $cf]})
			echo "| $cf | ${size[$c $cf]} | $(pct "${size[$c $cf]}" "${size[$c pglz]}") | ${vals[$c $cf]} | $(pct "${vals[$c $cf]}" "${vals[$c pglz]}") | ${both[$c $cf]}% | $i | $(ratio "$i" "$pi") | $s | $(ratio "$s" "$ps") | ${bym[$c $cf]} |"
		done
		echo
	done
	echo "## Values of the mixed corpus stored uncompressed (zstd, level $lvl_default)"
	echo
	echo "$unc_summary"
	echo
	echo "| why | what | values | smallest (bytes) | largest (bytes) |"
	echo "| --- | --- | ---: | ---: | ---: |"
	echo "$why" | sed 's/^/| /; s/$/ |/'
	echo
	echo "## Raw numbers (ms, every round)"
	echo
	echo "| corpus | method | insert | select |"
	echo "| --- | --- | --- | --- |"
	for c in sgml mixed; do
		for cf in $configs; do
			echo "| $c | $cf | ${ins[$c $cf]}| ${sel[$c $cf]}|"
		done
	done
} >"$OUT"
echo "--- results in $OUT" >&2
