#!/usr/bin/env bash
#
# run.sh: compare the TOAST compression methods pglz, lz4 and zstd with
# uncompressed storage (SET STORAGE EXTERNAL), side by side in one run, on
#   sgml   PostgreSQL's documentation sources, one file per row
#   mixed  a deterministic sample of text, C headers and binaries of this
#          machine (/usr/share/doc, /usr/include, /usr/bin)
# and write the results as markdown (default
# test/bench/toast/runs/results-run.md).
#
#   test/bench/toast/run.sh [RESULTS_FILE]
#
# Needs the build (make).  Started by root, it runs itself as the test user,
# since PostgreSQL refuses to run as root.  The server listens on 127.0.0.1
# only, on a free port, with its data in build/bench/toast.
#
# For every corpus, method and client count (1 and 16) it times, with
# pgbench running REPS transactions per client (default 5), each client
# taking every Nth file:
#   insert  INSERT ... SELECT from an uncompressed staging table
#   select  full detoast of every value (get_byte of its last byte)
#   substr  the first 1000 bytes of every value (slice decompression)
# RUNS times each (default 5), and reports the median wall time.

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/build/install/bin
WORK=$TOP/build/bench/toast
OUT=${1:-$TOP/test/bench/toast/runs/results-run.md}
RUNS=${RUNS:-5}
# how many times each client repeats its share in one timed run, so that a
# run lasts long enough for connection set-up not to matter
REPS=${REPS:-5}
. "$TOP/test/lib.sh"

if [ "$(id -u)" = 0 ]; then
	rm -rf "$WORK"
	mkdir -p "$(dirname "$OUT")"
	tmpout=$WORK/results.md
	as_test_user "$WORK" env RUNS="$RUNS" REPS="$REPS" "$0" "$tmpout"
	cp "$tmpout" "$OUT"
	rm -f "$tmpout"
	echo "--- results in $OUT"
	exit
fi

[ -x "$BIN/postgres" ] || { echo "error: no build in $BIN: run make first" >&2; exit 1; }

port=$(perl -MIO::Socket::INET -e \
	'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0)->sockport')
rm -rf "$WORK"/data "$WORK"/*.list "$WORK"/*.sql "$WORK"/*.log
mkdir -p "$WORK"
sockdir=$(mktemp -d /tmp/pgstrata-bench.XXXXXX)

stop()
{
	"$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$sockdir"
}
trap stop EXIT

"$BIN/initdb" -D "$WORK/data" -A trust -U postgres --no-sync >"$WORK/initdb.log"
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w -o "-p $port -k $sockdir \
	-c listen_addresses=127.0.0.1 -c shared_buffers=1GB -c max_connections=40 \
	-c fsync=off -c synchronous_commit=off -c full_page_writes=off \
	-c max_wal_size=4GB -c checkpoint_timeout=30min -c autovacuum=off \
	-c polar_bulk_extend_size=0" start >/dev/null
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres

q()
{
	"$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"
}

# The corpora: file lists, sorted with the C locale so that a machine with
# the same files gives the same list.
. "$TOP/test/bench/toast/corpus.sh"
toast_corpus_lists "$WORK"

methods="pglz lz4 zstd none"
clients="1 16"

q <<SQL
CREATE TABLE names (corpus text, name text);
\copy names (name) FROM '$WORK/sgml.list'
UPDATE names SET corpus = 'sgml' WHERE corpus IS NULL;
\copy names (name) FROM '$WORK/mixed.list'
UPDATE names SET corpus = 'mixed' WHERE corpus IS NULL;
CREATE TABLE staging (corpus text, id int, name text, body bytea STORAGE EXTERNAL);
INSERT INTO staging
	SELECT corpus, row_number() OVER (PARTITION BY corpus ORDER BY name),
		   name, pg_read_binary_file(name)
	FROM names;
CREATE TABLE staging_sgml (LIKE staging INCLUDING STORAGE);
INSERT INTO staging_sgml SELECT * FROM staging WHERE corpus = 'sgml';
CREATE TABLE staging_mixed (LIKE staging INCLUDING STORAGE);
INSERT INTO staging_mixed SELECT * FROM staging WHERE corpus = 'mixed';
VACUUM ANALYZE staging, staging_sgml, staging_mixed;
SQL
for m in $methods; do
	for c in sgml mixed; do
		if [ "$m" = none ]; then
			col="body bytea STORAGE EXTERNAL"
		else
			col="body bytea COMPRESSION $m"
		fi
		q -c "CREATE TABLE t_${c}_$m (id int, name text, $col)"
	done
done

# The workloads: client :client_id of :nc takes the files with id % nc = it.
cat >"$WORK/insert.sql" <<'SQL'
INSERT INTO :tab SELECT id, name, body FROM staging_:corpus
	WHERE id % :nc = :client_id;
SQL
cat >"$WORK/select.sql" <<'SQL'
SELECT sum(get_byte(body, octet_length(body) - 1)) FROM :tab WHERE id % :nc = :client_id;
SQL
cat >"$WORK/substr.sql" <<'SQL'
SELECT sum(octet_length(substr(body, 1, 1000))) FROM :tab WHERE id % :nc = :client_id;
SQL

# timed SCRIPT TABLE CORPUS CLIENTS: run the script once per client, print
# the wall time in milliseconds.
timed()
{
	local script=$1 tab=$2 corpus=$3 nc=$4 t0 t1
	t0=$(date +%s%N)
	"$BIN/pgbench" -n -f "$WORK/$script.sql" -c "$nc" -j "$nc" -t "$REPS" \
		-D tab="$tab" -D corpus="$corpus" -D nc="$nc" >>"$WORK/pgbench.log" 2>&1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

median()
{
	tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

raw=$WORK/raw.tsv
: >"$raw"
for c in sgml mixed; do
	for m in $methods; do
		tab=t_${c}_$m
		for nc in $clients; do
			for op in insert select substr; do
				times=""
				for r in $(seq "$RUNS"); do
					if [ "$op" = insert ]; then
						q -c "TRUNCATE $tab" -c CHECKPOINT
					fi
					times="$times $(timed "$op" "$tab" "$c" "$nc")"
					if [ "$op" = insert ]; then
						# set hint bits, so that the reads that follow read only
						q -c "VACUUM ANALYZE $tab"
					fi
				done
				printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$m" "$nc" "$op" \
					"$(echo $times | median)" "$(echo $times)" >>"$raw"
				echo "$c $m clients=$nc $op: $times ms" >&2
			done
		done
	done
done

# Sizes, and a check that every table holds the staging data exactly, after
# loading one copy of the corpus.
sizes=$WORK/sizes.tsv
: >"$sizes"
for c in sgml mixed; do
	for m in $methods; do
		tab=t_${c}_$m
		q -c "TRUNCATE $tab" -c "INSERT INTO $tab SELECT id, name, body FROM staging_$c" \
			-c "VACUUM ANALYZE $tab"
		q -F $'\t' -c "SELECT '$c', '$m', pg_total_relation_size('$tab'),
			(SELECT count(*) FROM $tab),
			(SELECT sum(octet_length(body)) FROM $tab),
			(SELECT bool_and(t.body = s.body) AND count(*) = count(s.id)
			 FROM $tab t LEFT JOIN staging s ON s.corpus = '$c' AND s.id = t.id),
			(SELECT string_agg(coalesce(m, 'uncompressed') || ': ' || n, ', ' ORDER BY m)
			 FROM (SELECT pg_column_compression(body) AS m, count(*) AS n FROM $tab GROUP BY 1) g)" >>"$sizes"
	done
done

# The report.
{
	echo "# TOAST compression benchmark: pglz, lz4, zstd, uncompressed"
	echo
	echo "- command: \`test/bench/toast/run.sh\` (RUNS=$RUNS REPS=$REPS); the server ran as user $(id -un)"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- server: $("$BIN/postgres" --version)"
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) memory"
	echo "- zstd level: $(q -c 'SHOW toast_zstd_level') (toast_zstd_level default); libzstd $(q -c "SELECT 1" >/dev/null; ldd "$BIN/postgres" | awk '/libzstd/ { print $3 }' | xargs -r readlink -f | sed 's/.*libzstd.so.//')"
	echo "- settings: shared_buffers=1GB, fsync=off, synchronous_commit=off, full_page_writes=off, autovacuum=off, polar_bulk_extend_size=0 (heap pre-extension would add up to 4 MB of empty pages to a TOAST relation past 8 MB); all data in memory"
	echo "- corpora: sgml = $(wc -l <"$WORK/sgml.list") files of doc/src/sgml; mixed = $(wc -l <"$WORK/mixed.list") files, every Nth readable file of 1 kB to 1 MB of /usr/share/doc (200), /usr/include (200), /usr/bin (100), sorted by name"
	echo "- each workload: pgbench with N clients, $REPS transactions per client, client k of N takes the files with id % N = k; wall time in ms of the whole pgbench run (connections included), median of $RUNS runs. An insert run starts from an empty table and inserts the corpus $REPS times; select and substr then read the table the last insert run left ($REPS copies), each client its share $REPS times, so a select run reads the corpus $((REPS * REPS)) times"
	echo "- sizes: after loading one copy of the corpus (INSERT ... SELECT, 1 client) and VACUUM ANALYZE"
	echo "  - insert: \`INSERT INTO t SELECT id, name, body FROM staging\` (staging is uncompressed, so every value is compressed anew)"
	echo "  - select: \`SELECT sum(get_byte(body, octet_length(body) - 1)) FROM t\` (every value fully detoasted)"
	echo "  - substr: \`SELECT sum(octet_length(substr(body, 1, 1000))) FROM t\` (slice decompression of the first 1000 bytes)"
	echo "- the column is \`bytea COMPRESSION <method>\`, or \`bytea STORAGE EXTERNAL\` for none"
	echo "- the mixed corpus depends on what /usr holds, and times on what else the machine runs: compare numbers within one file"
	echo
	echo "## Size"
	echo
	echo "| corpus | method | files | raw bytes | pg_total_relation_size | vs raw | vs pglz | data identical | values by method |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"
	while IFS=$'\t' read -r c m size n rawbytes same bym; do
		p=$(awk -F'\t' -v c="$c" '$1 == c && $2 == "pglz" { print $3 }' "$sizes")
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$c" "$m" "$n" "$rawbytes" "$size" \
			"$(awk -v a="$size" -v b="$rawbytes" 'BEGIN { printf "%.3f", a / b }')" \
			"$(awk -v a="$size" -v b="$p" 'BEGIN { printf "%+.1f%%", (a / b - 1) * 100 }')" \
			"$same" "$bym"
	done <"$sizes"
	echo
	echo "## Time (ms, median; lower is better) and speed relative to pglz (higher is better)"
	echo
	for c in sgml mixed; do
		echo "### $c"
		echo
		echo "| workload | clients | pglz | lz4 | zstd | none | lz4 vs pglz | zstd vs pglz | none vs pglz | lz4 vs none |"
		echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
		for op in insert select substr; do
			for nc in $clients; do
				get() { awk -F'\t' -v c="$c" -v m="$1" -v nc="$nc" -v op="$op" \
					'$1 == c && $2 == m && $3 == nc && $4 == op { print $5 }' "$raw"; }
				p=$(get pglz) l=$(get lz4) z=$(get zstd) u=$(get none)
				ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
				echo "| $op | $nc | $p | $l | $z | $u | $(ratio "$p" "$l") | $(ratio "$p" "$z") | $(ratio "$p" "$u") | $(ratio "$u" "$l") |"
			done
		done
		echo
	done
	echo "## Raw numbers (ms, every run)"
	echo
	echo "| corpus | method | clients | workload | median | runs |"
	echo "| --- | --- | ---: | --- | ---: | --- |"
	while IFS=$'\t' read -r c m nc op med all; do
		echo "| $c | $m | $nc | $op | $med | $all |"
	done <"$raw"
} >"$OUT"
echo "--- results in $OUT" >&2
