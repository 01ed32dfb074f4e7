#!/usr/bin/env bash
#
# slack.sh: what the bulk I/O settings give and what they leave behind, at
# their defaults against stock PostgreSQL 17 behaviour (all four polar_bulk_*
# settings at 0, set with ALTER SYSTEM and a reload before each run), for
# loads into a table above polar_min_bulk_extend_table_size:
#
#   insert   INSERTS single-row INSERTs from one pgbench client
#            (synchronous_commit off)
#   insert4  the same number from four clients at once, a quarter each,
#            so that they queue on the table's extension lock
#   copy     COPY of COPY_ROWS rows from one session
#   copy4    the same rows COPYed from four sessions at once, a quarter each
#   index    CREATE INDEX on the text column, after the COPY_ROWS rows were
#            COPYed (not timed); PAGES_AFTER_LOAD is then the index's size
#
# Each run starts from a fresh table of BASE_ROWS rows (about 1,230 pages,
# 9.6 MB, loaded with the settings at 0), reset counters, then times the
# load, then a plain VACUUM (which reads the table in bulk at the
# defaults), and prints one line:
#
#   SCENARIO SETTING LOAD_SECONDS VACUUM_SECONDS PAGES_AFTER_LOAD
#   PAGES_AFTER_VACUUM PRE_EXTENSIONS
#
# Usage:
#
#   slack.sh setup                  make and start the cluster, write the
#                                   COPY files (WORK, BIN: below)
#   SETTING=0 slack.sh run SCENARIO one run (SETTING: 0, all four settings
#                                   at 0, or default)
#   slack.sh stop                   stop the cluster
#   slack.sh all [OUTPUT.md]        setup, then ROUNDS pairs of runs per
#                                   scenario, default and 0 alternating,
#                                   timed as whole processes; medians,
#                                   per-pair ratios and every raw line
#
# Any program that times a whole command can time `slack.sh run` as well,
# A B A B, for example /usr/bin/time -f %e.  As root, setup and all run as
# the test user (test/lib.sh); run it as that user (runuser -u pgstrata).
#
# Environment: WORK (build/bench/slack), BIN (build/install/bin: another
# installation, such as an older build, is measured by pointing BIN and
# WORK elsewhere), ROUNDS (5), SCENARIOS ("insert insert4 copy copy4 index"), INSERTS
# (100000), COPY_ROWS (1000000), BASE_ROWS (75000).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
BIN=${BIN:-$TOP/build/install/bin}
WORK=${WORK:-$TOP/build/bench/slack}
ROUNDS=${ROUNDS:-5}
SCENARIOS=${SCENARIOS:-"insert insert4 copy copy4 index"}
INSERTS=${INSERTS:-100000}
COPY_ROWS=${COPY_ROWS:-1000000}
BASE_ROWS=${BASE_ROWS:-75000}
SETTING=${SETTING:-default}
export BIN WORK ROUNDS SCENARIOS INSERTS COPY_ROWS BASE_ROWS

cmd=${1:-}
shift || true

if [ "$(id -u)" = 0 ] && [ "$cmd" != run ]; then
	mkdir -p "$WORK"
	as_test_user "$WORK" "$0" "$cmd" "$@"
	exit
fi

psql() { "$BIN/psql" -X -q -At -h 127.0.0.1 -p "$(cat "$WORK/port")" -d postgres -v ON_ERROR_STOP=1 "$@"; }

# setup: a new cluster in WORK/data, started, with the base rows and the
# COPY files
setup()
{
	"$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$WORK/data"
	mkdir -p "$WORK"
	free_port >"$WORK/port"
	"$BIN/initdb" -D "$WORK/data" -A trust --no-sync >"$WORK/initdb.log"
	cat >>"$WORK/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $(cat "$WORK/port")
unix_socket_directories = ''
shared_buffers = 128MB
max_wal_size = 8GB
checkpoint_timeout = 1h
autovacuum = off
synchronous_commit = off
max_parallel_workers_per_gather = 0
EOF
	"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
	psql <<EOF
CREATE EXTENSION pgstrata;
SET polar_bulk_extend_size = 0;
CREATE TABLE base (id int, v text);
INSERT INTO base SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, $BASE_ROWS) g;
COPY (SELECT g, repeat(md5(g::text), 3) FROM generate_series(1000000, 1000000 + $COPY_ROWS - 1) g)
	TO '$WORK/load.copy';
EOF
	for q in 0 1 2 3; do
		psql -c "COPY (SELECT g, repeat(md5(g::text), 3)
			FROM generate_series(1000000 + $q, 1000000 + $COPY_ROWS - 1, 4) g)
			TO '$WORK/load.copy.$q'"
	done
	echo 'INSERT INTO t VALUES (random(1, 999999999), repeat(md5(random()::text), 3));' >"$WORK/insert.sql"
	psql -c CHECKPOINT
}

# settings: all four polar_bulk_* settings at SETTING (0, or default: their
# defaults), with ALTER SYSTEM and a reload, waited for
settings()
{
	local g extend=$SETTING min=$SETTING
	for g in polar_bulk_read_size polar_bulk_extend_size \
		polar_min_bulk_extend_table_size polar_index_create_bulk_extend_size; do
		if [ "$SETTING" = default ]; then
			echo "ALTER SYSTEM RESET $g;"
		else
			echo "ALTER SYSTEM SET $g = $SETTING;"
		fi
	done | psql >/dev/null
	psql -c 'SELECT pg_reload_conf()' >/dev/null
	[ "$SETTING" = default ] && extend=512 min=1024
	# a new session sees the file once the postmaster has read it again
	for _ in $(seq 100); do
		[ "$(psql -c "SELECT string_agg(setting, ' ' ORDER BY name DESC) FROM pg_settings
			WHERE name IN ('polar_bulk_extend_size', 'polar_min_bulk_extend_table_size')")" = "$min $extend" ] &&
			return
		sleep 0.05
	done
	echo "error: the settings did not reach $SETTING" >&2
	exit 1
}

# run SCENARIO: one timed load and VACUUM at SETTING, one line of figures
run()
{
	local scenario=$1 t0 t1 t2 after vacuumed pre
	settings
	psql >/dev/null <<EOF
SET client_min_messages = warning;
DROP TABLE IF EXISTS t;
SET polar_bulk_extend_size = 0;
CREATE TABLE t (id int, v text);
INSERT INTO t SELECT * FROM base;
VACUUM t;
SELECT pgstrata_bulk_io_reset();
EOF
	[ "$scenario" = index ] && psql -c "COPY t FROM '$WORK/load.copy'"
	t0=$(date +%s.%N)
	case $scenario in
	insert)
		"$BIN/pgbench" -n -h 127.0.0.1 -p "$(cat "$WORK/port")" \
			-c 1 -t "$INSERTS" -f "$WORK/insert.sql" postgres >/dev/null 2>&1
		;;
	insert4)
		"$BIN/pgbench" -n -h 127.0.0.1 -p "$(cat "$WORK/port")" \
			-c 4 -j 4 -t $((INSERTS / 4)) -f "$WORK/insert.sql" postgres >/dev/null 2>&1
		;;
	copy)
		psql -c "COPY t FROM '$WORK/load.copy'"
		;;
	copy4)
		for q in 0 1 2 3; do
			psql -c "COPY t FROM '$WORK/load.copy.$q'" &
		done
		wait
		;;
	index)
		psql -c "CREATE INDEX t_v ON t (v)"
		;;
	*)
		echo "error: unknown scenario $scenario" >&2
		exit 2
		;;
	esac
	t1=$(date +%s.%N)
	if [ "$scenario" = index ]; then
		after=$(psql -c "SELECT pg_relation_size('t_v') / 8192")
	else
		after=$(psql -c "SELECT pg_relation_size('t') / 8192")
	fi
	psql -c "VACUUM t"
	t2=$(date +%s.%N)
	vacuumed=$(psql -c "SELECT pg_relation_size('t') / 8192")
	pre=$(psql -c "SELECT sum(heap_pre_extensions) FROM pgstrata_bulk_io")
	awk -v s="$scenario" -v g="$SETTING" -v a="$t0" -v b="$t1" -v c="$t2" \
		-v p="$after" -v q="$vacuumed" -v e="$pre" \
		'BEGIN { printf "%s %s %.3f %.3f %d %d %d\n", s, g, b - a, c - b, p, q, e }'
}

# median_of: the median of the numbers on standard input, one a line
median_of()
{
	sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# all [OUTPUT]: ROUNDS alternating pairs per scenario, medians and ratios
all()
{
	local out=${1:-/dev/stdout} raw="$WORK/raw.txt" s r g line w0 w1
	setup
	: >"$raw"
	for s in $SCENARIOS; do
		for r in $(seq "$ROUNDS"); do
			for g in default 0; do
				w0=$(date +%s.%N)
				line=$(SETTING=$g "$0" run "$s")
				w1=$(date +%s.%N)
				echo "$line $(awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.3f", b - a }') $r" | tee -a "$raw" >&2
			done
		done
	done
	"$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null
	{
		echo "# polar_bulk_* settings: defaults against all four at 0 (stock 17)"
		echo
		echo "- command: \`ROUNDS=$ROUNDS INSERTS=$INSERTS COPY_ROWS=$COPY_ROWS test/bench/bulkio/slack.sh all\`"
		echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "- machine: $(nproc) CPUs, $(uname -sr); load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
		echo
		echo "| scenario | load s, default | at 0 | load default / 0, median of pairs | min | max | VACUUM s, default | at 0 | whole run default / 0, median of pairs | min | max | pages after load (index: the index), default | at 0 | pages after VACUUM, default | at 0 | pre-extensions |"
		echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
		for s in $SCENARIOS; do
			# the ratio of each pair (same round) in column COL, then their
			# median, min, max
			ratios()
			{
				awk -v s="$s" -v c="$1" '$1 == s {w[$9 "/" $2] = $c}
					END {for (k in w) {split(k, kk, "/"); if (kk[2] == "default" && w[kk[1] "/0"] > 0) printf "%.4f\n", w[k] / w[kk[1] "/0"]}}' "$raw" | sort -n
			}
			med() { awk -v s="$s" -v g="$1" -v c="$2" '$1 == s && $2 == g {print $c}' "$raw" | median_of; }
			lr=$(ratios 3)
			wr=$(ratios 8)
			echo "| $s | $(med default 3) | $(med 0 3) | $(echo "$lr" | median_of) | $(echo "$lr" | head -1) | $(echo "$lr" | tail -1) | $(med default 4) | $(med 0 4) | $(echo "$wr" | median_of) | $(echo "$wr" | head -1) | $(echo "$wr" | tail -1) | $(med default 5) | $(med 0 5) | $(med default 6) | $(med 0 6) | $(awk -v s="$s" '$1 == s && $2 == "default" {printf "%s ", $7}' "$raw") |"
		done
		echo
		echo "Every run: scenario, setting, load seconds, VACUUM seconds, pages after the load, after VACUUM, pre-extensions, whole run seconds, round."
		echo
		echo '```'
		cat "$raw"
		echo '```'
	} >"$out"
}

case $cmd in
setup) setup ;;
run) run "$@" ;;
stop) "$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null ;;
all) all "$@" ;;
*)
	echo "usage: slack.sh setup | run SCENARIO | stop | all [OUTPUT.md]" >&2
	exit 2
	;;
esac
