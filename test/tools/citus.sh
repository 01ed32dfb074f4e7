#!/usr/bin/env bash
#
# citus.sh: a Citus coordinator with two workers whose shards live in
# compressed tablespaces: loaded, queried, rebalanced under a write load.
#
# Each worker has a compressed tablespace cts as its default_tablespace
# (Citus does not pass TABLESPACE clauses on to shards, doc/operations.md).
# A distributed table events (32 shards) and a reference table tenants
# are created while only worker 1 is in the cluster, so that all shards
# start on worker 1; worker 2 joins and the rebalancer moves half of them
# while a write load updates rows.  Checks:
#
#   - every shard table and shard index of both workers lies in cts;
#   - queries through the coordinator (count, aggregates, a join with the
#     reference table) give the results of a plain local copy of the same
#     rows on the coordinator, row for row (md5 of the ordered rows), before
#     and after the rebalance;
#   - the write load's updates all arrive: sum(v) grew by exactly the
#     number of transactions the load committed;
#   - amcheck (verify_heapam, bt_index_check with heapallindexed) on every
#     shard of both workers;
#   - each shard's compression ratio (pgstrata_compression) and each
#     worker's tablespace size (apparent and allocated) are printed.
#
# Environment: TOP, TOOLS_DIR, PG_BIN, PORT_BASE, CITUS_ROWS.

set -euo pipefail
. "$TOP/test/tools/common.sh"

PORT=$((${PORT_BASE:-55430} + 10))
ROWS=${CITUS_ROWS:-1000000}
W=$TOOLS_DIR/work/citus
NODES="coord w1 w2"

# wq PORT SQL: a query on a worker that sees the shards (Citus hides them
# from pg_class for other applications)
wq() { psql_at "$1" postgres "SET citus.override_table_visibility = off; $2"; }

port_of() { case $1 in coord) echo "$PORT" ;; w1) echo $((PORT + 1)) ;; w2) echo $((PORT + 2)) ;; esac; }

LOAD_PID=
cleanup()
{
	[ -n "$LOAD_PID" ] && { touch "$W/stop"; wait "$LOAD_PID" 2>/dev/null; } || true
	for n in $NODES; do [ -d "$W/$n" ] && stop_cluster "$W/$n" 2>/dev/null || true; done
}
trap cleanup EXIT

for n in $NODES; do [ -d "$W/$n" ] && stop_cluster "$W/$n" 2>/dev/null || true; done
rm -rf "$W"
mkdir -p "$W"
chown "$TEST_USER:" "$W" 2>/dev/null || true

say "citus: coordinator on port $PORT, workers on $((PORT + 1)) and $((PORT + 2)), $ROWS rows"
for n in $NODES; do
	init_cluster "$W/$n" "$(port_of "$n")" \
		"shared_preload_libraries = 'citus'" \
		"listen_addresses = 'localhost'" \
		"wal_level = logical" \
		"max_connections = 100"
	start_cluster "$W/$n"
done
psql_at "$PORT" postgres "CREATE EXTENSION citus"
psql_at "$PORT" postgres "SELECT extversion FROM pg_extension WHERE extname = 'citus'" | sed 's/^/CITUS version /'
for n in w1 w2; do
	p=$(port_of "$n")
	as_user mkdir -p "$W/$n-cts"
	psql_run "$p" postgres "CREATE EXTENSION citus; CREATE EXTENSION amcheck; CREATE EXTENSION pgstrata"
	psql_at "$p" postgres "CREATE TABLESPACE cts LOCATION '$W/$n-cts' WITH (compression = 'zstd')"
	psql_at "$p" postgres "ALTER SYSTEM SET default_tablespace = 'cts'"
	psql_at "$p" postgres "SELECT pg_reload_conf()" >/dev/null
done
psql_at "$PORT" postgres "SELECT citus_set_coordinator_host('localhost', $PORT)" >/dev/null
psql_at "$PORT" postgres "SELECT citus_add_node('localhost', $((PORT + 1)))" >/dev/null

# The tables, while worker 1 is alone: all shards start there.
psql_run "$PORT" postgres "
	CREATE TABLE tenants (tenant_id int PRIMARY KEY, name text NOT NULL);
	SELECT create_reference_table('tenants');
	CREATE TABLE events (tenant_id int NOT NULL, id bigint NOT NULL, kind int NOT NULL,
		v bigint NOT NULL DEFAULT 0, payload text, PRIMARY KEY (tenant_id, id));
	SET citus.shard_count = 32;
	SELECT create_distributed_table('events', 'tenant_id');
	CREATE INDEX events_kind ON events (kind);
	-- the plain local copy on the coordinator to compare with
	CREATE TABLE events_local (LIKE events INCLUDING ALL);
	CREATE TABLE tenants_local (LIKE tenants INCLUDING ALL);" >/dev/null
t0=$(now_s)
psql_run "$PORT" postgres "
	INSERT INTO tenants_local SELECT t, 'tenant ' || t FROM generate_series(1, 1000) t;
	INSERT INTO events_local (tenant_id, id, kind, payload)
		SELECT g % 1000 + 1, g, g % 17,
		       'event ' || g || ' ' || repeat(md5((g % 97)::text), 1 + g % 4)
		FROM generate_series(1, $ROWS) g;
	INSERT INTO tenants SELECT * FROM tenants_local;
	INSERT INTO events SELECT * FROM events_local;" >/dev/null
echo "TIME citus-load $(($(now_s) - t0)) s"
for n in w1 w2; do psql_at "$(port_of "$n")" postgres "CHECKPOINT"; done

# compare TAG: the distributed tables' query results against the local copy
QUERIES=(
	"SELECT count(*), sum(v), sum(length(payload)) FROM %E"
	"SELECT tenant_id, count(*), sum(kind), max(id) FROM %E GROUP BY tenant_id ORDER BY tenant_id"
	"SELECT t.name, e.kind, count(*) FROM %E e JOIN %T t USING (tenant_id) WHERE e.kind < 5 GROUP BY 1, 2 ORDER BY 1, 2"
	"SELECT md5(string_agg(format('%%s|%%s|%%s|%%s', tenant_id, id, kind, payload), ',' ORDER BY tenant_id, id)) FROM %E"
)
compare()
{
	local q dq lq d l i=0
	for q in "${QUERIES[@]}"; do
		i=$((i + 1))
		dq=${q//%E/events}; dq=${dq//%T/tenants}; dq=${dq//%%/%}
		lq=${q//%E/events_local}; lq=${lq//%T/tenants_local}; lq=${lq//%%/%}
		d=$(psql_at "$PORT" postgres "$dq" | md5sum)
		l=$(psql_at "$PORT" postgres "$lq" | md5sum)
		[ "$d" = "$l" ] || fail "citus $1: query $i differs between the distributed and the local tables: $dq"
	done
	echo "RESULT citus $1: $i queries give the local copy's results"
}

# placement NODE: shards of events on the node, and the tablespaces of all
# shard relations (tables and indexes) there
placement()
{
	local p cts
	p=$(port_of "$1")
	cts=$(psql_at "$p" postgres "SELECT oid FROM pg_tablespace WHERE spcname = 'cts'")
	wq "$p" "
		SELECT '$1 shards=' || count(*) FILTER (WHERE c.relkind = 'r' AND c.relname ~ '^events_[0-9]+\$')
		  || ' reference=' || count(*) FILTER (WHERE c.relkind = 'r' AND c.relname ~ '^tenants_[0-9]+\$')
		  || ' relations=' || count(*)
		  || ' in_cts=' || count(*) FILTER (WHERE c.reltablespace = $cts)
		FROM pg_class c
		WHERE c.relname ~ '^(events|tenants|events_kind|events_pkey|tenants_pkey)_[0-9]+\$'
		  AND c.relkind IN ('r', 'i')"
}
check_placement()
{
	local line rel in_cts
	line=$(placement "$1")
	echo "PLACEMENT $line"
	rel=$(sed 's/.*relations=\([0-9]*\).*/\1/' <<<"$line")
	in_cts=$(sed 's/.*in_cts=\([0-9]*\).*/\1/' <<<"$line")
	[ "$rel" = "$in_cts" ] || fail "citus: on $1, $((rel - in_cts)) shard relations are not in the compressed tablespace"
}

# amcheck NODE: every shard table and B-tree of the node
amcheck_node()
{
	local p r
	p=$(port_of "$1")
	r=$(wq "$p" "
		SELECT 'heap-problems=' ||
		  (SELECT count(*) FROM pg_class c, LATERAL verify_heapam(c.oid) v
		   WHERE c.relkind = 'r' AND c.relname ~ '^(events|tenants)_[0-9]+\$')
		  || ' btrees=' ||
		  (SELECT count(*) FROM (SELECT bt_index_check(c.oid, true) FROM pg_class c
		   WHERE c.relkind = 'i' AND c.relname ~ '_[0-9]+\$' AND c.relnamespace = 'public'::regnamespace) s)")
	echo "RESULT citus amcheck $1: $r"
	case "$r" in "heap-problems=0 "*) ;; *) fail "citus: amcheck found problems on $1" ;; esac
}

ratios()
{
	local n p
	for n in w1 w2; do
		p=$(port_of "$n")
		psql_at "$p" postgres "CHECKPOINT"
		wq "$p" "
			SELECT 'RATIO $n ' || relation::text || ' ' || fork || ' ' || logical_bytes || ' ' || physical_bytes || ' ' || round(ratio::numeric, 2)
			FROM pgstrata_compression WHERE fork = 'main' ORDER BY relation::text"
		wq "$p" "
			SELECT 'RATIO-TOTAL $n $1 shards+indexes: logical ' || sum(logical_bytes) || ' physical ' || sum(physical_bytes)
			  || ' ratio ' || round(sum(logical_bytes)::numeric / nullif(sum(physical_bytes), 0), 2)
			FROM pgstrata_compression"
		read -r a k < <(sizes "$W/$n-cts"); echo "SIZE citus-$n-cts-$1 $a $k"
	done
}

compare loaded
check_placement w1
[ "$(placement w1 | sed 's/.*shards=\([0-9]*\).*/\1/')" = 32 ] || fail "citus: worker 1 does not hold the 32 shards of events"
amcheck_node w1
ratios before-rebalance

# worker 2 joins; the rebalancer moves shards to it while a load updates
# rows: each transaction adds 1 to v of one row, so sum(v) must grow by
# exactly the number of transactions committed
psql_at "$PORT" postgres "SELECT citus_add_node('localhost', $((PORT + 2)))" >/dev/null
cat >"$W/load.sql" <<EOF
\\set id random(1, $ROWS)
UPDATE events SET v = v + 1 WHERE tenant_id = :id % 1000 + 1 AND id = :id;
EOF
chown "$TEST_USER:" "$W/load.sql" 2>/dev/null || true
sum_before=$(psql_at "$PORT" postgres "SELECT sum(v) FROM events")
# the load: batches of 200 transactions (2 clients, 100 each) until the
# rebalance is over; each batch's count of committed transactions is in
# the log
rm -f "$W/stop"
(
	while [ ! -e "$W/stop" ]; do
		as_user "$PG_BIN/pgbench" -n -h localhost -p "$PORT" -U postgres -c 2 -j 2 -R 200 -t 100 \
			-f "$W/load.sql" postgres >>"$W/load.log" 2>&1 || echo "BATCH FAILED" >>"$W/load.log"
	done
) &
LOAD_PID=$!
sleep 2
t0=$(now_s)
psql_at "$PORT" postgres "SELECT citus_rebalance_start(shard_transfer_mode := 'auto')" >/dev/null
for _ in $(seq 1 1200); do
	st=$(psql_at "$PORT" postgres "SELECT state FROM citus_rebalance_status() ORDER BY job_id DESC LIMIT 1")
	case "$st" in finished|failed|cancelled) break ;; esac
	sleep 1
done
echo "TIME citus-rebalance $(($(now_s) - t0)) s (state $st)"
touch "$W/stop"
wait "$LOAD_PID" || true
LOAD_PID=
[ "$st" = finished ] || { psql_at "$PORT" postgres "SELECT * FROM citus_rebalance_status()"; fail "citus: the rebalance ended $st"; }
if grep -q "BATCH FAILED" "$W/load.log"; then grep -iE "error|fail" "$W/load.log" | head; fail "citus: the load failed during the rebalance"; fi
committed=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$W/load.log" | awk '{s += $1} END {print s + 0}')
sum_after=$(psql_at "$PORT" postgres "SELECT sum(v) FROM events")
echo "LOAD citus: $committed transactions committed during the rebalance; sum(v) $sum_before -> $sum_after"
[ "$committed" -gt 0 ] || fail "citus: the load committed nothing during the rebalance"
[ $((sum_after - sum_before)) = "$committed" ] || fail "citus: sum(v) grew by $((sum_after - sum_before)), the load committed $committed"

# apply the same updates to the local copy: v is the only column the load
# changed, so copy v across by key and compare every other column too
psql_run "$PORT" postgres "
	CREATE TEMP TABLE v_now AS SELECT tenant_id, id, v FROM events WHERE v <> 0;
	UPDATE events_local l SET v = n.v FROM v_now n WHERE l.tenant_id = n.tenant_id AND l.id = n.id;" >/dev/null
# the moved shards' old placements are dropped after a delay; drop them now
psql_at "$PORT" postgres "CALL citus_cleanup_orphaned_resources()" >/dev/null
compare rebalanced
for n in w1 w2; do check_placement "$n"; done
w2shards=$(placement w2 | sed 's/.*shards=\([0-9]*\).*/\1/')
[ "$w2shards" -gt 0 ] || fail "citus: the rebalancer moved no shard to worker 2"
psql_at "$PORT" postgres "SELECT 'SHARDS ' || nodeport || ' ' || count(*) FROM citus_shards WHERE table_name = 'events'::regclass GROUP BY nodeport ORDER BY nodeport"
for n in w1 w2; do amcheck_node "$n"; done
ratios after-rebalance

# negative control: a row changed behind Citus's back on a worker's shard
# is seen by the comparison
shard=$(wq "$((PORT + 2))" "SELECT relname FROM pg_class WHERE relname ~ '^events_[0-9]+\$' AND relkind = 'r' ORDER BY relname LIMIT 1")
wq "$((PORT + 2))" "UPDATE $shard SET payload = payload || 'x' WHERE ctid = (SELECT min(ctid) FROM $shard)" >/dev/null
if (compare altered) 2>/dev/null; then fail "negative control: a row altered on a shard went unnoticed"; fi
echo "RESULT negative-control: a row altered on shard $shard of worker 2 is seen by the comparison"

echo "RESULT citus: passed"
