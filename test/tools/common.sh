# common.sh: helpers of make check-tools (sourced by the scripts of
# test/tools, not run).
#
# The scripts expect TOP (the checkout), TOOLS_DIR (build/tools) and
# PG_BIN (the bin directory of the installation copy the tools run with).

# What the servers run as: PostgreSQL refuses root.
TEST_USER=${PGSTRATA_TEST_USER:-pgstrata}

say() { echo "--- $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# as_user CMD...: run CMD as the test user when we are root, else as is.
as_user()
{
	if [ "$(id -u)" = 0 ]; then
		runuser -u "$TEST_USER" -- env PATH="$PG_BIN:$PATH" "$@"
	else
		env PATH="$PG_BIN:$PATH" "$@"
	fi
}

# psql_at PORT DB SQL: one query, unaligned, tuples only, stop on error
psql_at()
{
	as_user "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h /tmp -p "$1" -U postgres -d "$2" -At -c "$3"
}

# init_cluster DATADIR PORT [EXTRA CONF LINES]: initdb (data checksums are
# pgstrata's default) and a configuration for a test server on PORT.
init_cluster()
{
	local data=$1 port=$2
	shift 2
	as_user "$PG_BIN/initdb" -D "$data" -A trust -U postgres --data-checksums >/dev/null
	{
		echo "port = $port"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '/tmp'"
		echo "shared_buffers = 128MB"
		echo "wal_log_hints = on"
		echo "max_wal_size = 1GB"
		echo "logging_collector = off"
		for line in "$@"; do echo "$line"; done
	} | as_user tee -a "$data/postgresql.conf" >/dev/null
}

start_cluster()
{
	as_user "$PG_BIN/pg_ctl" -D "$1" -l "$1-server.log" -w -t 120 start >/dev/null ||
		{ tail -20 "$1-server.log" >&2; return 1; }
}

stop_cluster()
{
	[ -f "$1/postmaster.pid" ] || return 0
	as_user "$PG_BIN/pg_ctl" -D "$1" -m fast -w -t 120 stop >/dev/null
}

# sizes DIR: "apparent allocated" bytes of everything under DIR
sizes()
{
	local a k
	a=$(du -s --apparent-size -B1 "$1" | cut -f1)
	k=$(du -s -B1 "$1" | cut -f1)
	echo "$a $k"
}

# human BYTES: bytes in MB with one decimal
human()
{
	awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1048576 }'
}

# now_s: seconds since the epoch, for timings
now_s() { date +%s; }

# psql_run PORT DB SQL: a script of several statements, each sent on its
# own (as psql -f does), stop on error
psql_run()
{
	printf '%s\n' "$3" | as_user "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h /tmp -p "$1" -U postgres -d "$2" -At -f -
}
