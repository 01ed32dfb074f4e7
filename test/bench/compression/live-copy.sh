#!/usr/bin/env bash
#
# live-copy.sh: whether copies of a cluster taken while an update load runs
# restore to the same rows, in a loop of runs, for each installation given.
#
#   [INSTALLS="BINDIR ..."] [RUNS=10] [RATES="4M 2M 8M 0"] \
#   [METHODS="basebackup lowlevel"] [LOAD_WARMUP=3] [CHECKPOINT_EVERY=2] \
#   [ROWS=100000] [DEADLINE=epoch seconds] [WORK=/var/tmp/livecopy] \
#       test/bench/compression/live-copy.sh [OUTPUT.md]
#
# A copy of a running cluster can hold two map entries of a compressed
# segment that name the same units (README.pcs, "Recovery from a copy of a
# running cluster"); test/pcs/030 makes such a copy on purpose.  This script
# looks for the race the way it happens: each run initdbs a primary (data
# checksums, wal_log_hints, checkpoint_timeout = 30s, shared_buffers = 16MB)
# with an in-place compressed tablespace cts, a table c in cts (fillfactor
# 10, so that its ROWS rows of compressible text take many blocks and their
# map entries a long stretch of the map) and its plain twin p, same rows,
# each with a primary key in its own tablespace.  Two pgbench clients update,
# in one transaction, a random row of c with a payload of random length
# (0-700 bytes) and compressibility (a random share of it random hex, the
# rest one letter), and copy the value into p's row, so that compressed
# images grow and shrink and pages move; a loop issues CHECKPOINT every
# CHECKPOINT_EVERY seconds, so that fsyncs make freed units reusable while
# the copy runs.  After LOAD_WARMUP seconds the run copies the primary:
#
#   basebackup  pg_basebackup -D COPY -X stream -c fast --max-rate=RATE
#               (RATE 0: not throttled)
#   lowlevel    pg_backup_start() in a psql session kept open, a copy of the
#               data directory (RATE 0: cp -a --sparse=always; otherwise a
#               Perl copy that reads each file in 32 kB pieces at RATE bytes
#               per second, keeps zero 4 kB blocks sparse and leaves out
#               pgsql_tmp, postmaster.pid/.opts and pg_wal), pg_backup_stop(),
#               backup_label written from its labelfile, then the primary's
#               pg_wal copied over (a physical replication slot made
#               before pg_backup_start() keeps it; pg_replslot is emptied
#               in the copy)
#
# and then stops the load and the primary.  The copy starts on another port
# (recovery from the copy), is stopped cleanly and started again, so that
# every page is read from disk rather than from buffers redo filled, and is
# checked: before the copy starts, pairs of map entries of its compressed
# segments that name the same units (PgStrata::PcsFile::overlaps(): the
# race happened in this copy; recorded); once it runs, rows of c differing
# from p's (c FULL JOIN p, must be 0), row counts of c and p (ROWS each),
# a full scan of both, verify_heapam() of c and p and bt_index_check(...,
# true) of both primary keys (must find nothing), pg_checksums --check of
# the stopped copy, and the copy's log: any ERROR or PANIC line fails the
# run; whether the two lines of the recovery from a copy ("compressed pages
# are written out of place until recovery from a copy is durable", "writes
# of compressed pages go in place again") appear is recorded.
#
# RUNS rounds; each round runs every method, and within a method every
# installation in turn (A B A B ...), with RATES taken in turn per round.
# No round starts after DEADLINE.  Runs as the user pgstrata when started by
# root; one server pair at a time, under WORK (its run-* removed first).
# The data directories and logs of a failed run are kept in WORK/run-N; a
# passed run's are removed but for its logs.  INSTALLS (default
# build/install/bin) must not change while the loop runs: copy an
# installation others rebuild (cp -a build/install DIR) and name DIR/bin.
# Writes markdown to OUTPUT.md (default: stdout): one line per run, then
# pass and fail counts per installation and method.  Exits 1 if any run
# failed.

set -uo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
WORK=${WORK:-/var/tmp/livecopy}
INSTALLS=${INSTALLS:-$TOP/build/install/bin}
RUNS=${RUNS:-10}
RATES=${RATES:-4M 2M 8M 0}
METHODS=${METHODS:-basebackup lowlevel}
LOAD_WARMUP=${LOAD_WARMUP:-3}
CHECKPOINT_EVERY=${CHECKPOINT_EVERY:-2}
ROWS=${ROWS:-100000}
DEADLINE=${DEADLINE:-0}
OUT=${1:-/dev/stdout}
USER_AS=pgstrata

if [ "$(id -u)" = 0 ]; then
	mkdir -p "$WORK"
	rm -rf "${WORK:?}"/run-* "$WORK/results.md"
	chown "$USER_AS:" "$WORK"
	rc=0
	runuser -u "$USER_AS" -- env HOME="$WORK" WORK="$WORK" INSTALLS="$INSTALLS" \
		RUNS="$RUNS" RATES="$RATES" METHODS="$METHODS" LOAD_WARMUP="$LOAD_WARMUP" \
		CHECKPOINT_EVERY="$CHECKPOINT_EVERY" ROWS="$ROWS" DEADLINE="$DEADLINE" \
		"$0" "$WORK/results.md" || rc=$?
	cat "$WORK/results.md" >"$OUT"
	exit $rc
fi

mkdir -p "$WORK"
read -r -a installs <<<"$INSTALLS"
read -r -a rates <<<"$RATES"
read -r -a methods <<<"$METHODS"

free_port()
{
	perl -MIO::Socket::INET -e \
		'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0)->sockport'
}

# throttled_copy RATE SRC DST: copy a data directory file by file, each in
# 32 kB pieces at RATE bytes per second, zero 4 kB blocks left sparse
throttled_copy()
{
	perl -e '
use strict; use warnings;
use File::Find; use Time::HiRes qw(time sleep);
my ($rate, $src, $dst) = @ARGV;
my $start = time; my $sent = 0;
mkdir $dst, 0700;
find({ no_chdir => 1, wanted => sub {
	my $rel = substr($File::Find::name, length($src));
	$rel =~ s{^/}{};
	return if $rel eq "";
	if ($rel =~ m{(^|/)pgsql_tmp[^/]*/} || $rel =~ m{^pg_wal/.}
		|| $rel eq "postmaster.pid" || $rel eq "postmaster.opts") { return; }
	if (-d $File::Find::name) { mkdir "$dst/$rel", 0700; return; }
	open(my $in, "<:raw", $File::Find::name) or return;	# gone: skip it
	open(my $out, ">:raw", "$dst/$rel") or die "$dst/$rel: $!";
	my ($buf, $size) = ("", 0);
	while (1) {
		my $n = sysread($in, $buf, 32768);
		die "$rel: $!" unless defined $n;
		last if $n == 0;
		for (my $o = 0; $o < $n; $o += 4096) {
			my $piece = substr($buf, $o, 4096);
			if ($piece =~ /^\0*$/) { sysseek($out, length($piece), 1); }
			else { syswrite($out, $piece) == length($piece) or die "$rel: $!"; }
		}
		$size += $n; $sent += $n;
		my $ahead = $sent / $rate - (time - $start);
		sleep($ahead) if $ahead > 0;
	}
	truncate($out, $size) or die "$rel: $!";
	close $out; close $in;
}}, $src);
' "$1" "$2" "$3"
}

# rate_bytes RATE: pg_basebackup's rate (kB, or with k or M) in bytes
rate_bytes()
{
	case $1 in
	*M) echo $((${1%M} * 1024 * 1024)) ;;
	*k) echo $((${1%k} * 1024)) ;;
	*) echo $(($1 * 1024)) ;;
	esac
}

cat >"$WORK/update.sql" <<'SQL'
\set id random(1, :rows)
\set len random(0, 700)
\set rnd random(0, :len)
BEGIN;
WITH u AS (
	UPDATE c SET v = left((SELECT string_agg(md5(random()::text), '') FROM generate_series(0, :rnd::int / 32)), :rnd::int)
		|| repeat(chr(97 + :id::int % 26), :len::int - :rnd::int)
	WHERE id = :id::int RETURNING id, v)
UPDATE p SET v = u.v FROM u WHERE p.id = u.id;
COMMIT;
SQL

# cp_vanishing ARGS...: cp -a ARGS, its messages to the run's backup.log;
# files that vanish while it copies (WAL segments recycled, xlogtemp.N) are
# not a failure, as they are not for pg_basebackup
cp_vanishing()
{
	local rc=0
	cp -a "$@" 2>"$d/cp.err" || rc=$?
	cat "$d/cp.err" >>"$d/backup.log"
	if [ $rc != 0 ] && ! grep -q -v 'No such file or directory' "$d/cp.err"; then
		rc=0
	fi
	return $rc
}

declare -A pass fail
results=()
any_fail=0

# one_run N BIN METHOD RATE: one run; appends a line to results
one_run()
{
	local n=$1 bin=$2 method=$3 rate=$4
	local d=$WORK/run-$n
	local prim=$d/primary copy=$d/copy
	local port1 port2 psql1 psql2 t0 t1 t2 bk_s bk_rc tx ok=1 notes=""
	local pgb_pid ckpt_pid

	rm -rf "$d"
	mkdir -p "$d"
	port1=$(free_port)
	port2=$(free_port)
	psql1=("$bin/psql" -X -q -At -h 127.0.0.1 -p "$port1" -d postgres -v ON_ERROR_STOP=1)
	psql2=("$bin/psql" -X -q -At -h 127.0.0.1 -p "$port2" -d postgres -v ON_ERROR_STOP=1)
	t0=$(date +%s.%N)

	"$bin/initdb" -D "$prim" -A trust -k --no-sync >"$d/initdb.log" 2>&1 ||
		{ notes="initdb failed"; ok=0; }
	cat >>"$prim/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port1
unix_socket_directories = ''
allow_in_place_tablespaces = on
wal_log_hints = on
checkpoint_timeout = 30s
shared_buffers = 16MB
wal_keep_size = 4GB
max_wal_size = 4GB
synchronous_commit = off
log_checkpoints = on
CONF
	"$bin/pg_ctl" -D "$prim" -l "$d/primary.log" -w -t 120 start >/dev/null ||
		{ notes="primary did not start"; ok=0; }
	"${psql1[@]}" >"$d/setup.log" 2>&1 <<SQL || { notes="setup failed"; ok=0; }
CREATE TABLESPACE cts LOCATION '' WITH (compression = 'zstd');
CREATE TABLE c (id int PRIMARY KEY USING INDEX TABLESPACE cts, v text) WITH (fillfactor = 10) TABLESPACE cts;
CREATE TABLE p (id int PRIMARY KEY, v text);
INSERT INTO c SELECT g, 'row ' || g || ' ' || repeat('x', 50) FROM generate_series(1, $ROWS) g;
INSERT INTO p SELECT * FROM c;
VACUUM ANALYZE c, p;
CHECKPOINT;
SQL
	if [ $ok = 0 ]; then
		"$bin/pg_ctl" -D "$prim" -m immediate -w stop >/dev/null 2>&1
		fail["$bin $method"]=$(( ${fail["$bin $method"]:-0} + 1 ))
		any_fail=1
		results+=("| $n | $bin | $method | $rate | - | - | - | - | - | - | - | - | - | - | - | - | - | **FAIL** $notes |")
		echo "${results[-1]}" >&2
		return
	fi

	# the load, and the checkpoints
	"$bin/pgbench" -n -h 127.0.0.1 -p "$port1" -c 2 -j 2 -T 600 -M prepared \
		-D rows="$ROWS" -f "$WORK/update.sql" postgres >"$d/pgbench.log" 2>&1 &
	pgb_pid=$!
	(
		while sleep "$CHECKPOINT_EVERY"; do
			"${psql1[@]}" -c CHECKPOINT >/dev/null 2>&1
		done
	) &
	ckpt_pid=$!
	sleep "$LOAD_WARMUP"
	local tx0 tx1
	tx0=$("${psql1[@]}" -c "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")

	t1=$(date +%s.%N)
	bk_rc=0
	if [ "$method" = basebackup ]; then
		local maxrate=()
		[ "$rate" != 0 ] && maxrate=(--max-rate="$rate")
		"$bin/pg_basebackup" -h 127.0.0.1 -p "$port1" -D "$copy" -X stream -c fast \
			"${maxrate[@]}" >"$d/backup.log" 2>&1 || bk_rc=$?
	else
		# a slot holds the WAL from here on, whatever wal_keep_size: a
		# long copy under this load writes more than 4 GB of it
		"${psql1[@]}" -c "SELECT pg_create_physical_replication_slot('live_copy', true)" \
			>/dev/null 2>>"$d/backup.log" || bk_rc=$((bk_rc + 100000))
		# a session kept open across the copy
		mkfifo "$d/session.in"
		"$bin/psql" -X -q -At -h 127.0.0.1 -p "$port1" -d postgres -v ON_ERROR_STOP=1 \
			<"$d/session.in" >"$d/backup.log" 2>&1 &
		local sess_pid=$!
		exec 3<>"$d/session.in"
		echo "SET client_min_messages = warning;" >&3
		echo "SELECT pg_backup_start('live-copy run $n', true);" >&3
		echo "\\! touch $d/started" >&3
		local waited=0
		while [ ! -e "$d/started" ] && [ $waited -lt 600 ] && kill -0 "$sess_pid" 2>/dev/null; do
			sleep 0.1
			waited=$((waited + 1))
		done
		if [ "$rate" = 0 ]; then
			cp_vanishing --sparse=always "$prim" "$copy" || bk_rc=$?
			rm -rf "${copy:?}/pg_wal" "$copy/postmaster.pid" "$copy/postmaster.opts"
		else
			throttled_copy "$(rate_bytes "$rate")" "$prim" "$copy" 2>>"$d/backup.log" || bk_rc=$?
		fi
		echo "\\o $d/backup_label" >&3
		echo "SELECT labelfile FROM pg_backup_stop(true);" >&3
		echo "\\o" >&3
		echo "\\q" >&3
		exec 3>&-
		wait "$sess_pid" || bk_rc=$((bk_rc + 100))
		cp "$d/backup_label" "$copy/backup_label" || bk_rc=$((bk_rc + 1000))
		rm -rf "${copy:?}/pg_wal" "$copy"/pg_replslot/*
		cp_vanishing "$prim/pg_wal" "$copy/pg_wal" || bk_rc=$((bk_rc + 10000))
	fi
	t2=$(date +%s.%N)
	local copy_mb shared
	copy_mb=$(du -sm --exclude=pg_wal "$copy" 2>/dev/null | cut -f1)
	# pairs of map entries of the copy that name the same units (the race)
	shared=$(perl -I"$TOP/test" -MPgStrata::PcsFile -e '
my $files = PgStrata::PcsFile::compressed_files($ARGV[0]);
my $n = 0;
for my $f (sort keys %$files) {
	my $o = PgStrata::PcsFile::overlaps("$ARGV[0]/$f");
	next if $o eq "";
	my @pairs = split / /, $o;
	$n += @pairs;
	print STDERR "$f: $o\n";
}
print "$n\n";' "$copy" 2>>"$d/shared.log" || echo "?")
	tx1=$("${psql1[@]}" -c "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")
	tx=$((tx1 - tx0))
	bk_s=$(echo "$t2 - $t1" | bc)
	kill "$ckpt_pid" 2>/dev/null
	wait "$ckpt_pid" 2>/dev/null
	kill "$pgb_pid" 2>/dev/null
	wait "$pgb_pid" 2>/dev/null
	"$bin/pg_ctl" -D "$prim" -m fast -w -t 120 stop >/dev/null 2>&1
	[ $bk_rc = 0 ] || { notes="$notes copy exited $bk_rc;"; ok=0; }

	# the copy: recovery, a clean stop, a start that reads from disk
	local started=0 diff="-" cnt_c="-" cnt_p="-" scan="-" vh_c="-" vh_p="-" bt="-" cks="-"
	echo "port = $port2" >>"$copy/postgresql.conf"
	if "$bin/pg_ctl" -D "$copy" -l "$d/copy.log" -w -t 300 start >/dev/null 2>&1 &&
		"$bin/pg_ctl" -D "$copy" -m fast -w -t 300 stop >/dev/null 2>&1 &&
		"$bin/pg_ctl" -D "$copy" -l "$d/copy.log" -w -t 300 start >/dev/null 2>&1; then
		started=1
		q() { "${psql2[@]}" -c "$1" 2>>"$d/checks.log" || echo "error"; }
		diff=$(q "SELECT count(*) FROM c FULL JOIN p USING (id) WHERE c.v IS DISTINCT FROM p.v")
		cnt_c=$(q "SELECT count(*) FROM c")
		cnt_p=$(q "SELECT count(*) FROM p")
		scan=$(q "SET enable_indexscan = off; SET enable_bitmapscan = off; SELECT (SELECT sum(length(v)) FROM c) = (SELECT sum(length(v)) FROM p)")
		q "CREATE EXTENSION amcheck" >/dev/null
		vh_c=$(q "SELECT count(*) FROM verify_heapam('c')")
		vh_p=$(q "SELECT count(*) FROM verify_heapam('p')")
		bt=$(q "SELECT bt_index_check('c_pkey', true)::text || bt_index_check('p_pkey', true)::text")
		"${psql2[@]}" -c "SELECT * FROM verify_heapam('c') LIMIT 20" >>"$d/checks.log" 2>&1
		"$bin/pg_ctl" -D "$copy" -m fast -w -t 300 stop >/dev/null 2>&1 || notes="$notes copy did not stop;"
		if "$bin/pg_checksums" --check -D "$copy" >"$d/checksums.log" 2>&1; then cks=ok; else cks=failed; fi
	else
		notes="$notes copy did not start or stop;"
		"$bin/pg_ctl" -D "$copy" -m immediate -w stop >/dev/null 2>&1
	fi
	local out_of_place=no in_place=no errs
	grep -q 'compressed pages are written out of place until recovery from a copy is durable' "$d/copy.log" 2>/dev/null && out_of_place=yes
	grep -q 'writes of compressed pages go in place again' "$d/copy.log" 2>/dev/null && in_place=yes
	errs=$(grep -E -c 'ERROR:|PANIC:|invalid compressed page' "$d/copy.log" 2>/dev/null)
	[ "$started" = 1 ] || ok=0
	[ "$diff" = 0 ] && [ "$cnt_c" = "$ROWS" ] && [ "$cnt_p" = "$ROWS" ] && [ "$scan" = t ] &&
		[ "$vh_c" = 0 ] && [ "$vh_p" = 0 ] && [ "$bt" = "" ] && [ "$cks" = ok ] && [ "${errs:-0}" = 0 ] || ok=0
	if [ "$errs" != 0 ]; then
		notes="$notes $(grep -E -m 2 'ERROR:|PANIC:|invalid compressed page' "$d/copy.log" | sed 's/|/\\|/g' | tr '\n' ' ')"
	fi
	local key="$bin $method" result
	if [ $ok = 1 ]; then
		result=pass
		pass[$key]=$(( ${pass[$key]:-0} + 1 ))
		rm -rf "${prim:?}" "${copy:?}"
	else
		result=FAIL
		fail[$key]=$(( ${fail[$key]:-0} + 1 ))
		any_fail=1
	fi
	local total
	total=$(echo "$(date +%s.%N) - $t0" | bc)
	results+=("| $n | $bin | $method | $rate | $(printf %.1f "$bk_s") | ${copy_mb:-?} | $tx | $shared | $diff | $cnt_c / $cnt_p | $scan | $vh_c / $vh_p | ${bt:-clean} | $cks | $out_of_place / $in_place | ${errs:-0} | $(printf %.0f "$total") | **$result** $notes |")
	echo "${results[-1]}" >&2
}

start_time=$(date -u '+%Y-%m-%d %H:%M UTC')
n=0
rounds=0
for ((r = 0; r < RUNS; r++)); do
	if [ "$DEADLINE" != 0 ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then
		break
	fi
	rate=${rates[$((r % ${#rates[@]}))]}
	for method in "${methods[@]}"; do
		for bin in "${installs[@]}"; do
			n=$((n + 1))
			one_run "$n" "$bin" "$method" "$rate"
		done
	done
	rounds=$((r + 1))
done

{
	echo "# Copies taken under an update load, restored and checked, in a loop"
	echo
	echo "\`INSTALLS=\"$INSTALLS\" RUNS=$RUNS RATES=\"$RATES\" METHODS=\"$METHODS\" LOAD_WARMUP=$LOAD_WARMUP CHECKPOINT_EVERY=$CHECKPOINT_EVERY ROWS=$ROWS test/bench/compression/live-copy.sh\`,"
	echo "$start_time to $(date -u '+%H:%M UTC'), $(nproc) CPUs, $(uname -sr); $rounds rounds, $n runs"
	echo
	echo "Columns: the copy's rate (0: not throttled), its seconds, its size on disk without pg_wal (MB), transactions committed while it ran, pairs of map entries of the copy (before it started) naming the same units (PgStrata::PcsFile::overlaps, the race), rows of c differing from p, count(*) of c / p, full scans agree, verify_heapam() rows of c / p, bt_index_check() of both keys, pg_checksums --check of the stopped copy, the two log lines (out of place / in place again), ERROR/PANIC lines in the copy's log, seconds of the whole run."
	echo
	echo "| run | installation | method | rate | copy s | copy MB | tx during copy | shared-unit pairs in copy | c <> p | rows c / p | scans agree | verify_heapam c / p | bt_index_check | pg_checksums | log lines | errors | run s | result |"
	echo "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- | --- | --- | ---: | ---: | --- |"
	printf '%s\n' "${results[@]}"
	echo
	echo "| installation | method | passed | failed |"
	echo "| --- | --- | ---: | ---: |"
	for method in "${methods[@]}"; do
		for bin in "${installs[@]}"; do
			echo "| $bin | $method | ${pass[$bin $method]:-0} | ${fail[$bin $method]:-0} |"
		done
	done
} >"$OUT"
exit $any_fail
