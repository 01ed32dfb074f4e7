#!/usr/bin/env bash
#
# hook_ab.sh: the per-statement cost of refdata's hooks, two builds of the
# module against each other, with the simple query protocol (every
# statement parsed, so the post-parse-analysis hook runs every time).
#
# fk_insert.sql (five inserts of child rows referencing a 10-row refdata
# parent) with pgbench -M simple, 8 clients, ROUNDS rounds (default 4) of
# DURATION seconds (default 15) per build, A and B alternately (the order
# swaps every round), the module's shared library swapped in before each
# run (pgbench opens new sessions, which load it).  Per run: TPS and backend
# CPU per transaction (as in run.sh).
#
#   OLD_SO=/path/a/refdata.so NEW_SO=/path/b/refdata.so \
#       test/bench/refdata/hook_ab.sh [DURATION]
#
# Run it as a user who may start the server and write the installed
# refdata.so (it puts NEW_SO back at the end).

set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../../.." && pwd)
BIN=$TOP/build/install/bin
LIB=$("$BIN/pg_config" --pkglibdir)/refdata.so
WORK=${HOOK_AB_WORK:-$TOP/build/bench/refdata-hook-ab}
DURATION=${1:-15}
ROUNDS=${ROUNDS:-4}
: "${OLD_SO:?set OLD_SO and NEW_SO to the two builds of refdata.so}" "${NEW_SO:?}"

rm -rf "$WORK"
mkdir -p "$WORK"
port=$(perl -MIO::Socket::INET -e \
	'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0)->sockport')
"$BIN/initdb" -D "$WORK/data" -A trust -U postgres --no-sync >/dev/null
cat >>"$WORK/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = ''
shared_buffers = 256MB
synchronous_commit = off
autovacuum = off
CONF
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
stop()
{
	"$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true
	cp "$NEW_SO" "$LIB"
}
trap stop EXIT
psql() { "$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -U postgres -d postgres "$@"; }
psql -c "CREATE EXTENSION refdata" \
	-c "CREATE TABLE item_refdata (id int PRIMARY KEY, name text) USING refdata" \
	-c "INSERT INTO item_refdata SELECT g, 'item ' || g FROM generate_series(1, 10) g" \
	-c "CREATE TABLE line_refdata (id bigserial PRIMARY KEY, item_id int NOT NULL REFERENCES item_refdata)"
sed 's/@AM@/refdata/g' "$HERE/fk_insert.sql" >"$WORK/fk.sql"
ticks() { awk '{print $16 + $17}' "/proc/$(head -1 "$WORK/data/postmaster.pid")/stat"; }

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command: ROUNDS=$ROUNDS OLD_SO=$OLD_SO NEW_SO=$NEW_SO test/bench/refdata/hook_ab.sh $DURATION"
echo "round build tps cpu_us/xact"
for r in $(seq 1 "$ROUNDS"); do
	order="old new"
	[ $((r % 2)) = 0 ] && order="new old"
	for v in $order; do
		if [ "$v" = old ]; then cp "$OLD_SO" "$LIB"; else cp "$NEW_SO" "$LIB"; fi
		psql -c "TRUNCATE line_refdata"
		c0=$(ticks)
		out=$("$BIN/pgbench" -n -h 127.0.0.1 -p "$port" -U postgres -M simple \
			-c 8 -j 8 -T "$DURATION" -f "$WORK/fk.sql" postgres 2>&1)
		sleep 1			# let the postmaster reap the run's backends
		c1=$(ticks)
		tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
		x=$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
		echo "$r $v $tps $(awk -v t=$((c1 - c0)) -v x="$x" -v hz="$(getconf CLK_TCK)" \
			'BEGIN {printf "%.1f", t / hz * 1e6 / x}')"
	done
done
