#!/usr/bin/env bash
#
# slack.sh: what the bulk I/O settings give and what they leave behind, at
# their defaults against stock PostgreSQL 17 behaviour (all four polar_bulk_*
# settings at 0, set with ALTER SYSTEM and a reload before each run).
#
# Loads into a table above polar_min_bulk_extend_table_size:
#
#   insert    INSERTS single-row INSERTs from one pgbench client
#             (synchronous_commit off)
#   insert4   the same number from four clients at once, a quarter each,
#             so that they queue on the table's extension lock
#   insert16  the same from sixteen clients, a sixteenth each
#   copy      COPY of COPY_ROWS rows from one session
#   copy4     the same rows COPYed from four sessions at once, a quarter each
#   index     CREATE INDEX on the text column, after the COPY_ROWS rows were
#             COPYed (not timed); PAGES_AFTER_LOAD is then the index's size
#
# Each load starts from a fresh table of BASE_ROWS rows (about 1,230 pages,
# 9.6 MB, loaded with the settings at 0), reset counters, then times the
# load, then a plain VACUUM (which reads the table in bulk at the
# defaults).
#
# Reads of the table big (READ_ROWS rows, indexes on both columns, made
# once by setup), each after a restart, so that shared buffers are empty
# (the kernel's page cache is not):
#
#   seqscan         SELECT count(*)
#   bitmap          a bitmap heap scan of the middle half of id's range
#                   (exact)
#   bitmap_lossy    the same with work_mem = 64kB (lossy)
#   set_tablespace  ALTER TABLE SET TABLESPACE to a second tablespace
#                   (moved back afterwards, not timed)
#   btvacuum        VACUUM (INDEX_CLEANUP ON) after 1,000 rows were
#                   deleted and inserted again (not timed): the heap pass
#                   reads the few changed pages, B-tree vacuum reads both
#                   indexes whole
#
# One line per run:
#
#   SCENARIO SETTING LOAD_SECONDS VACUUM_SECONDS PAGES_AFTER_LOAD
#   PAGES_AFTER_VACUUM PRE_EXTENSIONS READ_CALLS WRITE_CALLS CPU_SECONDS
#   BULK_READS BULK_READ_BLOCKS
#
# PRE_EXTENSIONS are the heap pre-extensions of the load, for index the
# B-tree build's pre-extensions.
# LOAD_SECONDS is the load or the read statement (the reads: no VACUUM
# after them, VACUUM_SECONDS 0, and the pages are big's).  VACUUM_SECONDS
# is the statement's own time in its session (clock_timestamp(); before
# 2026-11-28 20:49 UTC it was the psql command's, to the millisecond).
# READ_CALLS and WRITE_CALLS are the read and write system calls of the
# backend during that statement (syscr, syscw of /proc/PID/io; a preadv or
# pwritev counts as one) and CPU_SECONDS its CPU time, user and system (/proc/PID/stat),
# for statements run by one session (copy, index, the reads; "-" for the
# others), and BULK_READS and BULK_READ_BLOCKS those of the
# pgstrata_bulk_io counters of all backends during it.  Single-session
# statements are timed in their session (clock_timestamp()), the others
# as the processes that run them.  Parallel workers are off (queries,
# CREATE INDEX, VACUUM's indexes), so that the backend does all the I/O.
#
# Usage:
#
#   slack.sh setup                  make and start the cluster, write the
#                                   COPY files, make big (WORK, BIN: below)
#   SETTING=0 slack.sh run SCENARIO one run (SETTING: 0, all four settings
#                                   at 0, or default)
#   slack.sh stop                   stop the cluster
#   slack.sh all [OUTPUT.md]        setup, then ROUNDS pairs of runs per
#                                   scenario, default and 0 alternating,
#                                   each line also with the whole run's
#                                   seconds and the round; medians,
#                                   per-pair ratios with a distribution-free
#                                   95 % interval of their median, and
#                                   every raw line
#
# Any program that times a whole command can time `slack.sh run` as well,
# A B A B, for example /usr/bin/time -f %e.  As root, setup and all run as
# the test user (test/lib.sh); run it as that user (runuser -u pgstrata).
#
# Environment: WORK (build/bench/slack), BIN (build/install/bin: another
# installation, such as an older build, is measured by pointing BIN and
# WORK elsewhere), ROUNDS (5), SCENARIOS ("insert insert4 insert16 copy
# copy4 index seqscan bitmap bitmap_lossy set_tablespace btvacuum"),
# INSERTS (100000), COPY_ROWS (1000000), BASE_ROWS (75000), READ_ROWS
# (1000000), CONF (lines added to postgresql.conf by setup, such as
# "wal_buffers = 16MB"; none by default), SETTLE (1: a CHECKPOINT and a
# sync before each load, so that no load starts while the kernel writes
# back the one before; 0, the default, as the runs before 2026-11-28
# 18:00 UTC were made), VACUUM_OPTIONS (options of the VACUUM after each
# load, such as "(TRUNCATE false)"; none by default).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
BIN=${BIN:-$TOP/build/install/bin}
WORK=${WORK:-$TOP/build/bench/slack}
ROUNDS=${ROUNDS:-5}
SCENARIOS=${SCENARIOS:-"insert insert4 insert16 copy copy4 index seqscan bitmap bitmap_lossy set_tablespace btvacuum"}
INSERTS=${INSERTS:-100000}
COPY_ROWS=${COPY_ROWS:-1000000}
BASE_ROWS=${BASE_ROWS:-75000}
READ_ROWS=${READ_ROWS:-1000000}
SETTING=${SETTING:-default}
CONF=${CONF:-}
SETTLE=${SETTLE:-0}
VACUUM_OPTIONS=${VACUUM_OPTIONS:-}
export BIN WORK ROUNDS SCENARIOS INSERTS COPY_ROWS BASE_ROWS READ_ROWS CONF SETTLE \
	VACUUM_OPTIONS
READ_SCENARIOS="seqscan bitmap bitmap_lossy set_tablespace btvacuum"

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
max_parallel_maintenance_workers = 0
EOF
	[ -z "$CONF" ] || printf '%s\n' "$CONF" >>"$WORK/data/postgresql.conf"
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
	# the table the read scenarios read, all-visible, with both indexes
	if wants_reads; then
		rm -rf "$WORK/ts2"
		mkdir -p "$WORK/ts2"
		psql <<EOF
SET polar_bulk_extend_size = 0;
CREATE TABLESPACE ts2 LOCATION '$WORK/ts2';
CREATE TABLE big (id int, v text);
INSERT INTO big SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, $READ_ROWS) g;
CREATE INDEX big_id ON big (id);
CREATE INDEX big_v ON big (v);
VACUUM (FREEZE) big;
EOF
	fi
	psql -c CHECKPOINT
}

# wants_reads: whether SCENARIOS names a read scenario
wants_reads()
{
	local s
	for s in $SCENARIOS; do
		case " $READ_SCENARIOS " in *" $s "*) return 0 ;; esac
	done
	return 1
}

# timed SQL: run SQL in one session; prints its seconds, the read and
# write system calls of the backend meanwhile, and the backend's CPU
# seconds (user and system) meanwhile
timed()
{
	psql <<EOF
SELECT pg_read_file('/proc/' || pg_backend_pid() || '/io') AS io0,
	pg_read_file('/proc/' || pg_backend_pid() || '/stat') AS st0 \gset
SELECT clock_timestamp() AS t0 \gset
\o /dev/null
$1;
\o
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) AS secs \gset
SELECT pg_read_file('/proc/' || pg_backend_pid() || '/io') AS io1,
	pg_read_file('/proc/' || pg_backend_pid() || '/stat') AS st1 \gset
SELECT round(:'secs'::numeric, 3) || ' ' ||
	((substring(:'io1' FROM 'syscr: ([0-9]+)'))::bigint -
	 (substring(:'io0' FROM 'syscr: ([0-9]+)'))::bigint) || ' ' ||
	((substring(:'io1' FROM 'syscw: ([0-9]+)'))::bigint -
	 (substring(:'io0' FROM 'syscw: ([0-9]+)'))::bigint) || ' ' ||
	-- utime and stime, the 12th and 13th fields after the command's name
	round((split_part(substring(:'st1' FROM '\) (.*)$'), ' ', 12)::bigint +
		   split_part(substring(:'st1' FROM '\) (.*)$'), ' ', 13)::bigint -
		   split_part(substring(:'st0' FROM '\) (.*)$'), ' ', 12)::bigint -
		   split_part(substring(:'st0' FROM '\) (.*)$'), ' ', 13)::bigint)
		  / $(getconf CLK_TCK)::numeric, 2);
EOF
}

# bulk_counters: the bulk reads and the blocks they read, all backends
bulk_counters()
{
	psql -c "SELECT sum(bulk_reads) || ' ' || sum(bulk_read_blocks) FROM pgstrata_bulk_io"
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

# run SCENARIO: one timed load and VACUUM, or one read, at SETTING, one
# line of figures
run()
{
	local scenario=$1 t0 t1 t2 after vacuumed pre calls=- counters
	settings
	case " $READ_SCENARIOS " in *" $scenario "*) read_run "$scenario"; return ;; esac
	psql >/dev/null <<EOF
SET client_min_messages = warning;
DROP TABLE IF EXISTS t;
SET polar_bulk_extend_size = 0;
CREATE TABLE t (id int, v text);
INSERT INTO t SELECT * FROM base;
VACUUM t;
SELECT pgstrata_bulk_io_reset();
EOF
	[ "$scenario" = index ] && psql -c "COPY t FROM '$WORK/load.copy'" &&
		psql -c "SELECT pgstrata_bulk_io_reset()" >/dev/null
	if [ "$SETTLE" = 1 ]; then
		psql -c CHECKPOINT >/dev/null
		sync
	fi
	t0=$(date +%s.%N)
	case $scenario in
	insert | insert4 | insert16)
		local clients=${scenario#insert}
		clients=${clients:-1}
		"$BIN/pgbench" -n -h 127.0.0.1 -p "$(cat "$WORK/port")" \
			-c "$clients" -j "$clients" -t $((INSERTS / clients)) \
			-f "$WORK/insert.sql" postgres >/dev/null 2>&1
		;;
	copy)
		calls=$(timed "COPY t FROM '$WORK/load.copy'")
		;;
	copy4)
		for q in 0 1 2 3; do
			psql -c "COPY t FROM '$WORK/load.copy.$q'" &
		done
		wait
		;;
	index)
		calls=$(timed "CREATE INDEX t_v ON t (v)")
		;;
	*)
		echo "error: unknown scenario $scenario" >&2
		exit 2
		;;
	esac
	t1=$(date +%s.%N)
	counters=$(bulk_counters)
	if [ "$calls" != - ]; then
		# the statement's own time, then its system calls
		t0=0
		t1=${calls%% *}
		calls=${calls#* }
	else
		calls="- - -"
	fi
	if [ "$scenario" = index ]; then
		after=$(psql -c "SELECT pg_relation_size('t_v') / 8192")
	else
		after=$(psql -c "SELECT pg_relation_size('t') / 8192")
	fi
	# the VACUUM statement's own time, in its session
	t2=$(psql <<EOF
SELECT clock_timestamp() AS t0 \gset
VACUUM $VACUUM_OPTIONS t;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 5);
EOF
)
	vacuumed=$(psql -c "SELECT pg_relation_size('t') / 8192")
	if [ "$scenario" = index ]; then
		pre=$(psql -c "SELECT sum(index_pre_extensions) FROM pgstrata_bulk_io")
	else
		pre=$(psql -c "SELECT sum(heap_pre_extensions) FROM pgstrata_bulk_io")
	fi
	awk -v s="$scenario" -v g="$SETTING" -v a="$t0" -v b="$t1" -v c="$t2" \
		-v p="$after" -v q="$vacuumed" -v e="$pre" -v k="$calls $counters" \
		'BEGIN { printf "%s %s %.3f %.5f %d %d %d %s\n", s, g, b - a, c, p, q, e, k }'
}

# read_run SCENARIO: one read of big after a restart, at SETTING
read_run()
{
	local scenario=$1 sql calls counters pages
	local bitmap="SET enable_seqscan = off; SET enable_indexscan = off;
SELECT count(*), sum(length(v)) FROM big WHERE id BETWEEN $((READ_ROWS / 4)) AND $((3 * READ_ROWS / 4))"

	case $scenario in
	seqscan) sql="SELECT count(*) FROM big" ;;
	bitmap) sql=$bitmap ;;
	bitmap_lossy) sql="SET work_mem = '64kB'; $bitmap" ;;
	set_tablespace) sql="ALTER TABLE big SET TABLESPACE ts2" ;;
	btvacuum)
		# 1,000 dead rows, so that VACUUM vacuums both indexes
		psql -c "DELETE FROM big WHERE id BETWEEN 400001 AND 401000" \
			-c "INSERT INTO big SELECT g, repeat(md5(g::text), 3)
				FROM generate_series(400001, 401000) g"
		sql="VACUUM (INDEX_CLEANUP ON) big"
		;;
	esac
	"$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null
	"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
	psql -c "SELECT pgstrata_bulk_io_reset()" >/dev/null
	calls=$(timed "$sql")
	counters=$(bulk_counters)
	pages=$(psql -c "SELECT pg_relation_size('big') / 8192")
	[ "$scenario" = set_tablespace ] && psql -c "ALTER TABLE big SET TABLESPACE pg_default"
	echo "$scenario $SETTING ${calls%% *} 0.000 $pages $pages 0 ${calls#* } $counters"
}

# median_of: the median of the numbers on standard input, one a line
median_of()
{
	sort -n | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# median_interval: the distribution-free 95 % interval of the median of the
# numbers on standard input, one a line, sorted: from the k-th smallest to
# the k-th largest, k the largest with P(Binomial(n, 1/2) < k) <= 0.025
# ("-" for fewer than 6 numbers)
median_interval()
{
	awk '{v[NR] = $1}
		END {
			n = NR; p = 0; c = 1; k = 0
			for (i = 0; i < n; i++) {
				p += c / 2 ^ n
				if (p > 0.025) break
				k = i + 1; c = c * (n - i) / (i + 1)
			}
			if (k == 0) print "-"; else printf "%.3f-%.3f\n", v[k], v[n - k + 1]
		}'
}

# all [OUTPUT]: ROUNDS alternating pairs per scenario, medians and ratios
all()
{
	local out=${1:-/dev/stdout} raw="$WORK/raw.txt" loads="$WORK/loadavg.txt" s r g line w0 w1
	local started
	started=$(date -u '+%Y-%m-%d %H:%M UTC')
	setup
	: >"$raw"
	: >"$loads"
	for s in $SCENARIOS; do
		for r in $(seq "$ROUNDS"); do
			for g in default 0; do
				w0=$(date +%s.%N)
				line=$(SETTING=$g "$0" run "$s")
				w1=$(date +%s.%N)
				cut -d' ' -f1 /proc/loadavg >>"$loads"
				echo "$line $(awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.3f", b - a }') $r" | tee -a "$raw" >&2
			done
		done
	done
	"$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null
	{
		echo "# polar_bulk_* settings: defaults against all four at 0 (stock 17)"
		echo
		echo "- command: \`ROUNDS=$ROUNDS SCENARIOS=\"$SCENARIOS\" INSERTS=$INSERTS COPY_ROWS=$COPY_ROWS READ_ROWS=$READ_ROWS${CONF:+ CONF=\"$CONF\"} SETTLE=$SETTLE${VACUUM_OPTIONS:+ VACUUM_OPTIONS=\"$VACUUM_OPTIONS\"} test/bench/bulkio/slack.sh all\`"
		echo "- date: $started to $(date -u '+%H:%M UTC')"
		echo "- machine: $(nproc) CPUs, $(uname -sr); load average (1 min) after each run: median $(median_of <"$loads"), $(sort -n "$loads" | head -1) to $(sort -n "$loads" | tail -1)"
		echo
		echo "Time: the load, or the read statement, default / 0 per pair (the same round), the median of those ratios, its 95 % interval (distribution-free) and the range; the whole run (set-up, load, VACUUM, sizes; reads: the restart too)."
		echo
		echo "| scenario | pairs | s, default (median) | s, at 0 | default / 0, median of pairs | 95 % interval | min | max | backend CPU default / 0, median of pairs | 95 % interval | VACUUM s, default | at 0 | VACUUM default / 0, median of pairs | 95 % interval | whole run default / 0, median of pairs |"
		echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
		for s in $SCENARIOS; do
			# the ratio of each pair (same round) in column COL, sorted
			ratios()
			{
				awk -v s="$s" -v c="$1" '$1 == s {w[$14 "/" $2] = $c}
					END {for (k in w) {split(k, kk, "/"); if (kk[2] == "default" && w[kk[1] "/0"] > 0) printf "%.4f\n", w[k] / w[kk[1] "/0"]}}' "$raw" | sort -n
			}
			med() { awk -v s="$s" -v g="$1" -v c="$2" '$1 == s && $2 == g && $c != "-" {print $c}' "$raw" | median_of; }
			lr=$(ratios 3)
			wr=$(ratios 13)
			cr=$(ratios 10)
			vr=$(ratios 4)
			echo "| $s | $(echo "$lr" | wc -l) | $(med default 3) | $(med 0 3) | $(echo "$lr" | median_of) | $(echo "$lr" | median_interval) | $(echo "$lr" | head -1) | $(echo "$lr" | tail -1) | $(echo "$cr" | median_of) | $(echo "$cr" | median_interval) | $(med default 4) | $(med 0 4) | $(echo "$vr" | median_of) | $(echo "$vr" | median_interval) | $(echo "$wr" | median_of) |"
		done
		echo
		echo "I/O and sizes (medians): the backend's read and write system calls during the statement (one-session statements only), the bulk reads of all backends, pages after the load (index: the index; reads: big) and after VACUUM, pre-extensions (index: the B-tree build's)."
		echo
		echo "| scenario | read calls, default | at 0 | write calls, default | at 0 | bulk reads, default | blocks they read | pages after load, default | at 0 | pages after VACUUM, default | at 0 | pre-extensions per run, default |"
		echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
		for s in $SCENARIOS; do
			echo "| $s | $(med default 8) | $(med 0 8) | $(med default 9) | $(med 0 9) | $(med default 11) | $(med default 12) | $(med default 5) | $(med 0 5) | $(med default 6) | $(med 0 6) | $(awk -v s="$s" '$1 == s && $2 == "default" {printf "%s ", $7}' "$raw") |"
		done
		echo
		echo "Every run: scenario, setting, load (or read) seconds, VACUUM seconds, pages after the load, after VACUUM, pre-extensions, read calls, write calls, backend CPU seconds, bulk reads, bulk read blocks, whole run seconds, round."
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
