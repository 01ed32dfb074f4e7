#!/usr/bin/env bash
#
# neworder.sh: a TPC-C New-Order workload with foreign keys, item as heap
# vs item as refdata, from nothing but what the project builds (psql and
# pgbench): the repeatable counterpart of tpcc.sh, which needs sysbench and
# Lua scripts from outside the package registries.
#
# One throwaway cluster on 127.0.0.1 with two databases holding the same
# data (neworder_schema.sql, loaded once; the second database is a copy):
# in neworder_heap the item table is heap, in neworder_refdata it is
# refdata.  The workload is neworder.sql: every transaction is a New-Order
# of ten lines, each line checking the foreign key order_line -> item.  For
# each client count, ROUNDS rounds of one pgbench run of DURATION seconds
# per database, heap and refdata alternately (the order swaps every round),
# each after a CHECKPOINT.  Per run: TPS, transactions, failed transactions,
# WAL bytes per transaction, backend CPU per transaction, MultiXacts
# created, row-lock WAL records on item (pg_walinspect) and lock waits longer
# than deadlock_timeout (log_lock_waits; those on item apart).  Then the
# medians and refdata / heap ratios.  Results go to stdout.
#
#   [ROUNDS=3] [SCALE=2] test/bench/refdata/neworder.sh [DURATION [CLIENTS...]]
#
# defaults: DURATION=30, CLIENTS="8 32".  Run as root, it runs the cluster
# as the test user (test/lib.sh).

set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../../.." && pwd)
BIN=$TOP/build/install/bin
WORK=$TOP/build/bench/refdata-neworder
. "$TOP/test/lib.sh"

if [ "$(id -u)" = 0 ]; then
	rm -rf "$WORK"
	as_test_user "$WORK" env ROUNDS="${ROUNDS:-}" SCALE="${SCALE:-}" "$0" "$@"
	exit
fi

DURATION=${1:-30}
shift || true
CLIENTS=${*:-8 32}
ROUNDS=${ROUNDS:-3}
SCALE=${SCALE:-2}

rm -rf "$WORK"/*
mkdir -p "$WORK"
oltp_bench_cluster "$BIN" "$WORK"

psql() { "$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres "$@"; }

t0=$(date +%s)
psql -d postgres -c "CREATE EXTENSION pg_walinspect" -c "CREATE DATABASE neworder_heap"
psql -d neworder_heap -v scale="$SCALE" -f "$HERE/neworder_schema.sql" >/dev/null
psql -d neworder_heap -c "VACUUM (FREEZE, ANALYZE)"
psql -d postgres -c "CHECKPOINT" \
	-c "CREATE DATABASE neworder_refdata TEMPLATE neworder_heap STRATEGY FILE_COPY"
psql -d neworder_refdata -c "CREATE EXTENSION refdata" \
	-c "ALTER TABLE item SET ACCESS METHOD refdata"
# rewrite heap's item too, so that both tables are fresh copies
psql -d neworder_heap -c "VACUUM FULL item"
for db in neworder_heap neworder_refdata; do
	psql -d "$db" -c "VACUUM (FREEZE, ANALYZE) item"
done
t1=$(date +%s)

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
echo "server: $("$BIN/postgres" --version)"
echo "command: ROUNDS=$ROUNDS SCALE=$SCALE test/bench/refdata/neworder.sh $DURATION $CLIENTS"
echo "settings: shared_buffers=1GB synchronous_commit=off autovacuum=off, checkpoint before each run, deadlock_timeout=20ms log_lock_waits=on; pgbench -M prepared -T $DURATION, $SCALE warehouses, 10 lines per New-Order"
echo "load: $((t1 - t0)) s; item: $(psql -d neworder_heap -c "SELECT pg_relation_size('item') / 8192") pages"
echo "access methods: $(for db in neworder_heap neworder_refdata; do psql -d "$db" -c "SELECT '$db.item=' || amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname = 'item'"; done | tr '\n' ' ')"
echo
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# CPU time of the backends that have exited, in clock ticks (see run.sh).
backend_cpu_ticks()
{
	awk '{print $16 + $17}' "/proc/$(head -1 "$WORK/data/postmaster.pid")/stat"
}

# next MultiXact id, as of a checkpoint taken now
next_mxid() { psql -d postgres -c "CHECKPOINT" -c "SELECT next_multixact_id FROM pg_control_checkpoint()"; }

# lock_waits FROM ITEM_OID: "waits waits_on_item" logged since byte FROM of
# the log.  A wait is on item when the lock is on item (relation, tuple or
# extension lock: "... relation ITEM_OID of database ...") or when its
# context names item (a row of item waited for through its transaction);
# the statement text does not count (New-Order's names item in every line).
lock_waits()
{
	tail -c +"$(($1 + 1))" "$WORK/server.log" | awk -v oid="$2" '
		/ LOG:  process [0-9]+ still waiting for / {
			n++; cur = 1
			if ($0 ~ ("relation " oid " of database")) { i++; cur = 0 }
			next }
		/ CONTEXT:  / { if (cur && /relation "item"/) i++; cur = 0; next }
		/ (DETAIL|STATEMENT):  / || /^\t/ { next }
		{ cur = 0 }
		END { print n + 0, i + 0 }'
}

# one_run AM CLIENTS ROUND: one pgbench run, one raw line
one_run()
{
	local am=$1 c=$2 r=$3 db=neworder_$1
	local dboid fn ioid m0 m1 w0 w1 log0 c0 c1 out tps xacts failed wal cpu recs waits
	dboid=$(psql -d postgres -c "SELECT oid FROM pg_database WHERE datname = '$db'")
	ioid=$(psql -d "$db" -c "SELECT 'item'::regclass::oid")
	fn=$(psql -d "$db" -c "SELECT pg_relation_filenode('item')")
	m0=$(next_mxid)
	log0=$(stat -c %s "$WORK/server.log")
	w0=$(psql -d postgres -c "SELECT pg_current_wal_insert_lsn()")
	c0=$(backend_cpu_ticks)
	out=$("$BIN/pgbench" -n -h 127.0.0.1 -p "$port" -U postgres -M prepared \
		-c "$c" -j "$c" -T "$DURATION" -D scale="$SCALE" \
		-f "$HERE/neworder.sql" "$db" 2>&1) || { echo "$out" >&2; return 1; }
	echo "$out" >"$WORK/run-$am-$c-$r.log"
	tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
	xacts=$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
	failed=$(echo "$out" | sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p')
	sleep 1		# let the postmaster reap the run's backends
	c1=$(backend_cpu_ticks)
	cpu=$(awk -v t=$((c1 - c0)) -v x="$xacts" -v hz="$(getconf CLK_TCK)" \
		'BEGIN {printf "%.1f", t / hz * 1e6 / x}')
	w1=$(psql -d postgres -c "SELECT pg_current_wal_insert_lsn()")
	wal=$(psql -d postgres -c "SELECT pg_wal_lsn_diff('$w1', '$w0')::bigint")
	# the checkpoint also flushes the run's WAL for pg_walinspect
	m1=$(next_mxid)
	# row-lock records on item, on any table; all records touching item
	recs=$(psql -d postgres -F ' ' -c "SELECT
			count(*) FILTER (WHERE is_lock AND on_item),
			count(*) FILTER (WHERE is_lock),
			count(*) FILTER (WHERE on_item)
		FROM (SELECT record_type IN ('LOCK', 'LOCK_UPDATED') AND resource_manager IN ('Heap', 'Heap2') AS is_lock,
				reldatabase = $dboid AND relfilenode = $fn AS on_item
			FROM pg_get_wal_block_info('$w0', '$w1', false)) b")
	waits=$(lock_waits "$log0" "$ioid")
	printf '%-8s %-6s %-8s %10s %8s %6s %12s %11s %10s %10s %10s %10s %6s %6s\n' \
		"$c" "$r" "$am" "$tps" "$xacts" "${failed:-0}" "$wal" "$cpu" $((m1 - m0)) $recs $waits
	echo "$c $am $tps $((wal / xacts)) $((m1 - m0)) $cpu $recs" >>"$WORK/runs"
}

printf '%-8s %-6s %-8s %10s %8s %6s %12s %11s %10s %10s %10s %10s %6s %6s\n' \
	clients round item tps xacts failed wal_bytes cpu_us/xact multixacts \
	lock_item lock_all recs_item waits wait_i
: >"$WORK/runs"
for c in $CLIENTS; do
	for r in $(seq 1 "$ROUNDS"); do
		order="heap refdata"
		[ $((r % 2)) = 0 ] && order="refdata heap"
		for am in $order; do
			one_run "$am" "$c" "$r"
		done
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# medians per client count and item access method, and refdata / heap
med() { median $(awk -v c="$1" -v a="$2" -v f="$3" '$1 == c && $2 == a {print $f}' "$WORK/runs"); }
echo
echo "| clients | heap TPS | refdata TPS | TPS ratio | heap backend CPU µs/xact | refdata | CPU ratio | heap WAL B/xact | refdata | WAL ratio | heap MultiXacts | refdata | heap lock records on item | refdata |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for c in $CLIENTS; do
	awk -v c="$c" -v ht="$(med "$c" heap 3)" -v rt="$(med "$c" refdata 3)" \
		-v hw="$(med "$c" heap 4)" -v rw="$(med "$c" refdata 4)" \
		-v hc="$(med "$c" heap 6)" -v rc="$(med "$c" refdata 6)" \
		-v hm="$(med "$c" heap 5)" -v rm="$(med "$c" refdata 5)" \
		-v hl="$(med "$c" heap 7)" -v rl="$(med "$c" refdata 7)" 'BEGIN {
		printf "| %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %d | %d | %d | %d |\n",
			c, ht, rt, rt / ht, hc, rc, rc / hc, hw, rw, rw / hw, hm, rm, hl, rl }'
done
