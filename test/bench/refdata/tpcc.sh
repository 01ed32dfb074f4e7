#!/usr/bin/env bash
#
# tpcc.sh: sysbench-tpcc with foreign keys, item as heap vs item as refdata.
#
# One throwaway cluster on 127.0.0.1 with two databases holding the same
# TPC-C data (the second is a copy of the first): in tpcc_heap the item
# table is heap, in tpcc_refdata it is refdata.  Both have sysbench-tpcc's
# foreign keys (--use_fk=1) plus order_line.ol_i_id -> item.i_id, so every
# order line a New-Order inserts runs a foreign-key check against item.
# For each thread count, ROUNDS rounds of the TPC-C mix, heap and refdata
# alternately (the order swaps every round), DURATION seconds each; then
# the same for a read-only pgbench script on item (tpcc_ro.sql).  Per run:
# TPS, New-Orders committed, WAL bytes, MultiXacts created, heap row-lock WAL
# records on item (and those that set a MultiXact, and their bytes), all
# lock records, lock waits longer than deadlock_timeout (log_lock_waits;
# those on item apart).
# Raw lines and a summary with medians go to stdout.
#
#   test/bench/refdata/tpcc.sh [DURATION [ROUNDS [THREADS...]]]
#
# defaults: DURATION=60, ROUNDS=3, THREADS="8 32"; RO_DURATION (30) is the
# length of a read-only run, TPCC_SCALE (2) the number of warehouses.
#
# Needs sysbench (Debian package sysbench, >= 1.0.14, with the pgsql
# driver; patches/tools/install-deps.sh sysbench) and the Lua scripts of
# sysbench-tpcc (github.com/Percona-Lab/sysbench-tpcc; not part of this
# repository, GPL): clone it and point TPCC_LUA_DIR at the directory
# holding tpcc.lua.  PGSTRATA_BIN is the bin directory of the installation
# to test (default: build/install/bin of this repository).  Run as root, it
# runs itself as the test user (test/lib.sh).

set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../../.." && pwd)
BIN=${PGSTRATA_BIN:-$TOP/build/install/bin}
WORK=${TPCC_WORK:-$TOP/build/bench/refdata-tpcc}
LUA=${TPCC_LUA_DIR:-}
. "$TOP/test/lib.sh"

if [ -z "$LUA" ] || [ ! -r "$LUA/tpcc.lua" ]; then
	echo "error: set TPCC_LUA_DIR to a checkout of github.com/Percona-Lab/sysbench-tpcc (the directory with tpcc.lua)" >&2
	exit 1
fi
if ! command -v sysbench >/dev/null; then
	echo "error: sysbench not found; patches/tools/install-deps.sh sysbench installs it" >&2
	exit 1
fi
[ -x "$BIN/postgres" ] || { echo "error: no postgres in $BIN (set PGSTRATA_BIN)" >&2; exit 1; }

if [ "$(id -u)" = 0 ]; then
	ensure_test_user
	rm -rf "$WORK"
	mkdir -p "$WORK"
	chown -R "$TEST_USER:" "$WORK"
	for p in "$BIN/postgres" "$LUA/tpcc.lua" "$HERE/tpcc_ro.sql"; do
		runuser -u "$TEST_USER" -- test -r "$p" ||
			{ echo "error: user $TEST_USER cannot read $p" >&2; exit 1; }
	done
	exec runuser -u "$TEST_USER" -- env HOME="$WORK" PGSTRATA_BIN="$BIN" \
		TPCC_LUA_DIR="$LUA" TPCC_WORK="$WORK" RO_DURATION="${RO_DURATION:-}" \
		TPCC_SCALE="${TPCC_SCALE:-}" "$0" "$@"
fi

DURATION=${1:-60}
ROUNDS=${2:-3}
shift 2 || shift $# || true
THREADS=${*:-8 32}
RO_DURATION=${RO_DURATION:-30}
SCALE=${TPCC_SCALE:-2}

rm -rf "$WORK"/*
mkdir -p "$WORK"
oltp_bench_cluster "$BIN" "$WORK"

psql() { "$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -U postgres "$@"; }

sb()
{
	local db=$1
	shift
	(cd "$LUA" && sysbench ./tpcc.lua --db-driver=pgsql --pgsql-host=127.0.0.1 \
		--pgsql-port="$port" --pgsql-user=postgres --pgsql-db="$db" \
		--tables=1 --scale="$SCALE" --use_fk=1 --trx_level=RC "$@")
}

# Load once, then copy: both databases hold the same rows.
t0=$(date +%s)
psql -d postgres -c "CREATE EXTENSION pg_walinspect"
psql -d postgres -c "CREATE DATABASE tpcc_heap"
sb tpcc_heap --threads="$SCALE" prepare >"$WORK/prepare.log" 2>&1
psql -d tpcc_heap -c "ALTER TABLE order_line1 ADD CONSTRAINT fkey_order_line_item_1
	FOREIGN KEY (ol_i_id) REFERENCES item1 (i_id)"
psql -d tpcc_heap -c "VACUUM (FREEZE, ANALYZE)"
psql -d postgres -c "CHECKPOINT" -c "CREATE DATABASE tpcc_refdata TEMPLATE tpcc_heap STRATEGY FILE_COPY"
psql -d tpcc_refdata -c "CREATE EXTENSION refdata" \
	-c "ALTER TABLE item1 SET ACCESS METHOD refdata"
# rewrite heap's item1 too, so that both tables are fresh copies
psql -d tpcc_heap -c "VACUUM FULL item1"
for db in tpcc_heap tpcc_refdata; do
	psql -d "$db" -c "VACUUM (FREEZE, ANALYZE) item1"
done
t1=$(date +%s)

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "server: $("$BIN/postgres" --version)"
echo "client: $(sysbench --version), sysbench-tpcc $(git -C "$LUA" rev-parse --short HEAD 2>/dev/null || echo '(version unknown)')"
echo "command: test/bench/refdata/tpcc.sh $DURATION $ROUNDS $THREADS (RO_DURATION=$RO_DURATION TPCC_SCALE=$SCALE)"
echo "settings: shared_buffers=1GB synchronous_commit=off autovacuum=off checkpoint before each run, deadlock_timeout=20ms log_lock_waits=on; --scale=$SCALE --tables=1 --use_fk=1 --trx_level=RC"
echo "prepare: $((t1 - t0)) s; item: $(psql -d tpcc_heap -c "SELECT pg_relation_size('item1') / 8192") pages, $(psql -d tpcc_heap -c "SELECT count(*) FROM item1") rows"
echo "access methods: $(for db in tpcc_heap tpcc_refdata; do psql -d "$db" -c "SELECT '$db.item1=' || amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname = 'item1'"; done | tr '\n' ' ')"
echo

# next MultiXact id, as of a checkpoint taken now
next_mxid() { psql -d postgres -c "CHECKPOINT" -c "SELECT next_multixact_id FROM pg_control_checkpoint()"; }

# lock_waits FROM: "waits waits_on_item" logged since byte FROM of the log
lock_waits()
{
	tail -c +"$(($1 + 1))" "$WORK/server.log" | awk '
		/ LOG:  process [0-9]+ still waiting for / { n++; cur = 1; if (/item1/) { i++; cur = 0 } ; next }
		/ (DETAIL|CONTEXT|STATEMENT):  / { if (cur && /item1/) { i++; cur = 0 }; next }
		{ cur = 0 }
		END { print n + 0, i + 0 }'
}

# one_run KIND AM THREADS SECONDS: one run, one raw line
one_run()
{
	local kind=$1 am=$2 th=$3 secs=$4 db=tpcc_$2
	local dboid fn m0 m1 w0 w1 o0 o1 log0 out tx err tps wal recs waits
	dboid=$(psql -d postgres -c "SELECT oid FROM pg_database WHERE datname = '$db'")
	fn=$(psql -d "$db" -c "SELECT pg_relation_filenode('item1')")
	m0=$(next_mxid)
	o0=$(psql -d "$db" -c "SELECT sum(d_next_o_id) FROM district1")
	log0=$(stat -c %s "$WORK/server.log")
	w0=$(psql -d postgres -c "SELECT pg_current_wal_insert_lsn()")
	if [ "$kind" = tpcc ]; then
		out=$(sb "$db" --threads="$th" --time="$secs" --report-interval=0 run 2>&1) ||
			{ echo "$out" >&2; return 1; }
		echo "$out" >"$WORK/run-$kind-$am-$th-$r.log"
		tx=$(echo "$out" | sed -n 's/^ *transactions: *\([0-9]*\) .*/\1/p')
		err=$(echo "$out" | sed -n 's/^ *ignored errors: *\([0-9]*\) .*/\1/p')
		tps=$(echo "$out" | sed -n 's/^ *transactions: .*(\([0-9.]*\) per sec.)/\1/p')
	else
		out=$("$BIN/pgbench" -n -h 127.0.0.1 -p "$port" -U postgres -M prepared \
			-c "$th" -j 2 -T "$secs" -D scale="$SCALE" -f "$HERE/tpcc_ro.sql" "$db" 2>&1) ||
			{ echo "$out" >&2; return 1; }
		echo "$out" >"$WORK/run-$kind-$am-$th-$r.log"
		tx=$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
		err=$(echo "$out" | sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p')
		tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
	fi
	w1=$(psql -d postgres -c "SELECT pg_current_wal_insert_lsn()")
	o1=$(psql -d "$db" -c "SELECT sum(d_next_o_id) FROM district1")
	wal=$(psql -d postgres -c "SELECT pg_wal_lsn_diff('$w1', '$w0')::bigint")
	# the checkpoint also flushes the run's WAL, which pg_walinspect reads only
	# once flushed (wal_keep_size keeps it)
	m1=$(next_mxid)
	# row-lock records of the run: on item, on item with a MultiXact, on any table;
	# all records that touch item (heap writes a lock record per foreign-key check);
	# the bytes of item's lock records, full-page images included
	recs="0 0 0 0 0"
	[ "$wal" -gt 0 ] && recs=$(psql -d postgres -F ' ' -c "SELECT
			count(*) FILTER (WHERE is_lock AND on_item),
			count(*) FILTER (WHERE is_lock AND on_item AND description LIKE '%IS_MULTI%'),
			count(*) FILTER (WHERE is_lock),
			count(*) FILTER (WHERE on_item),
			coalesce(sum(record_length) FILTER (WHERE is_lock AND on_item), 0)
		FROM (SELECT record_type IN ('LOCK', 'LOCK_UPDATED') AND resource_manager IN ('Heap', 'Heap2') AS is_lock,
				reldatabase = $dboid AND relfilenode = $fn AS on_item, description, record_length
			FROM pg_get_wal_block_info('$w0', '$w1', false)) b")
	waits=$(lock_waits "$log0")
	printf '%-6s %-8s %3s %2s %10s %8s %6s %7s %12s %8s %10s %10s %10s %10s %12s %6s %6s\n' \
		"$kind" "$am" "$th" "$r" "$tps" "$tx" "$err" $((o1 - o0)) "$wal" $((m1 - m0)) \
		$recs $waits
}

hdr()
{
	printf '%-6s %-8s %3s %2s %10s %8s %6s %7s %12s %8s %10s %10s %10s %10s %12s %6s %6s\n' \
		kind item thr rnd tps xacts errors neword wal_bytes multixact \
		lock_item lock_imulti lock_all recs_item lockb_item waits wait_i
}

hdr | tee "$WORK/raw"
for kind in tpcc ro; do
	secs=$DURATION
	[ "$kind" = ro ] && secs=$RO_DURATION
	for th in $THREADS; do
		for r in $(seq 1 "$ROUNDS"); do
			order="heap refdata"
			[ $((r % 2)) = 0 ] && order="refdata heap"
			for am in $order; do
				one_run "$kind" "$am" "$th" "$secs" | tee -a "$WORK/raw"
			done
		done
	done
done

# Summary: medians per kind, threads and item access method, refdata/heap ratios.
echo
echo "medians over $ROUNDS rounds (wal/xact = WAL bytes per transaction):"
printf '%-6s %3s %-8s %10s %9s %10s %10s %10s %8s\n' kind thr item tps neword/s wal/xact multixact lock_item waits
for kind in tpcc ro; do
	secs=$DURATION
	[ "$kind" = ro ] && secs=$RO_DURATION
	for th in $THREADS; do
		for am in heap refdata; do
			col() { awk -v k="$kind" -v a="$am" -v t="$th" -v c="$1" '$1 == k && $2 == a && $3 == t { print $c }' "$WORK/raw"; }
			tps=$(median $(col 5))
			no=$(median $(col 8 | awk -v s="$secs" '{ printf "%.1f\n", $1 / s }'))
			wpx=$(median $(awk -v k="$kind" -v a="$am" -v t="$th" '$1 == k && $2 == a && $3 == t { printf "%.0f\n", $9 / $6 }' "$WORK/raw"))
			printf '%-6s %3s %-8s %10s %9s %10s %10s %10s %8s\n' "$kind" "$th" "$am" "$tps" "$no" "$wpx" \
				"$(median $(col 10))" "$(median $(col 11))" "$(median $(col 16))"
			eval "s_${am}_tps=$tps s_${am}_wpx=$wpx"
			# WAL per transaction over all rounds: less sensitive to a slow run, in
			# which the full-page images after the checkpoint weigh more
			eval "s_${am}_agg=$(awk -v k="$kind" -v a="$am" -v t="$th" '$1 == k && $2 == a && $3 == t { w += $9; x += $6 } END { printf "%.0f", x ? w / x : 0 }' "$WORK/raw")"
		done
		echo "$kind $th threads: refdata/heap TPS $(awk -v a="$s_refdata_tps" -v b="$s_heap_tps" 'BEGIN { printf "%.3f", a / b }'), WAL per transaction $(awk -v a="$s_refdata_wpx" -v b="$s_heap_wpx" 'BEGIN { if (b > 0) printf "%.3f", a / b; else printf "n/a" }'), all rounds' WAL per transaction $s_heap_agg vs $s_refdata_agg"
	done
done
