#!/usr/bin/env bash
#
# run-demo.sh: start a throwaway cluster under build/demo on a free local
# port, show what pgstrata does on real data (demo.sql), stop the cluster.
#
# Called by `make demo` after the build.  The transcript goes to stdout
# and, when the demo succeeds, to doc/demo.md (doc/demo-18.md for
# `make PG=18 demo`), with the repository's path left out so that the
# paths there are relative to the repository.

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/test/lib.sh"
BIN=$BUILD_ROOT/install/bin
DEMO=$BUILD_ROOT/demo
case "${PGSTRATA_PG:-17}" in
	17) TRANSCRIPT=$TOP/doc/demo.md pg_arg= ;;
	*) TRANSCRIPT=$TOP/doc/demo-$PGSTRATA_PG.md pg_arg=" PG=$PGSTRATA_PG" ;;
esac

# The outer run: run the demo itself (below, PGSTRATA_DEMO_RUN=1), show its
# output, and keep it in doc/demo.md.  PostgreSQL refuses to run as root,
# so as root the demo runs as the test user, and only this process, still
# root, writes into the checkout.
if [ -z "${PGSTRATA_DEMO_RUN:-}" ]; then
	out=$(mktemp)
	trap 'rm -f "$out"' EXIT
	rc=0
	if [ "$(id -u)" = 0 ]; then
		rm -rf "$DEMO"
		as_test_user "$DEMO" env PGSTRATA_DEMO_RUN=1 "$0" | tee "$out" || rc=$?
	else
		PGSTRATA_DEMO_RUN=1 "$0" | tee "$out" || rc=$?
	fi
	[ "$rc" -eq 0 ] || exit "$rc"
	# Paths relative to the repository; a path in a column of a psql table
	# keeps its width, so that the table stays aligned.
	{
		echo "# What \`make$pg_arg demo\` shows"
		echo
		echo "Output of \`make$pg_arg demo\` (test/demo/run-demo.sh) on $(date -u '+%Y-%m-%d at %H:%M UTC'),"
		echo "without the build step's lines. \`make$pg_arg demo\` writes this file again."
		echo
		echo '```'
		TOP="$TOP" perl -pe 'BEGIN { $t = "$ENV{TOP}/"; $n = length $t }
			s{\Q$t\E(\S*?)(?= +\|(?: |$))}{$1 . (" " x $n)}ge;
			s{\Q$t\E}{}g' "$out"
		echo '```'
	} >"$TRANSCRIPT"
	exit 0
fi

port=$(free_port)

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
# compressed tablespaces need WAL-logged hint bits
"$BIN/pg_ctl" -D "$DEMO/data" -l "$DEMO/server.log" -w \
	-o "-p $port -k $sockdir -c listen_addresses=127.0.0.1 -c wal_log_hints=on" \
	start >/dev/null
echo "--- demo cluster in ${DEMO#$TOP/}/data, listening on 127.0.0.1:$port"

# A second session, for the parts of the demo that need two at once.
export PSQL_AGAIN="$BIN/psql -X -q -h 127.0.0.1 -p $port -U postgres -d postgres"

psql()
{
	"$BIN/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1 "$@"
}

psql -d postgres -v sgml="$BUILD_ROOT/postgresql/doc/src/sgml" \
	-v tsdir="$DEMO/tablespace" --echo-queries -f "$TOP/test/demo/demo.sql"

# The same pgbench data (scale 10) into a plain and a compressed database.
for db in plain compressed; do
	echo "--- pgbench -i -s 10 -d $db"
	"$BIN/pgbench" -i -q -s 10 -h 127.0.0.1 -p "$port" -U postgres "$db" 2>&1 |
		grep -E '^done' || true
done
psql -d postgres --echo-queries -f "$TOP/test/demo/demo_compare.sql" \
	-v plain="host=127.0.0.1 port=$port user=postgres dbname=plain" \
	-v compressed="host=127.0.0.1 port=$port user=postgres dbname=compressed"

echo "--- demo cluster stopped"
