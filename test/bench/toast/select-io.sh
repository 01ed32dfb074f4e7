#!/usr/bin/env bash
#
# select-io.sh: full-detoast SELECT of TOAST values compressed with pglz, lz4
# and zstd, and stored uncompressed, when the data is not in memory.  The
# server runs on a small-memory machine with a slow disk, emulated with
# control groups (v1; rig_make in test/lib.sh): the server and its
# page cache get RIG_MEMORY_MB of memory, and its reads from the root file
# system's device are throttled to RIG_READ_MBPS.  The tables are several
# times larger than that memory, so every scan reads them from the device,
# and a method that stores fewer bytes reads fewer.
#
#   test/bench/toast/select-io.sh [RESULTS_FILE]
#
# Making the groups needs root; started by anyone else, or with RIG=0, it
# runs without them (the data then stays in the page cache, and every table
# is read once before the timed rounds) and says so in the results.  The server runs as the test user either way.  The groups are
# removed at the end.
#
# Each table holds COPIES copies of one of run.sh's corpora (sgml, mixed).
# For ROUNDS rounds, every table in turn (A B C D A B C D ...): one client
# reads every value to its last byte, once; wall ms.  Reported: medians,
# ratios to uncompressed storage, table sizes and bytes read through the
# throttle.
#
# Environment: ROUNDS (5), COPIES (40), RIG (1), RIG_MEMORY_MB (160),
# RIG_READ_MBPS (100).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
BIN=$TOP/build/install/bin
WORK=$TOP/build/bench/toast-select-io
OUT=${1:-$TOP/test/bench/toast/runs/results-select-io.md}
ROUNDS=${ROUNDS:-5}
COPIES=${COPIES:-40}
RIG=${RIG:-1}
MEM=${RIG_MEMORY_MB:-160}
MBPS=${RIG_READ_MBPS:-100}
CG=/sys/fs/cgroup
GROUP=pgstrata-toast-io
export ROUNDS COPIES

if [ "$(id -u)" = 0 ] && [ -z "${PGSTRATA_RIG_CHILD:-}" ]; then
	rig=""
	desc=""
	if [ "$RIG" = 1 ]; then
		trap 'rig_remove "$GROUP"' EXIT
		if rig_make "$GROUP" "$MEM" "$MBPS"; then
			rig="memory/$GROUP blkio/$GROUP"
			desc=$RIG_DESC
			dev=$RIG_DEV
		fi
	fi
	rm -rf "$WORK"
	mkdir -p "$WORK"
	as_test_user "$WORK" env PGSTRATA_RIG_CHILD=1 PGSTRATA_RIG="$rig" PGSTRATA_RIG_DESC="$desc" \
		PGSTRATA_RIG_DEV="${dev:-}" ROUNDS="$ROUNDS" COPIES="$COPIES" "$0" "$WORK/results.md"
	cp "$WORK/results.md" "$OUT"
	echo "--- results in $OUT"
	exit
fi

[ -x "$BIN/postgres" ] || { echo "error: no build in $BIN: run make first" >&2; exit 1; }
rig=${PGSTRATA_RIG:-}
mkdir -p "$WORK"
bench_cluster "$WORK"
cat >>"$WORK/data/postgresql.conf" <<EOF
shared_buffers = 16MB
fsync = off
synchronous_commit = off
full_page_writes = off
autovacuum = off
checkpoint_timeout = 1h
polar_bulk_extend_size = 0
EOF
# start the server, inside the rig's groups when there are some: its children
# and the page cache they fill are then the rig's
(
	for g in $rig; do
		echo "$BASHPID" >"$CG/$g/cgroup.procs"
	done
	exec "$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
)
stop() { "$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true; }
trap stop EXIT
q() { "$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -v ON_ERROR_STOP=1 "$@" postgres; }

. "$TOP/test/bench/toast/corpus.sh"
toast_corpus_lists "$WORK"

methods="none pglz lz4 zstd"
q <<SQL
CREATE TABLE names (corpus text, name text);
\copy names (name) FROM '$WORK/sgml.list'
UPDATE names SET corpus = 'sgml' WHERE corpus IS NULL;
\copy names (name) FROM '$WORK/mixed.list'
UPDATE names SET corpus = 'mixed' WHERE corpus IS NULL;
CREATE TABLE staging (corpus text, id int, name text, body bytea STORAGE EXTERNAL);
INSERT INTO staging
	SELECT corpus, row_number() OVER (PARTITION BY corpus ORDER BY name), name,
		   pg_read_binary_file(name)
	FROM names;
SQL
for c in sgml mixed; do
	for m in $methods; do
		if [ "$m" = none ]; then
			col="body bytea STORAGE EXTERNAL"
		else
			col="body bytea COMPRESSION $m"
		fi
		# copy k of a file differs from the others in its last byte, so that
		# no two values are equal
		q -c "CREATE TABLE t_${c}_$m (id int, copy int, name text, $col)" \
			-c "INSERT INTO t_${c}_$m
				SELECT id, k, name, overlay(body placing int4send(k) from octet_length(body) - 3)
				FROM staging, generate_series(1, $COPIES) k
				WHERE corpus = '$c'" \
			-c "VACUUM ANALYZE t_${c}_$m"
	done
done
q -c "CHECKPOINT"

# read_bytes: bytes read from the throttled device by the rig's group so far
read_bytes()
{
	if [ -n "$rig" ]; then
		awk -v d="$PGSTRATA_RIG_DEV" '$1 == d && $2 == "Read" { print $3 }' \
			"$CG/blkio/$GROUP/blkio.throttle.io_service_bytes"
	else
		echo 0
	fi
}

# Without the rig the tables fit in the page cache: read each once first,
# so that every timed round finds them there.
if [ -z "$rig" ]; then
	for c in sgml mixed; do
		for m in $methods; do
			q -c "SELECT sum(get_byte(body, octet_length(body) - 1)) FROM t_${c}_$m" >/dev/null
		done
	done
fi

declare -A ms mb
for r in $(seq "$ROUNDS"); do
	for c in sgml mixed; do
		for m in $methods; do
			b0=$(read_bytes)
			t0=$(date +%s%N)
			q -c "SELECT sum(get_byte(body, octet_length(body) - 1)) FROM t_${c}_$m" >/dev/null
			t1=$(date +%s%N)
			b1=$(read_bytes)
			ms[$c $m]+="$(((t1 - t0) / 1000000)) "
			mb[$c $m]+="$(((b1 - b0) / 1048576)) "
			echo "round $r $c $m: ${ms[$c $m]}ms" >&2
		done
	done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
{
	if [ -n "$rig" ]; then
		echo "# TOAST: full-detoast SELECT with the data not in memory"
	else
		echo "# TOAST: full-detoast SELECT with the data in the page cache (no rig)"
	fi
	echo
	echo "- command: \`test/bench/toast/select-io.sh\` (ROUNDS=$ROUNDS COPIES=$COPIES); the server ran as user $(id -un)"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- server: $("$BIN/postgres" --version); shared_buffers 16MB; zstd level $(q -c 'SHOW toast_zstd_level')"
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) memory, $(uname -sr); shared with other jobs while this ran"
	if [ -n "$rig" ]; then
		echo "- the server ran in the I/O-bound rig: ${PGSTRATA_RIG_DESC:-}"
	else
		echo "- the server ran WITHOUT the I/O-bound rig (not root, or RIG=0): the tables stay in the page cache (read once before the rounds), not in shared buffers: an in-memory run"
	fi
	echo "- each table: $COPIES copies of the corpus (each value distinct); a run: one client, \`SELECT sum(get_byte(body, octet_length(body) - 1)) FROM t\` once (every value read to its last byte); tables in turn within each round; median of $ROUNDS rounds"
	echo "- read MiB: bytes the server's group read from the throttled device during the run (0 without the rig)"
	echo
	for c in sgml mixed; do
		echo "## $c"
		echo
		echo "| method | table size (MiB) | median ms | vs none | read MiB (median) | runs (ms) | read MiB per run |"
		echo "| --- | ---: | ---: | ---: | ---: | --- | --- |"
		none=$(median ${ms[$c none]})
		for m in $methods; do
			size=$(q -c "SELECT round(pg_total_relation_size('t_${c}_$m') / 1048576.0)")
			med=$(median ${ms[$c $m]})
			echo "| $m | $size | $med | $(ratio "$med" "$none") | $(median ${mb[$c $m]}) | ${ms[$c $m]}| ${mb[$c $m]}|"
		done
		echo
	done
	echo "vs none: the method's median time over uncompressed storage's (below 1: faster than uncompressed)."
} >"$OUT"
echo "--- results in $OUT" >&2
