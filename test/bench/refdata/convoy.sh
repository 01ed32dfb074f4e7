#!/usr/bin/env bash
#
# convoy.sh: how long a new foreign-key check waits behind a queued writer
# of its parent table, heap parent vs refdata parent.
#
# A refdata writer waits for every open foreign-key checker of the table
# (ExclusiveLock against their RowShareLock), and the lock queue is fair:
# a check that arrives while the writer waits queues behind it.  Each case
# below holds the table for HOLD seconds (default 3), queues a one-row
# UPDATE of the parent 0.5 s later, starts a new foreign-key check (an
# INSERT into the child) 0.1 s after that (0.3 s on the subscriber), and
# reports how long that INSERT took, for a heap and a refdata parent:
#
#   long-xact      an open transaction that checked a foreign key
#   long-xact-lt   the same, the writer with lock_timeout = 200ms
#   vacuum         VACUUM (FREEZE, DISABLE_PAGE_SKIPPING) of the parent (2
#                  million rows), throttled as autovacuum is
#                  (vacuum_cost_delay = 2ms) and with a small cost limit so
#                  that it lasts about 2 s, standing in for an
#                  anti-wraparound autovacuum, which nothing cancels: its
#                  ShareUpdateExclusiveLock blocks the writer, not the
#                  checks
#   vacuum-lt      the same, the writer with lock_timeout = 200ms
#   subscriber     the writer is a logical replication apply worker on a
#                  subscriber, behind a local open transaction that checked
#                  a foreign key; the UPDATE is made on the publisher
#   subscriber-lt  the same, with lock_timeout = 200ms set for the
#                  subscription's owner (the worker gives up and retries)
#
#   [HOLD=3] test/bench/refdata/convoy.sh
#
# Results go to stdout.  Run as root, it runs the clusters as the test user.

set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../../.." && pwd)
BIN=$TOP/build/install/bin
WORK=$TOP/build/bench/refdata-convoy
. "$TOP/test/lib.sh"

if [ "$(id -u)" = 0 ]; then
	rm -rf "$WORK"
	as_test_user "$WORK" env HOLD="${HOLD:-}" "$0" "$@"
	exit
fi

HOLD=${HOLD:-3}
rm -rf "$WORK"/*
mkdir -p "$WORK"

# start_cluster NAME [SETTING...]: initdb and start a cluster, print its port
start_cluster()
{
	local name=$1 p
	shift
	p=$(free_port)
	"$BIN/initdb" -D "$WORK/$name" -A trust -U postgres --no-sync >"$WORK/initdb-$name.log"
	{
		echo "listen_addresses = '127.0.0.1'"
		echo "port = $p"
		echo "unix_socket_directories = ''"
		echo "autovacuum = off"
		echo "wal_retrieve_retry_interval = 100ms"
		printf '%s\n' "$@"
	} >>"$WORK/$name/postgresql.conf"
	"$BIN/pg_ctl" -D "$WORK/$name" -l "$WORK/$name.log" -w start >/dev/null
	echo "$p"
}
stop()
{
	for d in pub main; do
		"$BIN/pg_ctl" -D "$WORK/$d" -m fast -w stop >/dev/null 2>&1 || true
	done
}
trap stop EXIT

port=$(start_cluster main "wal_level = logical")
pubport=$(start_cluster pub "wal_level = logical")
sql() { "$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres "$@"; }
pubsql() { "$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pubport" -U postgres -d postgres "$@"; }

# Parents: small ones for the transactions, large ones (2 million rows)
# for VACUUM; each with a child.
sql -c "CREATE EXTENSION refdata"
for am in heap refdata; do
	sql -c "CREATE TABLE p_$am (id int PRIMARY KEY, val text) USING $am;
		INSERT INTO p_$am SELECT g, 'v' FROM generate_series(1, 2000000) g;
		CREATE TABLE c_$am (pid int REFERENCES p_$am);" -c "VACUUM (ANALYZE) p_$am"
done
# The subscriber side: the same tables, replicated from pub.
pubsql -c "CREATE TABLE item_heap (id int PRIMARY KEY, val text);
	CREATE TABLE item_refdata (id int PRIMARY KEY, val text);
	INSERT INTO item_heap SELECT g, 'v' FROM generate_series(1, 100) g;
	INSERT INTO item_refdata SELECT g, 'v' FROM generate_series(1, 100) g;
	CREATE PUBLICATION items FOR TABLE item_heap, item_refdata"
sql -c "CREATE TABLE item_heap (id int PRIMARY KEY, val text) USING heap;
	CREATE TABLE item_refdata (id int PRIMARY KEY, val text) USING refdata;
	CREATE TABLE line_heap (item_id int REFERENCES item_heap);
	CREATE TABLE line_refdata (item_id int REFERENCES item_refdata);"
sql -c "CREATE SUBSCRIPTION items CONNECTION 'host=127.0.0.1 port=$pubport user=postgres dbname=postgres' PUBLICATION items"
until [ "$(sql -c "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate <> 'r'")" = 0 ]; do sleep 0.2; done

# the throttled VACUUM of the "vacuum" cases
VACUUM_SET="SET vacuum_cost_delay = '2ms'; SET vacuum_cost_limit = 10; SET vacuum_cost_page_miss = 1; SET vacuum_cost_page_dirty = 1"
VACUUM="VACUUM (FREEZE, DISABLE_PAGE_SKIPPING)"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# one_case NAME AM: the holder, the queued writer, the timed check; prints
# the check's time and the writer's (for the subscriber: until its change
# is visible there)
one_case()
{
	local name=$1 am=$2 lt=0 holder writer t0 t1 w0 w1
	case $name in *-lt) lt=200ms ;; esac
	case $name in
	long-xact*)
		sql -c "SET lock_timeout = 0; BEGIN; INSERT INTO c_$am VALUES (1); SELECT pg_sleep($HOLD); COMMIT" >/dev/null &
		holder=$! ;;
	vacuum*)
		sql -c "$VACUUM_SET" -c "$VACUUM p_$am" &
		holder=$! ;;
	subscriber*)
		# the apply worker reads the role's settings when it starts
		sql -c "ALTER ROLE postgres SET lock_timeout = '$lt'"
		sql -c "ALTER SUBSCRIPTION items DISABLE"
		until [ "$(sql -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'logical replication%worker'")" = 0 ]; do sleep 0.1; done
		sql -c "ALTER SUBSCRIPTION items ENABLE"
		sleep 0.5
		sql -c "SET lock_timeout = 0; BEGIN; INSERT INTO line_$am VALUES (1); SELECT pg_sleep($HOLD); COMMIT" >/dev/null &
		holder=$! ;;
	esac
	sleep 0.5
	w0=$(now)
	case $name in
	subscriber*)
		# the writer's time: until the change is visible on the subscriber
		pubsql -c "UPDATE item_$am SET val = '$name' WHERE id = 2"
		(until [ "$(sql -c "SELECT val FROM item_$am WHERE id = 2")" = "$name" ]; do sleep 0.05; done) &
		writer=$! ;;
	*)
		(sql -c "SET lock_timeout = '$lt'; UPDATE p_$am SET val = 'w' WHERE id = 2" 2>/dev/null || true) &
		writer=$! ;;
	esac
	# the check arrives while the writer waits (the apply worker needs a
	# little longer to receive the change)
	case $name in subscriber*) sleep 0.3 ;; *) sleep 0.1 ;; esac
	t0=$(now)
	case $name in
	subscriber*) sql -c "SET lock_timeout = 0; INSERT INTO line_$am VALUES (3)" ;;
	*) sql -c "INSERT INTO c_$am VALUES (3)" ;;
	esac
	t1=$(now)
	wait "$writer"
	w1=$(now)
	wait "$holder"
	sql -c "ALTER ROLE postgres RESET lock_timeout" >/dev/null
	printf '%-14s %-8s %14s %12s\n' "$name" "$am" "$(elapsed "$t0" "$t1")" "$(elapsed "$w0" "$w1")"
}

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "server: $("$BIN/postgres" --version)"
echo "command: HOLD=$HOLD test/bench/refdata/convoy.sh"
t0=$(now); sql -c "$VACUUM_SET" -c "$VACUUM p_heap"; t1=$(now)
echo "vacuum: $VACUUM_SET; $VACUUM of the 2-million-row parent, alone: $(elapsed "$t0" "$t1") s"
echo
printf '%-14s %-8s %14s %12s\n' case parent check_wait_s writer_s
for c in long-xact long-xact-lt vacuum vacuum-lt subscriber subscriber-lt; do
	for am in heap refdata; do
		one_case "$c" "$am"
	done
done
