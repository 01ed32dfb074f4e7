#!/usr/bin/env bash
#
# run-demo.sh: start a throwaway cluster under build/demo on a free local
# port, show what pgstrata does on real data (demo.sql), stop the cluster.
#
# Called by `make demo` after the build.

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$TOP/build/install/bin
DEMO=$TOP/build/demo
. "$TOP/test/lib.sh"

# PostgreSQL refuses to run as root: run the demo as the test user instead.
if [ "$(id -u)" = 0 ]; then
	rm -rf "$DEMO"
	as_test_user "$DEMO" "$0"
	exit
fi

# A free TCP port on the loopback interface, as the kernel hands one out.
port=$(perl -MIO::Socket::INET -e \
	'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0)->sockport')

rm -rf "$DEMO"/*
mkdir -p "$DEMO/tablespace"
sockdir=$(mktemp -d /tmp/pgstrata-demo.XXXXXX)

stop()
{
	"$BIN/pg_ctl" -D "$DEMO/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$sockdir"
}
trap stop EXIT

"$BIN/initdb" -D "$DEMO/data" -A trust -U postgres --no-sync >"$DEMO/initdb.log"
"$BIN/pg_ctl" -D "$DEMO/data" -l "$DEMO/server.log" -w \
	-o "-p $port -k $sockdir -c listen_addresses=127.0.0.1" start >/dev/null
echo "--- demo cluster in build/demo/data, listening on 127.0.0.1:$port"

# A second session, for the parts of the demo that need two at once.
export PSQL_AGAIN="$BIN/psql -X -q -h 127.0.0.1 -p $port -U postgres -d postgres"

"$BIN/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres \
	-v ON_ERROR_STOP=1 -v sgml="$TOP/build/postgresql/doc/src/sgml" \
	-v tsdir="$DEMO/tablespace" \
	--echo-queries -f "$TOP/test/demo/demo.sql"

echo "--- demo cluster stopped"
