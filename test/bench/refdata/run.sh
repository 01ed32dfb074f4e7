#!/usr/bin/env bash
#
# run.sh: foreign-key-heavy pgbench, heap parent vs refdata parent.
#
# Many clients insert order lines that reference a 10-row parent table
# (workload "fk", fk_insert.sql), or only read the parent by key (workload
# "ro", lookup.sql: refdata must never be slower there).  For each workload
# of WORKLOADS (default "fk ro") and client count (default 8 32 64), ROUNDS rounds (default 3) of one
# pgbench run of DURATION seconds (default 20) per parent access method,
# heap and refdata alternately with the order swapped every round, against
# one throwaway cluster on 127.0.0.1.  Per run: TPS, WAL bytes, MultiXacts
# created, and lock waits (samples of pg_stat_activity every 100 ms:
# backends waiting on a heavyweight lock, or on an LWLock such as the
# MultiXact SLRU ones).  Then the medians per client count and the ratios.
# Results go to stdout; runs/results-run.md next to this script is one such
# run.
#
#   [ROUNDS=3] [WORKLOADS="fk ro"] test/bench/refdata/run.sh [DURATION [CLIENTS...]]
#
# Run as root, it runs the cluster as the test user (test/lib.sh).

set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../../.." && pwd)
BIN=$TOP/build/install/bin
WORK=$TOP/build/bench/refdata
. "$TOP/test/lib.sh"

if [ "$(id -u)" = 0 ]; then
	rm -rf "$WORK"
	as_test_user "$WORK" "$0" "$@"
	exit
fi

DURATION=${1:-20}
shift || true
CLIENTS=${*:-8 32 64}
ROUNDS=${ROUNDS:-3}
WORKLOADS=${WORKLOADS:-fk ro}

port=$(perl -MIO::Socket::INET -e \
	'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0)->sockport')
rm -rf "$WORK"/*
mkdir -p "$WORK"
sockdir=$(mktemp -d /tmp/pgstrata-bench.XXXXXX)
stop()
{
	"$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$sockdir"
}
trap stop EXIT

"$BIN/initdb" -D "$WORK/data" -A trust -U postgres --no-sync >"$WORK/initdb.log"
cat >>"$WORK/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$sockdir'
max_connections = 100
shared_buffers = 256MB
max_wal_size = 4GB
checkpoint_timeout = 30min
synchronous_commit = off
autovacuum = off
CONF
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null

psql() { "$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -U postgres -d postgres "$@"; }

psql -c "CREATE EXTENSION refdata"
for am in heap refdata; do
	psql -c "CREATE TABLE item_$am (id int PRIMARY KEY, name text) USING $am;
		INSERT INTO item_$am SELECT g, 'item ' || g FROM generate_series(1, 10) g;
		CREATE TABLE line_$am (id bigserial PRIMARY KEY,
			item_id int NOT NULL REFERENCES item_$am);"
done

for am in heap refdata; do
	sed "s/@AM@/$am/g" "$HERE/fk_insert.sql" >"$WORK/fk_$am.sql"
	sed "s/@AM@/$am/g" "$HERE/lookup.sql" >"$WORK/ro_$am.sql"
done

# CPU time of the backends that have exited, in clock ticks: the postmaster
# reaps every backend, so its children's user and system time grows by the
# CPU each finished session used.  The run's pgbench sessions end with it;
# the wait sampler's short sessions are counted too, the same for both
# parents.  Background processes (WAL writer, checkpointer) are not.
backend_cpu_ticks()
{
	awk '{print $16 + $17}' "/proc/$(head -1 "$WORK/data/postmaster.pid")/stat"
}

# next MultiXact id, as of a checkpoint taken now
next_mxid() { psql -c "CHECKPOINT" -c "SELECT next_multixact_id FROM pg_control_checkpoint()"; }

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
echo "server: $("$BIN/postgres" --version)"
echo "command: ROUNDS=$ROUNDS test/bench/refdata/run.sh $DURATION $CLIENTS"
echo "settings: shared_buffers=256MB synchronous_commit=off autovacuum=off, pgbench -M prepared -T $DURATION, 5 inserts/transaction, 10 parent rows"
echo
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '%-8s %-6s %-8s %10s %10s %12s %10s %10s %12s %12s\n' clients round parent tps xacts wal_bytes cpu_us/xact multixacts lock_waits lwlock_waits
: >"$WORK/runs"
for wl in $WORKLOADS; do
for c in $CLIENTS; do
	for round in $(seq 1 "$ROUNDS"); do
		order="heap refdata"
		[ $((round % 2)) = 0 ] && order="refdata heap"
		for am in $order; do
			psql -c "TRUNCATE line_$am" -c "VACUUM item_$am"
			m0=$(next_mxid)
			w0=$(psql -c "SELECT pg_current_wal_lsn()")
			# sample waits while pgbench runs
			(
				lock=0 lw=0
				while [ ! -e "$WORK/stop" ]; do
					read -r l w < <(psql -F ' ' -c "SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'),
						count(*) FILTER (WHERE wait_event_type = 'LWLock')
						FROM pg_stat_activity WHERE backend_type = 'client backend'")
					lock=$((lock + l)) lw=$((lw + w))
					sleep 0.1
				done
				echo "$lock $lw" >"$WORK/waits"
			) &
			sampler=$!
			rm -f "$WORK/stop"
			c0=$(backend_cpu_ticks)
			"$BIN/pgbench" -n -h 127.0.0.1 -p "$port" -U postgres -M prepared \
				-c "$c" -j "$c" -T "$DURATION" \
				-f "$WORK/${wl}_$am.sql" postgres >"$WORK/pgbench.out" 2>"$WORK/pgbench.err"
			tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$WORK/pgbench.out")
			xacts=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/pgbench.out")
			touch "$WORK/stop"
			wait $sampler
			read -r lockw lww <"$WORK/waits"
			sleep 1		# let the postmaster reap the run's backends
			c1=$(backend_cpu_ticks)
			cpu=$(awk -v t=$((c1 - c0)) -v x="$xacts" -v hz="$(getconf CLK_TCK)" \
				'BEGIN {printf "%.1f", t / hz * 1e6 / x}')
			w1=$(psql -c "SELECT pg_current_wal_lsn()")
			wal=$(psql -c "SELECT pg_wal_lsn_diff('$w1', '$w0')::bigint")
			m1=$(next_mxid)
			printf '%-8s %-6s %-8s %10s %10s %12s %10s %10s %12s %12s\n' "$wl:$c" "$round" "$am" \
				"$tps" "$xacts" "$wal" "$cpu" $((m1 - m0)) "$lockw" "$lww"
			echo "$wl:$c $am $tps $((wal / xacts)) $((m1 - m0)) $cpu" >>"$WORK/runs"
		done
	done
done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# medians per client count and parent, and refdata / heap
med() { median $(awk -v c="$1" -v a="$2" -v f="$3" '$1 == c && $2 == a {print $f}' "$WORK/runs"); }
echo
echo "| workload:clients | heap TPS | refdata TPS | TPS ratio | heap backend CPU µs/xact | refdata | CPU ratio | heap WAL B/xact | refdata | WAL ratio | heap MultiXacts | refdata |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for c in $(awk '{print $1}' "$WORK/runs" | uniq); do
	ht=$(med "$c" heap 3) rt=$(med "$c" refdata 3)
	hw=$(med "$c" heap 4) rw=$(med "$c" refdata 4)
	awk -v c="$c" -v ht="$ht" -v rt="$rt" -v hw="$hw" -v rw="$rw" \
		-v hc="$(med "$c" heap 6)" -v rc="$(med "$c" refdata 6)" \
		-v hm="$(med "$c" heap 5)" -v rm="$(med "$c" refdata 5)" 'BEGIN {
		printf "| %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %.0f | %.0f | %s | %d | %d |\n",
			c, ht, rt, rt / ht, hc, rc, rc / hc, hw, rw,
			(hw > 0 ? sprintf("%.2f", rw / hw) : "-"), hm, rm }'
done
